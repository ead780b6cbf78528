"""Own only what you create: the one module that writes files whole, marks directories ours, swaps a directory
into place, sweeps a dead run's leftovers and removes a directory of ours (docs/reference.md, Your files)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import shutil
import signal
import stat
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path

from warnonce_guard.common.errors import GuardError, PathUnusable, StagingFailed, TargetChanged

MARKER = ".warnonce-guard"
TOOL = "warnonce-guard"
_TEMPORARY = re.compile(r"\.(?P<of>.+)\.(tmp|old)-[0-9]+-[0-9a-f]{8}")
# What the system refuses a user who may not write there (another user's files): the path's fault (exit 3),
# where a full, read-only or over-quota disk is the disk's (exit 4)
PERMISSION_ERRORS = frozenset({errno.EACCES, errno.EPERM})
DISK_ERRORS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})


class Kind(StrEnum):
    """What a marked directory is."""

    REPORT = "report"  # an --out directory
    WORK_ROOT = "work-root"  # a --work-dir directory
    WORKSPACE = "workspace"  # one run's directory inside a work root (pruned when old)
    HISTORY = "history"  # a `history --work-dir` directory (downloads, release trees, kept verdicts)
    RELEASE_TREE = "release-tree"  # a release's vllm/ tree in it (with its archive's name, sha256 and a digest)
    SCRATCH = "scratch"  # a temporary directory, removed when its block ends


def destination(path: Path) -> Path:
    """Where writing `path` lands: the final target of a symlink (of a chain of them), else `path`."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def regular_file(path: Path, option: str, verb: str = "write") -> bool:
    """Whether `path`, given as `option` (a file to `verb`), is a regular file (False: nothing there); `PathUnusable`
    for anything else (a directory, a FIFO, a path that cannot be looked at)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return False
    except OSError as err:
        raise PathUnusable(f"{option} {path}: {err.strerror or err}; pass another path") from None
    if stat.S_ISDIR(mode):
        raise PathUnusable(f"{option} {path}: a directory; pass the path of the file to {verb}")
    if not stat.S_ISREG(mode):
        raise PathUnusable(f"{option} {path}: not a regular file; pass the path of a file")
    return True


def temporary(path: Path, suffix: str = "tmp") -> Path:
    """A hidden sibling of `path` to write it in (`tmp`) or move it aside to (`old`), unique per process and call."""
    return path.with_name(f".{path.name}.{suffix}-{os.getpid()}-{secrets.token_hex(4)}")


def is_temporary(name: str, of: str | None = None) -> bool:
    """Whether `name` is one `temporary` gives (for the entry named `of`, when given)."""
    found = _TEMPORARY.fullmatch(name)
    return found is not None and of in (None, found["of"])


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to a temporary sibling, then rename it over `path`.

    A reader sees the old file or the new one, never half of one; a failed write (disk full, a signal)
    leaves no temporary file behind, and two processes writing the same path never share one. An error names
    the file even when the system call that failed did not (a full disk refuses a `write`, not the `open`):
    whose disk refused is then known (the work directory's, not stdout's).
    """
    partial = temporary(path)
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except OSError as err:
        if err.filename is None:
            err.filename = str(partial)
        raise
    finally:
        partial.unlink(missing_ok=True)


def rewrite(path: Path, data: bytes, before: bytes) -> None:
    """Replace the content of a user's file, which holds `before`, with `data`: through its symbolic links, in place.

    The file keeps its inode, and with it every hard link's name, its owner, mode, ACLs and extended attributes
    (a rename of a new file over it would break all of those). In place is not atomic, so it is made as safe as
    it can be: the content is compared with `before` through the open file (`TargetChanged` if it moved on), the
    new length is allocated first (a full disk refuses before any byte changes), and the write and the truncation
    run with Ctrl-C and SIGTERM held. Only a SIGKILL or a crash in those few system calls leaves it half-written.
    """
    fd = os.open(path, os.O_RDWR)  # follows symbolic links: the file they point to is the one fixed
    try:
        current = b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
        if current != before:
            raise TargetChanged(f"{path}: changed since it was read; nothing was written to it, run again")
        if len(data) > len(before):
            try:
                os.posix_fallocate(fd, 0, len(data))
            except OSError as err:
                os.ftruncate(fd, len(before))  # what an allocation cut short added
                if err.errno in DISK_ERRORS:
                    raise
                # a filesystem that cannot allocate ahead (EOPNOTSUPP): the write itself says if the disk is full
        with _signals_held():
            view = memoryview(data)
            while view:
                view = view[os.pwrite(fd, view, len(data) - len(view)) :]
            os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)


def cannot_write(err: OSError, what: str, fix: str = "pass --work-dir on a writable disk") -> GuardError:
    """The one line for a work directory refusing a write: `what` (e.g. "cannot create X"), why, the file, and
    the fix. A permission refused is the path's (`PathUnusable`), anything else the disk's (`StagingFailed`)."""
    why = err.strerror or str(err)
    if (file := err.filename2 or err.filename) is not None:
        why = f"{why}: {os.fsdecode(file)}"
    if err.errno in PERMISSION_ERRORS:
        return PathUnusable(f"{what}: {why} (another user's files?); pass a --work-dir of your own")
    return StagingFailed(f"{what}: {why}; {fix}")


def mark(directory: Path, kind: Kind, **fields: str) -> None:
    """Write (whole) the marker that says `directory` is ours, as `kind`, with the kind's own `fields`."""
    write_atomic(directory / MARKER, json.dumps({"tool": TOOL, "kind": kind.value, **fields}) + "\n")


def marker(directory: Path, kind: Kind | None = None) -> dict[str, str]:
    """The fields of `directory`'s marker when it is ours (as `kind`, when given); empty when it is not.

    A directory, never a symlink to one; the marker is read only when it is a file (a FIFO would block)."""
    path = directory / MARKER
    if directory.is_symlink() or not directory.is_dir() or not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("tool") != TOOL or kind not in (None, data.get("kind")):
        return {}
    return data


def marked(directory: Path, kind: Kind | None = None) -> bool:
    """Whether `directory` carries our marker (for `kind`, when given)."""
    return bool(marker(directory, kind))


def unfinished(directory: Path) -> bool:
    """A directory holding nothing but, at most, a marker not yet written whole: a run killed between making
    the directory and marking it. It holds nothing of anyone's, so it may be reused or removed."""
    if directory.is_symlink() or not directory.is_dir():
        return False
    try:
        return all(
            is_temporary(child.name, MARKER) or (child.name == MARKER and child.stat().st_size == 0)
            for child in directory.iterdir()
        )
    except OSError:
        return False


def remove_ours(path: Path) -> str | None:
    """Delete a file, or a directory of ours with its marker last: a removal cut short leaves it marked, so it
    is finished later. A symlink is removed, never followed.

    Returns why it could not be removed whole (another user's files in it), None once it is gone; what could be
    removed is, and the marker stays while anything else does."""
    failed: list[tuple[Path, OSError]] = []
    try:
        if path.is_symlink() or not path.is_dir():
            path.unlink(missing_ok=True)
            return None
        for child in path.iterdir():
            if child.name == MARKER:
                continue
            try:
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink(missing_ok=True)
            except OSError as err:
                failed.append((child, err))
        if not failed:
            (path / MARKER).unlink(missing_ok=True)
            path.rmdir()
    except OSError as err:
        failed.append((path, err))
    if not failed:
        return None
    where, err = failed[0]
    return f"{err.strerror or err}: {where}"


@contextlib.contextmanager
def scratch(beside: Path, suffix: str = "tmp", kind: Kind = Kind.SCRATCH) -> Iterator[Path]:
    """An empty temporary directory beside `beside`, marked as `kind`, for the block; removed (marker last) when
    it ends, unless the block moved it away."""
    folder = temporary(beside, suffix)
    folder.mkdir()  # not mkdtemp: that makes 0700, a report should get the mode any mkdir would
    try:
        mark(folder, kind)
        yield folder
    finally:
        remove_ours(folder)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the block is over (their handlers raise, and would raise between two renames)."""
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def swap(new: Path, target: Path) -> None:
    """Put the directory `new` where `target` is, replacing it whole (the caller has checked `target` is ours).

    POSIX cannot rename a directory over a non-empty one, so the swap is two renames (old aside, new in), with
    Ctrl-C held between them: `target` is briefly absent, never half-written, and a failed second rename puts the
    old one back. The old one is then removed; killed before, it is a marked leftover the next sweep removes."""
    if not target.exists() and not target.is_symlink():
        os.replace(new, target)
        return
    with scratch(target, "old") as old, _signals_held():
        os.replace(target, old / target.name)
        try:
            os.replace(new, target)
        except BaseException:
            os.replace(old / target.name, target)
            raise


@contextlib.contextmanager
def replace_dir(target: Path, kind: Kind) -> Iterator[Path]:
    """Yield an empty temporary sibling of `target`, marked as `kind`, to fill; on success it replaces `target`
    whole (`swap`), on an exception it is removed and `target` is left as it was.

    Call it holding the lock every writer of `target` holds: what dead writers left beside it is swept first."""
    sweep(target.parent, target.name)
    with scratch(target, kind=kind) as building:
        yield building
        swap(building, target)


def sweep(folder: Path, of: str | None = None) -> list[Path]:
    """Remove what dead runs left in `folder` (beside the entry `of`, when given): temporary files, and temporary
    directories that are ours (marked, or unfinished). Call it only holding the lock every writer there holds,
    where no live run has a temporary. Returns what was removed."""
    try:
        # by name first: an entry of a crowded folder (an --out in /tmp) that is no temporary costs no stat, nor a sort
        temporaries = sorted(entry for entry in folder.iterdir() if is_temporary(entry.name, of))
    except OSError:  # missing, or not listable: nothing of ours to find
        return []
    removed = []
    for path in temporaries:
        ours = path.is_symlink() or not path.is_dir() or marked(path) or unfinished(path)
        if ours and remove_ours(path) is None:
            removed.append(path)
    return removed
