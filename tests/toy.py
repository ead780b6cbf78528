"""Toy vLLM-like packages written to a temporary directory, for tests that must not import vLLM.

A toy package has what a guard touches in vLLM: `<pkg>/logger.py` with lru_cache'd `*_once` printers
attached to `logging.Logger`s by `init_logger` (as `vllm/logger.py` does), and `<pkg>/platforms/` modules
whose `import_kernels()` try to import `<pkg>._C`.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests import layout

# The miniature vLLM's sources, its tree and apply_operator are tools/toy_vllm.py's (the fault campaign builds on
# them too, and a tool imports nothing from tests/); the tests import them from here.
from tools.toy_vllm import EAGER_CALL as EAGER_CALL
from tools.toy_vllm import FIXED_LOGGER_SOURCE as FIXED_LOGGER_SOURCE
from tools.toy_vllm import INTERFACE as INTERFACE
from tools.toy_vllm import LOGGER_SOURCE, apply_operator
from tools.toy_vllm import PLATFORM_SOURCE as PLATFORM_SOURCE
from tools.toy_vllm import make_tree as make_tree

# A plugin's module with the bug as vLLM 0.29.0 had it (what the audit reports and the pre-commit hook refuses).
PLUGIN_LEAK = """\
from vllm.logger import init_logger

logger = init_logger(__name__)


def import_kernels():
    try:
        import my_plugin._C  # noqa: F401
    except ImportError as e:
        logger.warning_once("Failed to import my_plugin._C: %r", e)
"""

# The command line, run in a subprocess as a user runs it.
CLI = [sys.executable, "-m", "warnonce_guard.cli"]

_names = itertools.count()


def unique_package() -> str:
    """A package name no other test uses, so sys.modules and import caches never mix two toys."""
    return f"toyllm{next(_names)}"


def write(root: Path, relative: str, source: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    return path


def write_toy(root: Path, package: str, platforms: dict[str, str], logger: str = LOGGER_SOURCE) -> Path:
    """`root/<package>` with a logger module (`logger`: the toy's, vLLM-shaped, or `FIXED_LOGGER`) and
    `platforms/<name>.py` for each entry (`PKG` -> package)."""
    write(root, f"{package}/__init__.py", "")
    write(root, f"{package}/logger.py", logger)
    write(root, f"{package}/platforms/__init__.py", "")
    for name, source in platforms.items():
        write(root, f"{package}/platforms/{name}.py", textwrap.dedent(source).replace("PKG", package))
    return root / package


def purge(package: str) -> None:
    """Forget every module of `package`, so no later test imports a stale copy."""
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]


# pytest settings of a vLLM checkout, by the file that holds them (pytest reads only the first it finds): an
# option pytest does not know, so a guard run that read them would stop as a bad command line.
CHECKOUT_SETTINGS = {
    "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "--definitely-unknown-option"\n',
    "pytest.ini": "[pytest]\naddopts = --definitely-unknown-option\n",
    "setup.cfg": "[tool:pytest]\naddopts = --definitely-unknown-option\n",
}


def as_checkout(root: Path, settings: str) -> Path:
    """Make `root`, which holds a vllm/ package, a vLLM checkout for pytest: a tests/conftest.py that imports a
    module not installed (vLLM's imports tblib, one of its test requirements), a top-level conftest.py that
    fails, and the settings file `settings` of `CHECKOUT_SETTINGS`."""
    write(root, "tests/conftest.py", "import tblib_not_installed  # noqa: F401\n")
    write(root, "conftest.py", 'raise ImportError("the checkout\'s own conftest.py was loaded")\n')
    write(root, settings, CHECKOUT_SETTINGS[settings])
    return root


def install_inside(root: Path) -> Path:
    """A copy of warnonce-guard in `root/.venv/site` (a virtualenv kept in the checkout, as vLLM's developers
    make them), so that the guards' own folder lies inside the checkout; the folder to put on PYTHONPATH."""
    site = root / ".venv" / "site"
    for module, folder in layout.PACKAGE_FOLDERS.items():
        shutil.copytree(layout.ROOT / folder, site.joinpath(*module.split(".")), ignore=shutil.ignore_patterns("*.pyc"))
    return site


# How the guards are pointed at a checkout: its path after pytest's arguments (as `nox -s guards -- ...` passes
# it), `.` from its root, or no option from its tests/ with vLLM installed from it (the checkout's root on the
# path) and warnonce-guard in a virtualenv inside it (`install_inside`).
CHECKOUT_RUNS = ("from-outside", "inside-it", "installed-from-it")


def guards_on_checkout(tree: Path, how: str, *pytest_args: str) -> subprocess.CompletedProcess[str]:
    """`warnonce-guard guards` on the checkout `tree` as `how` (of `CHECKOUT_RUNS`) says."""
    env = dict(os.environ)
    if how == "installed-from-it":
        site = install_inside(tree)
        env["PYTHONPATH"] = os.pathsep.join([str(site), str(tree)])
        where = subprocess.run(
            [sys.executable, "-c", "import warnonce_guard.guards as g; print(g.__file__)"],
            capture_output=True, text=True, env=env, check=True,
        ).stdout  # fmt: skip
        assert where.startswith(str(site)), where  # the guards that run are the copy inside the checkout
    args = {"from-outside": ["--vllm-src", str(tree)], "inside-it": ["--vllm-src", "."]}.get(how, [])
    cwd = {"from-outside": tree.parent, "inside-it": tree}.get(how, tree / "tests")
    return subprocess.run([*CLI, "guards", *pytest_args, *args], capture_output=True, text=True, cwd=cwd, env=env)


# What a target may hold that is no file to read, by the name it has under vllm/, and what the note calls it.
ODD_FILES = {
    "fifo.py": "a FIFO",  # opening one waits for a writer: for ever
    "dangling.py": "a dangling symlink",
    "loop.py": "a symlink loop",
    "folder.py": "a directory",
    "data.fifo": "a FIFO",  # the fingerprint covers every file, not only *.py
}


def add_odd_files(tree: Path) -> dict[Path, str]:
    """Put `ODD_FILES` into the tree's vllm/ package; each path with what it is."""
    package = tree / "vllm"
    os.mkfifo(package / "fifo.py")
    (package / "dangling.py").symlink_to(package / "gone.py")
    (package / "loop.py").symlink_to(package / "loop.py")
    (package / "folder.py").mkdir()
    (package / "folder.py" / "inside.txt").write_text("a file in a directory named like a module\n")
    os.mkfifo(package / "data.fifo")
    return {package / name: what for name, what in ODD_FILES.items()}


def fitting_operators(source: str) -> list[str]:
    """The operators (by name, sorted) that make a mutant of `source`: what a run of it must report."""
    from warnonce_guard.mutations.operators import OPERATORS

    return sorted(name for name in OPERATORS if apply_operator(name, source))


@contextmanager
def mutmut_settings(directory: Path) -> Iterator[None]:
    """A throwaway mutmut config in `directory`, current for the block: mutmut's generator reads one."""
    from mutmut import configuration

    (directory / "setup.cfg").write_text("[mutmut]\nsource_paths = src\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(directory)
        patch.setattr(configuration, "_config", None)
        yield
