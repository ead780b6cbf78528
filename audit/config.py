"""The audit's settings: `[tool.warnonce-guard]` of the nearest `pyproject.toml` that has one (as ruff finds its own),
and the project root that baseline keys are relative to (docs/reference.md, The audit)."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from warnonce_guard.audit.selection import Layer
from warnonce_guard.caches.model import BadCacheEntry, Cache, user_caches
from warnonce_guard.common.errors import BadCacheSettings, UsageError

SECTION = "warnonce-guard"
LISTS = ("select", "extend-select", "ignore", "exclude", "extend-exclude")
FLAGS = ("force-exclude", "respect-gitignore")
CACHES = "cache"  # `[[tool.warnonce-guard.cache]]`: once-caches of the user's own (`caches.model.user_cache`)


@dataclass(frozen=True)
class Config:
    """The settings read (none if `file` is None) and the project root."""

    root: Path
    file: Path | None = None
    lists: dict[str, tuple[str, ...]] = field(default_factory=dict)  # the LISTS keys given
    flags: dict[str, bool] = field(default_factory=dict)  # the FLAGS keys given
    caches: tuple[Cache, ...] = ()  # the once-caches it adds to the table's

    @property
    def origin(self) -> str:
        """Where the settings are written, for an error message."""
        return f"{self.file} [tool.{SECTION}]" if self.file else "the default settings"

    def layer(self) -> Layer:
        lists = self.lists
        return Layer(self.origin, lists.get("select"), lists.get("extend-select", ()), lists.get("ignore", ()))


def _read(file: Path) -> dict[str, object]:
    try:
        return tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(f"{file}: cannot read it ({getattr(err, 'strerror', None) or err})") from None
    except tomllib.TOMLDecodeError as err:
        raise UsageError(f"{file}: not valid TOML ({err})") from None


def _settings(file: Path, table: object) -> tuple[dict[str, tuple[str, ...]], dict[str, bool], tuple[Cache, ...]]:
    """The table's values, checked: a key we do not know or a value of the wrong type names the file."""
    where = f"{file} [tool.{SECTION}]"
    if not isinstance(table, dict):
        raise UsageError(f"{where}: not a table")
    unknown = sorted(set(table) - {*LISTS, *FLAGS, CACHES})
    if unknown:
        raise UsageError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join((*LISTS, *FLAGS, CACHES))})")
    lists, flags = {}, {}
    try:
        caches = user_caches(table[CACHES], where) if CACHES in table else ()
    except BadCacheEntry as err:
        raise BadCacheSettings(str(err)) from None
    for key, value in table.items():
        if key == CACHES:
            continue
        if key in FLAGS:
            if not isinstance(value, bool):
                raise UsageError(f"{where}: {key} must be true or false, not {value!r}")
            flags[key] = value
        elif not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{where}: {key} must be a list of strings, not {value!r}")
        else:
            lists[key] = tuple(value)
    return lists, flags, caches


def git_root(start: Path) -> Path | None:
    """The nearest folder from `start` upwards holding `.git` (a folder, or a worktree's file), else None."""
    return next((folder for folder in (start, *start.parents) if os.path.exists(folder / ".git")), None)


def find(paths: Sequence[Path | str], cwd: Path) -> Config:
    """The settings for a run of `paths`, found as said above, and its project root."""
    first = Path(os.path.abspath(cwd / paths[0])) if paths else cwd
    start = first if os.path.isdir(first) else first.parent
    for folder in (start, *start.parents):
        file = folder / "pyproject.toml"
        if os.path.isfile(file):
            tool = _read(file).get("tool")
            if isinstance(tool, dict) and SECTION in tool:
                lists, flags, caches = _settings(file, tool[SECTION])
                return Config(folder, file, lists, flags, caches)
    return Config(git_root(start) or cwd)
