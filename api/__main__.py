from api.cli.commands import main

main()
