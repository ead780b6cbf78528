"""Which tests score the mutants: our guards (the default), or any pytest suite (`mutate --tests PATH...`).

A suite is its root (`--tests-root`, default the paths' nearest common folder: pytest runs there, as `pytest PATH...`
would from it, so its settings and conftest.py files apply) and its paths: files, folders or node ids, relative to
the root. Its sources and settings under the root (Python files, conftest.py, ini, toml and cfg files), and the pytest
settings and conftest.py files of the folders above it, are part of the workspace's key (`signature`): a changed
test, conftest or helper is a new workspace, never a stale verdict; a file the suite writes as it runs (a log, a
cache, a database) is none of them.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from warnonce_guard.common.console import printable
from warnonce_guard.common.errors import BadRecord, PathUnusable, UsageError

# Folders of a tests root that hold no tests it runs: a version-control store, environments, caches.
_NOT_SUITE = frozenset({"__pycache__", ".git", ".hg", ".nox", ".tox", ".venv", "venv", "node_modules"})


@dataclass(frozen=True)
class Suite:
    """A pytest suite the mutants are scored against: `paths` (pytest's arguments) relative to `root`."""

    root: Path
    paths: tuple[str, ...]

    def describe(self) -> str:
        """The suite as every report names it: `the tests a.py, b/ (pytest in /root)`."""
        paths = "" if self.paths == (".",) else f" {', '.join(self.paths)}"
        return f"the tests{paths} (pytest in {printable(str(self.root))})"

    def to_json(self) -> dict[str, object]:
        return {"root": str(self.root), "paths": list(self.paths)}

    @classmethod
    def from_json(cls, data: Any) -> Suite:
        """The inverse of `to_json`; ValueError for anything else."""
        if not isinstance(data, dict) or not isinstance(data.get("root"), str):
            raise ValueError("not a suite")
        paths = data.get("paths")
        if not isinstance(paths, list) or not paths or not all(isinstance(path, str) for path in paths):
            raise ValueError("a suite's paths are not a list of strings")
        return cls(Path(data["root"]), tuple(data["paths"]))


def read_suite(path: Path) -> Suite | None:
    """The suite a workspace was staged for (its `suite.json`); None for the guards (no file); `BadRecord` for a
    file that does not validate, never taken for the guards."""
    if not path.exists():
        return None
    try:
        return Suite.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as err:
        raise BadRecord(f"{path}: {err}") from None


def _relative(given: str, root: Path) -> str:
    """One `--tests` value as pytest takes it from `root`: its file or folder part resolved from the current
    directory, then written relative to `root`; a node id keeps its `::` part."""
    if not given.strip():
        raise UsageError("--tests: an empty path; give test files, folders or node ids")
    file, sep, inner = given.partition("::")
    path = Path(file).absolute()
    if not path.exists():
        raise PathUnusable(f"--tests {printable(given)}: no such file or directory")
    resolved = Path(os.path.normpath(path))
    if not resolved.is_relative_to(root):
        raise PathUnusable(
            f"--tests {printable(given)} is outside --tests-root {printable(str(root))}; "
            "give a --tests-root that holds every test path"
        )
    relative = resolved.relative_to(root).as_posix()
    return (relative if relative != "." else ".") + sep + inner


def _folder(given: str) -> Path:
    """The folder a `--tests` value names or lies in."""
    path = Path(os.path.normpath(Path(given.partition("::")[0]).absolute()))
    return path if path.is_dir() else path.parent


def resolve_suite(tests: list[str], tests_root: str | None) -> Suite:
    """The suite `--tests` and `--tests-root` name, checked: one line (`UsageError`, `PathUnusable`) for a bad one."""
    if tests_root is not None and not tests_root.strip():
        raise UsageError("--tests-root: an empty value; give the folder pytest runs the suite in")
    if not tests:
        raise UsageError("--tests: give at least one test file, folder or node id")
    if tests_root is None:
        root = Path(os.path.commonpath([_folder(given) for given in tests if given.strip()] or ["."]))
    else:
        root = Path(os.path.normpath(Path(tests_root).absolute()))
    if not root.is_dir():
        raise PathUnusable(f"--tests-root {printable(str(root))}: not a directory")
    return Suite(root, tuple(dict.fromkeys(_relative(given, root) for given in tests)))


# What pytest reads in the folders above a suite's root: its settings and conftest.py files.
_SETTINGS = ("conftest.py", "pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")


def _stat(path: str, shown: str) -> list[tuple[str, int, int]]:
    try:
        st = os.stat(path)
    except OSError:  # none there, or a dangling link: no file the suite can read
        return []
    return [(shown, st.st_size, st.st_mtime_ns)]


# The files of a suite that say what it runs and how (what a user edits): its sources and settings.
SOURCE_SUFFIXES = (".py", ".ini", ".toml", ".cfg")


def signature(suite: Suite, left_out: list[Path]) -> list[tuple[str, int, int]]:
    """The suite's sources and settings under its root (`SOURCE_SUFFIXES`), but in caches and environments (and
    `left_out`: the run's own work directory, report and lock), and the settings and conftest.py files of every folder
    above it: path (relative to the root), size and modification time. Files the suite writes while it runs (logs,
    data, caches) are not in it: a run of a suite that writes into its own root is scored."""
    skipped = {os.path.normpath(path.absolute()) for path in left_out}
    out = []
    for folder, dirs, files in os.walk(suite.root):
        dirs[:] = sorted(d for d in dirs if d not in _NOT_SUITE and os.path.join(folder, d) not in skipped)
        for name in files:
            path = os.path.join(folder, name)
            if name.endswith(SOURCE_SUFFIXES) and path not in skipped:
                out += _stat(path, os.path.relpath(path, suite.root))
    for above in suite.root.parents:
        out += [entry for name in _SETTINGS for entry in _stat(str(above / name), str(above / name))]
    return sorted(out)


@dataclass(frozen=True)
class SuiteBaseline:
    """What the suite did on the unmutated code, in mutmut's stats session (`engine.suite_plugin` writes it): pytest's
    exit status, how many tests it ran, those that failed (node id -> first line: left out of every later session)
    and which of them reached a mutated function (re-run by `engine.confirm`: one that passes then is flaky), and the
    mutated functions that ran outside any test (mutmut's names: no test can be credited with them); then the tests
    that passed there and failed in mutmut's clean run of the same code (node id -> how: flaky, left out too)."""

    status: int
    collected: int
    failures: dict[str, str] = field(default_factory=dict)
    outside: frozenset[str] = frozenset()
    reaching: frozenset[str] = frozenset()
    flaky: dict[str, str] = field(default_factory=dict)

    @property
    def left_out(self) -> set[str]:
        """The tests no later session runs: they failed on the unmutated code."""
        return set(self.failures) | set(self.flaky)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["outside"], data["reaching"] = sorted(self.outside), sorted(self.reaching)
        return data

    @classmethod
    def from_json(cls, data: Any) -> SuiteBaseline:
        """The inverse of `to_json`; ValueError (or KeyError, TypeError) for anything else."""
        failures, outside, reaching, flaky = data["failures"], data["outside"], data["reaching"], data["flaky"]
        if type(data["status"]) is not int or type(data["collected"]) is not int:
            raise ValueError("status or collected is not a number")
        for tests in (failures, flaky):
            if not isinstance(tests, dict) or not all(isinstance(v, str) for v in tests.values()):
                raise ValueError("no map of failing tests")
        for names in (outside, reaching):
            if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
                raise ValueError("no list of functions run outside the tests, or of failing tests")
        return cls(
            data["status"], data["collected"], dict(failures), frozenset(outside), frozenset(reaching), dict(flaky)
        )


def read_baseline(path: Path) -> SuiteBaseline:
    """The suite's baseline in `path`; `BadRecord` when it is missing or not one."""
    try:
        return SuiteBaseline.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise BadRecord(f"{path}: {err}") from None
