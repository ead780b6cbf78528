"""Write a report directory whole or not at all: build it in a marked temporary sibling, then rename it into place."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

from warnonce_guard.mutations import ownership


@contextlib.contextmanager
def replace_dir(target: Path) -> Iterator[Path]:
    """Yield an empty, marked sibling of `target` to fill; on success it replaces `target` whole.

    On an exception the sibling is removed and `target` is left as it was. POSIX cannot rename a
    directory over a non-empty one, so the swap is two renames (old aside, new in); between them
    `target` is briefly absent, never half-written, and a failed second rename puts the old one back.
    Leftovers of a swap that was killed halfway (marked siblings only) are removed first.
    """
    target = Path(target)
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    sweep(target)
    building = parent / f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    building.mkdir()  # not mkdtemp: that makes 0700, a report should get the mode any mkdir would
    try:
        ownership.mark(building, ownership.Kind.REPORT)
        yield building
        _swap(building, target)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise


def sweep(target: Path) -> list[Path]:
    """Remove what an interrupted swap of `target` left beside it: only directories that are provably ours."""
    removed = []
    for path in target.parent.glob(f".{target.name}.tmp-*"):
        # marked, or made and killed before its marker was written whole
        if ownership.marked(path, ownership.Kind.REPORT) or ownership.unfinished(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    for path in target.parent.glob(f".{target.name}.old-*"):
        inner = list(path.iterdir()) if path.is_dir() and not path.is_symlink() else None
        if inner is not None and all(_old_report(p, target.name) for p in inner):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _old_report(path: Path, name: str) -> bool:
    return path.name == name and ownership.marked(path, ownership.Kind.REPORT)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the block is over (their handlers raise, and would raise between two renames)."""
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _swap(new: Path, target: Path) -> None:
    if not target.exists() and not target.is_symlink():
        os.replace(new, target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    with _signals_held():
        os.replace(target, old / target.name)
        try:
            os.replace(new, target)
        except BaseException:
            os.replace(old / target.name, target)
            old.rmdir()
            raise
    shutil.rmtree(old, ignore_errors=True)
