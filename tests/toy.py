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

import layout
import pytest

LOGGER_SOURCE = """
import logging
from functools import lru_cache
from types import MethodType


@lru_cache
def _print_debug_once(logger, msg, *args):
    logger.debug(msg, *args, stacklevel=3)


@lru_cache
def _print_info_once(logger, msg, *args):
    logger.info(msg, *args, stacklevel=3)


@lru_cache
def _print_warning_once(logger, msg, *args):
    logger.warning(msg, *args, stacklevel=3)


@lru_cache
def _print_error_once(logger, msg, *args):
    logger.error(msg, *args, stacklevel=3)


def _debug_once(self, msg, *args):
    _print_debug_once(self, msg, *args)


def _info_once(self, msg, *args):
    _print_info_once(self, msg, *args)


def _warning_once(self, msg, *args):
    _print_warning_once(self, msg, *args)


def _error_once(self, msg, *args):
    _print_error_once(self, msg, *args)


_METHODS_TO_PATCH = {
    "debug_once": _debug_once,
    "info_once": _info_once,
    "warning_once": _warning_once,
    "error_once": _error_once,
}


def init_logger(name):
    logger = logging.getLogger(name)
    for method_name, method in _METHODS_TO_PATCH.items():
        setattr(logger, method_name, MethodType(method, logger))
    return logger
"""

# A platform module with one kernel-import site; PKG is the package, CALL the handler's logging call.
PLATFORM_SOURCE = """
from PKG.logger import init_logger

logger = init_logger(__name__)


class Platform:
    @classmethod
    def import_kernels(cls) -> None:
        try:
            import PKG._C  # noqa: F401
        except ImportError as e:
            CALL
"""

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

EAGER_CALL = 'logger.warning_once("Failed to import from PKG._C: %s", repr(e))'

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


def write_toy(root: Path, package: str, platforms: dict[str, str]) -> Path:
    """`root/<package>` with a logger module and `platforms/<name>.py` for each entry (`PKG` -> package)."""
    write(root, f"{package}/__init__.py", "")
    write(root, f"{package}/logger.py", LOGGER_SOURCE)
    write(root, f"{package}/platforms/__init__.py", "")
    for name, source in platforms.items():
        write(root, f"{package}/platforms/{name}.py", textwrap.dedent(source).replace("PKG", package))
    return root / package


def purge(package: str) -> None:
    """Forget every module of `package`, so no later test imports a stale copy."""
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]


# The miniature vLLM a mutation run works on (no torch): a logger and one platform module with one eager site.
INTERFACE = PLATFORM_SOURCE.replace("CALL", EAGER_CALL).replace("PKG", "vllm")


def make_tree(root: Path, interface: str = INTERFACE) -> Path:
    """`root/vllm/` shaped like vLLM: _version.py, logger.py and platforms/interface.py (`interface`)."""
    package = root / "vllm"
    (package / "platforms").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "_version.py").write_text("__version__ = version = '9.9.9'\n__commit_id__ = commit_id = 'gtoy'\n")
    (package / "logger.py").write_text(LOGGER_SOURCE)
    (package / "platforms" / "__init__.py").write_text("")
    (package / "platforms" / "interface.py").write_text(interface)
    return root


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


def apply_operator(name: str, source: str) -> list[str]:
    """Every mutant one operator makes of a module, unanchored: the mutated source per mutant, in source order."""
    import libcst as cst
    from warnonce_guard.mutations.operators import OPERATORS, mutate_try
    from warnonce_guard.rule.site_rule import walk

    module = cst.parse_module(source)
    mutants = []
    for try_node in (node for node in walk(module) if isinstance(node, cst.Try)):
        for mutated in mutate_try(OPERATORS[name].function, try_node):
            replaced = module.deep_replace(try_node, mutated)
            assert isinstance(replaced, cst.Module)
            mutants.append(replaced.code)
    return mutants


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
