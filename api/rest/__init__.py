"""The HTTP API's routes, their dependencies and response models (assembled by `api.app`)."""
