"""The locks a run holds: one on its work directory, one on its report directory (`--out`); `flock`, as one.

A lock is taken at once or refused (`WorkDirBusy`, exit 4), re-entrant within a thread, and its file stays after
the run (docs/reference.md, One run per work directory). The kernel's `flock` on the lock file, held by its open
descriptor: released when the run ends, however it ends. (filelock takes the same lock; importing it, 12 ms, was a
sixteenth of an unchanged rerun.)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from warnonce_guard.common.errors import GuardError, PathUnusable, WorkDirBusy
from warnonce_guard.common.files import Kind, cannot_write, mark, marked

LOCK = ".warnonce-guard.lock"
_held = threading.local()  # the lock files this thread holds: a holder's nested claim does not lock again


@contextlib.contextmanager
def exclusive(path: Path, busy: str, refused: Callable[[OSError], GuardError]) -> Iterator[None]:
    """Hold the lock file `path` (its folder made if needed) for the block: `WorkDirBusy(busy)` at once when anyone
    holds it (this thread too), `refused(err)` when it cannot be taken (another user's lock file, a read-only disk, a
    filesystem without file locks). As filelock made it: readable and writable by whom the umask lets (a group's
    shared folder), never through a symlink, never waiting on a FIFO planted in its place."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
    except OSError as err:
        raise refused(err) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise WorkDirBusy(busy) from None
        except OSError as err:
            raise refused(err) from None
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)  # released for a child that inherited the descriptor too
    finally:
        os.close(fd)


@contextlib.contextmanager
def _holding(path: Path, busy: str, refused: Callable[[OSError], GuardError]) -> Iterator[None]:
    """`exclusive`, but taken again by its holder's thread at once (a run's nested claim of its own directory)."""
    key = os.path.realpath(path)
    held: set[str] = _held.__dict__.setdefault("paths", set())
    if key in held:
        yield
        return
    with exclusive(path, busy, refused):
        held.add(key)
        try:
            yield
        finally:
            held.discard(key)


@contextlib.contextmanager
def work_dir(directory: Path, kind: Kind = Kind.WORK_ROOT) -> Iterator[Path]:
    """Create and mark `--work-dir` (as `kind`), and hold its lock for the block."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if not marked(directory, kind):
            mark(directory, kind)
    except OSError as err:
        raise cannot_write(err, f"cannot create --work-dir {directory}") from None
    busy = (
        f"--work-dir {directory}: another warnonce-guard run is using it; wait for it to finish "
        "or pass another --work-dir"
    )
    refused = f"--work-dir {directory}: cannot take its lock {LOCK}"  # a lock file another user's run made
    with _holding(directory / LOCK, busy, lambda err: cannot_write(err, refused)):
        yield directory


def out_lock(target: Path) -> Path:
    """The lock file of the report directory `target`: a hidden sibling (the directory is replaced whole)."""
    return target.parent / f".{target.name}{LOCK}"


@contextlib.contextmanager
def out_dir(target: Path) -> Iterator[None]:
    """Hold `--out`'s lock for the block; makes `target`'s parent if needed (as the report would), nothing else
    but the lock file."""
    path = out_lock(Path(os.path.abspath(target)))
    busy = (
        f"--out {target}: another warnonce-guard run is writing its report there; wait for it to finish or "
        "pass another --out"
    )

    def refused(err: OSError) -> GuardError:
        return PathUnusable(f"--out {target}: cannot lock {path} ({err.strerror or err}); pass a writable path")

    with _holding(path, busy, refused):
        yield
