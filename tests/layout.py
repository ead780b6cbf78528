"""Where things are in the checkout, for tests in any folder under tests/."""

from __future__ import annotations

import configparser
import os
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
    """A new virtual environment at `folder` as `python3 -m venv` makes one: with the pip and setuptools this Python's
    ensurepip bundles; its `bin`. virtualenv makes it from those wheels in about a second, where
    `venv.EnvBuilder(with_pip=True)` takes six (ensurepip installs and compiles pip); no configuration of the user's
    changes it."""
    import ensurepip

    bundled = Path(ensurepip.__file__).parent / "_bundled"
    version = {wheel.name.split("-")[0]: wheel.name.split("-")[1] for wheel in bundled.glob("*.whl")}
    make = [sys.executable, "-m", "virtualenv", "-q", "--no-download", "--no-periodic-update"]
    make += ["--extra-search-dir", str(bundled), "--pip", version["pip"], "--setuptools", version["setuptools"]]
    env = {**os.environ, "VIRTUALENV_CONFIG_FILE": os.devnull}
    done = subprocess.run([*make, "-p", sys.executable, str(folder)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, f"virtualenv {folder} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    return folder / "bin"
