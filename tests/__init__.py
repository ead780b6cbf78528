"""The project's own tests, a package: a test module imports the helper modules as `tests.<module>`."""
