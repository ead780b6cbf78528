"""Where things are in the checkout, for tests in any folder under tests/."""

from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent  # the checkout
DATA = TESTS / "data"
SCHEMAS = TESTS / "schemas"


def _package_folders() -> dict[str, str]:
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    lines = setup["options"]["package_dir"].strip().splitlines()
    return {line.split("=")[0].strip(): line.split("=")[1].strip() for line in lines}


PACKAGE_FOLDERS = _package_folders()  # warnonce_guard.<folder> -> <folder> (setup.cfg's package_dir)
# For a test's pip: modules are not compiled at install (a few seconds an install; Python compiles those it imports).
QUICK_PIP = {"PIP_COMPILE": "0"}


def fresh_venv(folder: Path) -> Path:
    """A new virtual environment at `folder`, with pip and setuptools as Python 3.11's `venv` seeds them; its `bin`.
    virtualenv makes it from the wheels it bundles in under a second, where `venv.EnvBuilder(with_pip=True)` takes
    six (ensurepip installs and compiles pip)."""
    make = [sys.executable, "-m", "virtualenv", "-q", "--no-download", "--no-periodic-update", "-p", sys.executable]
    subprocess.run([*make, str(folder)], check=True, capture_output=True)
    return folder / "bin"
