"""Own only what you create: the checks that refuse `--out`, `--work-dir` and `--viewer-js` with one line each,
before any work is done (docs/reference.md, What it may replace or delete)."""

from __future__ import annotations

import fcntl
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from warnonce_guard.common.errors import PathRefused, PathUnusable
from warnonce_guard.common.files import MARKER, Kind, marked, unfinished


@dataclass(frozen=True)
class Protected:
    """A directory an output path must keep away from: itself and above it always, inside it unless `inside_ok`."""

    label: str  # e.g. "the target package"
    path: Path
    inside_ok: bool = False

    def clashes(self, candidate: Path) -> bool:
        """As written and as the filesystem resolves it: a symlinked parent must not lead inside the target."""
        for resolve in (os.path.abspath, os.path.realpath):
            mine, theirs = Path(resolve(self.path)), Path(resolve(candidate))
            if mine.is_relative_to(theirs) or (not self.inside_ok and theirs.is_relative_to(mine)):
                return True
        return False


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_writable_dir(directory: Path, option: str, path: Path | None = None) -> None:
    """`directory` (where `path` goes, when given) is a writable directory or can be made in one; `PathUnusable`
    naming `option` and `path` otherwise."""
    path = directory if path is None else path
    base = _nearest_existing(directory)
    if not base.is_dir():
        raise PathUnusable(f"{option} {path}: {base} is not a directory; pass a path under a directory")
    if not os.access(base, os.W_OK | os.X_OK):
        raise PathUnusable(f"{option} {path}: {base} is not writable; pass a path on a writable disk")


def _empty_or_ours(path: Path, kind: Kind, option: str, what: str) -> None:
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise PathRefused(f"{option} {path}: a file is there, not a {what} directory; pass a new or empty directory")
    if not path.is_dir():
        return
    if not marked(path, kind):
        _empty(path, option, kind)
    if problem := _unchangeable(path):
        raise PathUnusable(f"{option} {path}: {problem}")


def _empty(path: Path, option: str, kind: Kind) -> None:
    try:
        entries = [child.name for child in path.iterdir()]
    except OSError as err:
        raise PathUnusable(f"{option} {path}: cannot list it ({err.strerror}); pass another directory") from None
    # A marker left empty (the run was killed between creating and writing it) alone in its directory is ours
    # and as good as empty; refusing it would leave a work directory no run can use. A run that started beside
    # this one writes its marker whole (a rename) before anything else: files listed after it are its, and the
    # marker is there when looked for again.
    if entries and not unfinished(path) and not marked(path, kind):
        raise PathRefused(
            f"{option} {path}: holds files warnonce-guard did not create (no {MARKER} marker); "
            "pass a new or empty directory"
        )


# Linux's inode flags (FS_IOC_GETFLAGS): an immutable or append-only directory can be neither filled and emptied
# nor renamed, even by root, whatever its mode says.
_GET_FLAGS = 0x80086601
_FLAGS = {0x10: ("immutable", "i"), 0x20: ("append-only", "a")}


def _unchangeable(directory: Path) -> str | None:
    """Why this run could not fill, empty or replace an existing `directory` (None when it can), with the fix:
    no write permission, or the immutable or append-only flag (`chattr +i`, `chattr +a`)."""
    flags = _inode_flags(directory)
    for flag, (name, letter) in _FLAGS.items():
        if flags & flag:
            fix = f"pass another directory or chattr -{letter}"
            return f"{name} (chattr +{letter}): no run can fill or replace it; {fix}"
    # another run renaming its report over this one takes the directory away for a moment: judged on what is there
    # after (gone, or a writable directory again, is nothing this run cannot change)
    access = os.W_OK | os.X_OK
    if not os.access(directory, access) and directory.is_dir() and not os.access(directory, access):
        return "not writable; pass a path on a writable disk"
    return None


def _inode_flags(directory: Path) -> int:
    """The directory's inode flags; 0 where the system or filesystem has none to say (not Linux, some tmpfs)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return 0
    try:
        return struct.unpack("l", fcntl.ioctl(fd, _GET_FLAGS, struct.pack("l", 0)))[0]
    except OSError:
        return 0
    finally:
        os.close(fd)


def _keep_clear(path: Path, option: str, protected: Iterable[Protected]) -> None:
    for guarded in protected:
        if guarded.clashes(path):
            where = "or above it" if guarded.inside_ok else "inside it or above it"
            raise PathRefused(f"{option} {path}: is {guarded.label}, {where}; pass a directory of its own")


def check_out_dir(out: Path, protected: Iterable[Protected], cwd: Path | None = None) -> Path:
    """The absolute `--out` directory, or `PathRefused`/`PathUnusable` with the reason; nothing is written."""
    out = Path(os.path.abspath(out))
    here = Path(os.path.realpath(cwd or Path.cwd()))
    if here.is_relative_to(out) or here.is_relative_to(os.path.realpath(out)):  # first: `--out .` says so
        raise PathRefused(f"--out {out}: is the current directory or above it; pass a directory of its own")
    _keep_clear(out, "--out", protected)
    _empty_or_ours(out, Kind.REPORT, "--out", "report")
    check_writable_dir(out.parent, "--out", out)
    return out


def check_work_root(work: Path, protected: Iterable[Protected], kind: Kind = Kind.WORK_ROOT) -> Path:
    """The absolute `--work-dir` (of a mutation run, or of `kind`), or `PathRefused`/`PathUnusable` with the
    reason; nothing is written."""
    work = Path(os.path.abspath(work))
    _keep_clear(work, "--work-dir", protected)
    _empty_or_ours(work, kind, "--work-dir", "work" if kind is Kind.WORK_ROOT else kind.value)
    check_writable_dir(work.parent, "--work-dir", work)
    return work


def check_readable_file(path: Path, option: str, utf8: bool = False) -> Path:
    """`path` as an absolute path, if it is a readable file (and, with `utf8`, UTF-8 text throughout)."""
    path = Path(os.path.abspath(path))
    if not path.is_file():
        raise PathUnusable(f"{option} {path}: no such file; pass the path of an existing file")
    if not os.access(path, os.R_OK):
        raise PathUnusable(f"{option} {path}: not readable; check its permissions")
    if utf8:
        try:
            with path.open(encoding="utf-8") as file:  # decoded as it is read, a chunk at a time
                while file.read(1 << 20):
                    pass
        except UnicodeDecodeError as err:
            raise PathUnusable(f"{option} {path}: not UTF-8 text ({err.reason}); pass the text file itself") from None
        except OSError as err:
            raise PathUnusable(f"{option} {path}: cannot read it ({err.strerror or err})") from None
    return path
