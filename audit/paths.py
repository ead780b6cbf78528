"""Which Python files an audit reads, each with the path it is shown under (and keyed by in a baseline)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from warnonce_guard.common.errors import NoPythonFiles


def tree_files(root: Path, package: str = "vllm") -> list[tuple[Path, str]]:
    """(file, path as shown) for every *.py file under `root/package`, shown relative to `root`."""
    return [(path, path.relative_to(root).as_posix()) for path in sorted((root / package).rglob("*.py"))]


def python_files(paths: Iterable[Path], cwd: Path | None = None) -> list[tuple[Path, str]]:
    """(file, path as shown) for every Python file given or under a directory given, in order, without repeats.

    A file is shown relative to the current directory when it is inside it (as pre-commit and linters
    show paths), else absolute.
    """
    paths = list(paths)
    here = (cwd or Path.cwd()).resolve()
    found: dict[Path, str] = {}
    for given in paths:
        if not given.exists():
            raise NoPythonFiles(f"{given}: no such file or directory; pass Python files or package directories")
        files = sorted(given.rglob("*.py")) if given.is_dir() else [given]
        for path in files:
            real = path.resolve()
            shown = real.relative_to(here).as_posix() if real.is_relative_to(here) else real.as_posix()
            found.setdefault(real, shown)
    if not found:
        raise NoPythonFiles(f"{', '.join(map(str, paths))}: no Python file there; pass Python files or directories")
    return sorted(found.items(), key=lambda item: item[1])
