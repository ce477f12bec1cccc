"""The test tree mirrors the source tree: `tests/<package>/<sub>/` exists only where
`<package>/<sub>/` does, so a test for `pipeline/alerts/` is found in `tests/pipeline/alerts/`."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
# Folders that test the product as a whole rather than one package: the browser (e2e), the
# DuckLake cluster (lake), and the recorded answers they replay (fixtures).
WHOLE_PRODUCT = {"e2e", "lake", "fixtures", "artifacts", "__pycache__"}


def _test_folders() -> list[Path]:
    return sorted(
        path.relative_to(TESTS)
        for path in TESTS.rglob("*")
        if path.is_dir()
        and not any(
            part in WHOLE_PRODUCT or part.startswith(".") for part in path.relative_to(TESTS).parts
        )
    )


def test_every_test_folder_mirrors_a_source_package() -> None:
    strays = [
        str(folder) for folder in _test_folders() if not (ROOT / folder / "__init__.py").exists()
    ]
    assert strays == [], f"test folders with no source package of that name: {strays}"


def test_no_test_module_names_its_package_again() -> None:
    # tests/pipeline/alerts/test_rules.py, not tests/pipeline/test_alerts_rules.py
    misplaced = [
        str(path.relative_to(TESTS))
        for path in TESTS.rglob("test_*.py")
        if (
            ROOT / path.relative_to(TESTS).parent / path.stem.removeprefix("test_").split("_")[0]
        ).is_dir()
        and path.stem.removeprefix("test_").split("_")[0] != path.parent.name
        and "_" in path.stem.removeprefix("test_")
    ]
    assert misplaced == [], f"move these into the package folder they name: {misplaced}"


OUTSIDE = re.compile(r"(?<![\w.-])shared/")
"""A path into the research folder beside the repository (`shared/reference/...`,
`../shared/...`), which a clone does not have; its notes live in docs/pages/notes/."""
SOURCE_FOLDERS = ("api", "pipeline", "scrapers", "warehouse", "tests", "bench")


def test_no_source_file_cites_a_path_outside_the_repository() -> None:
    cited = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in SOURCE_FOLDERS
        for path in sorted((ROOT / folder).rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts and path != Path(__file__)
        for number, line in enumerate(
            path.read_text(encoding="utf-8", errors="replace").splitlines(), 1
        )
        if OUTSIDE.search(line)
    ]
    assert cited == [], (
        "these lines cite shared/..., which a clone does not have: cite the copy under "
        f"docs/pages/notes/ (or tests/fixtures/) instead: {cited}"
    )
