"""`exclude` and `extend-exclude`: glob patterns for paths the audit does not walk into or read, with ruff's meaning.

A pattern is matched against a path's name (`.venv`, `*_pb2.py`: at any depth) and against its absolute path, the
pattern taken relative to the folder it was written for (the configuration's, or the current directory for the
command line): `tests/data` is that one folder, `vendored/*` everything under it. As in ruff (globset without
`literal_separator`), `*` matches `/` too; `**`, `?`, `[...]` and `{a,b}` are understood.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from warnonce_guard.audit.gitignore import translate

# ruff's default `exclude`, and `build` (a build's copy of the sources; ruff's list had it before 0.17).
DEFAULT_EXCLUDES = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache", ".nox",
    ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", ".vscode",
    "__pypackages__", "_build", "buck-out", "build", "dist", "node_modules", "site-packages", "venv",
)  # fmt: skip


@dataclass(frozen=True)
class Excludes:
    """Exclude patterns: a path is excluded when its name matches one, or its absolute path one made absolute."""

    names: tuple[str, ...] = ()  # regexes for a path's name
    paths: tuple[str, ...] = ()  # regexes for a whole absolute path

    @classmethod
    def of(cls, patterns: Iterable[str], base: Path) -> Excludes:
        """Patterns written for the folder `base` (each matched as a name, and as a path under `base`)."""
        patterns = tuple(patterns)
        prefix = base.as_posix().rstrip("/")
        absolute = (p if p.startswith("/") else f"{prefix}/{p}" for p in patterns)
        return cls(tuple(translate(p, slash=True) for p in patterns), tuple(translate(p, slash=True) for p in absolute))

    def __add__(self, other: Excludes) -> Excludes:
        return Excludes(self.names + other.names, self.paths + other.paths)

    @cached_property
    def _compiled(self) -> tuple[re.Pattern[str], re.Pattern[str]]:
        """The name regexes and the path regexes, each as one (none: one that matches nothing)."""
        names, paths = ("|".join(f"(?:{r})" for r in regexes) or "(?!)" for regexes in (self.names, self.paths))
        return re.compile(names, re.DOTALL), re.compile(paths, re.DOTALL)

    def excluded(self, path: str, name: str) -> bool:
        """Whether `path` (absolute), named `name`, is excluded by its name or by its path."""
        names, paths = self._compiled
        return bool(names.fullmatch(name) or paths.fullmatch(path))

    def excluded_with_parents(self, path: Path, root: Path) -> bool:
        """Whether `path` or a folder it is in, up to `root`, is excluded (`--force-exclude` on a path given)."""
        for folder in (path, *path.parents):
            if self.excluded(folder.as_posix(), folder.name):
                return True
            if folder == root:
                break
        return False
