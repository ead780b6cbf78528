"""Which Python files an audit reads, each keyed by its path relative to the project root and shown relative to the
current directory (as ruff and pre-commit show paths), absolute when outside; folders walked as ruff walks them."""

from __future__ import annotations

import errno
import functools
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from warnonce_guard.audit.config import git_root
from warnonce_guard.audit.excludes import Excludes
from warnonce_guard.audit.gitignore import GitIgnores
from warnonce_guard.common.errors import NoPythonFiles, NothingToCheck
from warnonce_guard.common.notes import note
from warnonce_guard.rule.target import PACKAGE


@dataclass(frozen=True)
class Walk:
    """How paths are picked and named: the project root (keys), the current directory (shown paths), the excludes."""

    root: Path
    cwd: Path
    excludes: Excludes = field(default_factory=Excludes)
    force_exclude: bool = False
    respect_gitignore: bool = True

    def keyed(self, path: str | Path) -> str:
        """The path relative to the project root, or absolute outside it: what a baseline key holds."""
        return relative(str(path), str(self.root)) or str(path)

    def shown(self, path: str | Path) -> str:
        """The path relative to the current directory, or absolute outside it: what a line of output shows."""
        return relative(str(path), str(self.cwd)) or str(path)


@dataclass(frozen=True)
class FileSet:
    """The files a run reads, as (file, key path), with what else the walk met."""

    files: tuple[tuple[Path, str], ...]
    unreadable: tuple[tuple[str, str], ...] = ()  # (folder's key path, why): folders that could not be listed
    walked: tuple[str, ...] = ()  # key paths of the folders walked: baseline entries under them are in scope
    shown: dict[str, str] = field(default_factory=dict)  # key path -> shown path, where they differ

    @cached_property
    def _keys(self) -> frozenset[str]:
        return frozenset(key for _, key in self.files)

    def covers(self, file: str, root: Path) -> bool:
        """Whether the run judges baseline entries of `file` (a key path): a file it read, or one that is gone from a
        folder it walked."""
        if file in self._keys:
            return True
        under = any((w == "." and not file.startswith("/")) or file.startswith(f"{w}/") for w in self.walked)
        return under and not os.path.lexists(root / file)


def _link_problem(path: str | Path) -> str | None:
    """Why a symbolic link cannot be followed (dangling, a loop), else None."""
    try:
        os.stat(path)
    except OSError as err:
        return "a symbolic link loop" if err.errno == errno.ELOOP else "a dangling symbolic link"
    return None


def relative(path: str, base: str) -> str | None:
    """`path` relative to `base` (both absolute and normal, as strings: a walk's thousands of paths are not Paths),
    or None outside it."""
    if path == base:
        return "."
    prefix = base if base.endswith("/") else f"{base}/"
    return path[len(prefix) :] if path.startswith(prefix) else None


class _Walker:
    def __init__(self, walk: Walk) -> None:
        self.walk = walk
        self.unreadable: list[tuple[str, str]] = []
        self.ignores: dict[Path, GitIgnores] = {}

    def gitignores(self, folder: Path) -> GitIgnores | None:
        if not self.walk.respect_gitignore or (top := git_root(folder)) is None:
            return None
        if top not in self.ignores:  # each work tree's ignore files read once, for every folder given
            self.ignores[top] = GitIgnores(top)
        return self.ignores[top]

    def files(self, top: Path) -> Iterator[tuple[str, str]]:
        """(path, real path) of the `*.py` regular files under `top`, in no particular order."""
        ignores, real_top = self.gitignores(top), os.path.realpath(top)
        folders = [str(top)]
        while folders:
            folder = folders.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = list(listing)
            except OSError as err:
                self.unreadable.append((self.walk.keyed(folder), f"cannot list it ({err.strerror or err})"))
                continue
            for entry in entries:
                if self.walk.excludes.excluded(entry.path, entry.name):
                    continue
                found = self.entry(entry, ignores)
                if found == "folder":
                    folders.append(entry.path)
                elif found == "file":
                    yield entry.path, real_top + entry.path[len(str(top)) :]
                elif found == "link":
                    yield entry.path, os.path.realpath(entry.path)

    def entry(self, entry: os.DirEntry[str], ignores: GitIgnores | None) -> str | None:
        """What a folder's entry is to the walk: a "folder" to walk, a "file" or a "link" to one to read, or nothing
        (with a note if it is odd)."""
        python, shown = entry.name.endswith(".py"), self.walk.shown(entry.path)
        try:
            link, folder = entry.is_symlink(), entry.is_dir(follow_symlinks=False)
            regular = not link and entry.is_file(follow_symlinks=False)
        except OSError as err:
            note(f"{shown}: skipped, cannot tell what it is ({err.strerror or err})")
            return None
        if ignores is not None and ignores.ignored(entry.path, is_folder=folder):
            return None
        if link:
            problem = _link_problem(entry.path)
            if problem is not None:
                if python:
                    note(f"{shown}: skipped, {problem}")
                return None
            if os.path.isdir(entry.path):
                note(f"{shown}: a symbolic link to a folder, not followed")
                return None
            regular = os.path.isfile(entry.path)
        if folder:
            return "folder"
        if not python:
            return None
        if not regular:
            note(f"{shown}: skipped, not a regular file")
            return None
        return "link" if link else "file"


def _add(found: dict[str, str], file: str, real: str) -> None:
    """Count a file once, by its real path, under its own name rather than a link's."""
    if real not in found or not os.path.islink(file):
        found[real] = file


def python_files(paths: Iterable[Path], walk: Walk) -> FileSet:
    """Every Python file given, or under a folder given, each once (by its real path), sorted by key path.

    A path that does not exist is a `NoPythonFiles`; a run with nothing to read is a `NothingToCheck`, unless every
    file given was excluded by `force_exclude` (pre-commit passing excluded files: nothing to do, with a note).
    """
    paths = list(paths)
    walker = _Walker(walk)
    found: dict[str, str] = {}  # real path -> the path met
    walked: list[str] = []
    excluded = 0
    for given in paths:
        path = Path(os.path.abspath(walk.cwd / given))
        try:
            why = _link_problem(path) if stat.S_ISLNK(os.lstat(path).st_mode) else None
        except OSError as err:
            why = (err.strerror or str(err)).lower()
        if why is not None:
            raise NoPythonFiles(f"{given}: {why}; pass Python files or package directories")
        if walk.force_exclude and walk.excludes.excluded_with_parents(path, walk.root):
            excluded += 1
            continue
        if os.path.isdir(path):
            walked.append(walk.keyed(path))
            for file, real in walker.files(path):
                _add(found, file, real)
        elif os.path.isfile(path):
            _add(found, str(path), os.path.realpath(path))
        else:
            note(f"{given}: skipped, not a regular file")
    if not found and not walker.unreadable:
        if excluded and excluded == len(paths):
            note(f"every path given ({excluded}) is excluded by the settings (--force-exclude): nothing to check")
            return FileSet(())
        raise NothingToCheck(f"{', '.join(map(str, paths))}: no Python file to check there")
    files = sorted(((Path(path), walk.keyed(path)) for path in found.values()), key=lambda item: item[1])
    shown = {key: s for path, key in files if (s := walk.shown(path)) != key}
    shown |= {key: s for key, _ in walker.unreadable if (s := walk.shown(walk.root / key)) != key}
    return FileSet(tuple(files), tuple(walker.unreadable), tuple(walked), shown)


def tree_files(root: Path) -> FileSet:
    """Every *.py file of the vLLM package under `root`, keyed and shown relative to `root` (nothing excluded)."""
    return python_files([root / PACKAGE], Walk(root, root, respect_gitignore=False))


@functools.cache
def _package_of(folder: str) -> str | None:
    """The dotted package a folder is (its `__init__.py` and its parents'), None when it is not a package."""
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return None
    parent, name = os.path.split(folder)
    if not name.isidentifier():
        return None
    above = _package_of(parent) if parent != folder else None
    return f"{above}.{name}" if above else name


def module_name(path: Path) -> tuple[str | None, bool]:
    """The module a Python file is, by the packages (`__init__.py`) around it, and whether it is a package's own
    `__init__.py`: (`vllm.platforms.cpu`, False). (None, False) for a file whose name is no module's."""
    folder, name = os.path.split(os.path.abspath(path))
    stem = name.removesuffix(".py")
    package = _package_of(folder)
    if stem == "__init__":
        return package, package is not None
    if not stem.isidentifier():
        return None, False
    return (f"{package}.{stem}" if package else stem), False
