"""Write a report directory whole or not at all: build it in a marked temporary sibling, then rename it into place.

One writer at a time: a writer holds the directory's lock (`claimed`, filelock, like the work directory's)
from its check to the final rename, so a sweep, which runs only under that lock, finds only what writers
that died left behind. The lock is a hidden sibling, `.<name>.warnonce-guard.lock`: it cannot be inside a
directory that is replaced whole, and it stays after the run (removing a lock file others may be opening
would let two writers hold "the" lock at once).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout
from warnonce_guard.common import ownership
from warnonce_guard.common.errors import PathUnusable, WorkDirBusy

LOCK_SUFFIX = ".warnonce-guard.lock"
_held = threading.local()  # the lock files this thread holds: a holder's nested claim does not lock again


def lock_path(target: Path) -> Path:
    """The lock file of the report directory `target`: a hidden sibling (the directory is replaced whole)."""
    return target.parent / f".{target.name}{LOCK_SUFFIX}"


@contextlib.contextmanager
def claimed(target: Path) -> Iterator[None]:
    """Hold `target`'s lock for the block; `WorkDirBusy` at once when another run (or thread) holds it.

    Re-entrant within a thread: a run holds it from its path check to its report, and `replace_dir` claims
    it again. Creates `target`'s parent if needed (as the report would), nothing else but the lock file.
    """
    path = lock_path(Path(os.path.abspath(target)))
    key = os.path.realpath(path)
    held: set[str] = _held.__dict__.setdefault("paths", set())
    if key in held:
        yield
        return
    lock = FileLock(path, timeout=0)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock.acquire()
    except Timeout:
        raise WorkDirBusy(
            f"--out {target}: another warnonce-guard run is writing its report there; wait for it to finish or "
            "pass another --out"
        ) from None
    except OSError as err:
        why = err.strerror or err
        raise PathUnusable(f"--out {target}: cannot lock {path} ({why}); pass a writable path") from None
    held.add(key)
    try:
        yield
    finally:
        held.discard(key)
        lock.release()


@contextlib.contextmanager
def replace_dir(target: Path) -> Iterator[Path]:
    """Yield an empty, marked sibling of `target` to fill; on success it replaces `target` whole.

    The whole block holds `target`'s lock (`claimed`). On an exception the sibling is removed and `target`
    is left as it was. POSIX cannot rename a directory over a non-empty one, so the swap is two renames (old
    aside, new in); between them `target` is briefly absent, never half-written, and a failed second rename
    puts the old one back. Leftovers of a swap that was killed halfway (marked siblings only) are removed first.
    """
    target = Path(target)
    parent = target.parent
    with claimed(target):
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
    """Remove what an interrupted swap of `target` left beside it: only directories that are provably ours,
    and only under `target`'s lock, where no live writer has any (`WorkDirBusy` while another holds it)."""
    with claimed(target):
        return _sweep(target)


def _sweep(target: Path) -> list[Path]:
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
