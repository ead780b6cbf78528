"""The pytest options that keep a guard session to the guards, wherever it starts.

pytest looks for its settings (pytest.ini, pyproject.toml, setup.cfg, tox.ini) in the folders around the tests
it is given and loads the conftest.py files above them: a guard run started inside a vLLM checkout, or with its
work directory or virtualenv there, would read the checkout's `addopts` and import its `tests/conftest.py`.
"""

from __future__ import annotations

import os
from pathlib import Path


def isolated(folder: str | Path) -> list[str]:
    """Options for a session rooted at `folder`: no settings file (`-c` the null device, pytest's way of
    asking for none, on pytest 8 and 9), `folder` as the rootdir, and no conftest.py above it."""
    return ["-c", os.devnull, f"--rootdir={folder}", f"--confcutdir={folder}"]
