"""The target's walk, done ahead. `mutate`'s fingerprint stats every file of the target (vLLM: 6,000 files, 35 ms),
the longest step of a run that finds nothing changed. A process forked as the command starts, before it imports its
modules, walks the folders the last run in the same work root fingerprinted (its `walked.json`), on the other core;
the fingerprint takes that walk of a folder once, and walks any other folder, and the same one again, itself.

Both walks are `tree_digest`; the forked one gives up on a folder holding anything but folders and regular files (a
symlink, a socket), which the command then walks itself, with its notes. Light to import: `launch` starts it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

HINT = "walked.json"  # in a work root of ours: the folders its last run fingerprinted
_SIGNALS = {signal.SIGINT, signal.SIGTERM}

# The forked walk until `walked` reads it or `abandon` ends it (a signal's handler: `cli.__main__`): its pid, the read
# end of its pipe, its folders
walk: tuple[int, int, list[str]] | None = None
_walked: dict[str, str] = {}  # what it gave, each folder's digest until the fingerprint takes it


class _Odd(Exception):
    """An entry the forked walk leaves to the command: neither a folder nor a regular file."""


def tree_digest(root: str, keep: Callable[[os.DirEntry[str]], bool]) -> str:
    """A digest of every file under `root` but bytecode: its relative path, size and modification time (one stat per
    regular file). A folder is walked, but `__pycache__`; any other entry is counted, as what it points to, when
    `keep(entry)` says so, else left out."""
    files = []
    folders = [("", root)]
    while folders:
        relative, folder = folders.pop()
        with os.scandir(folder) as scan:
            for entry in scan:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        folders.append((f"{relative}{entry.name}/", entry.path))
                elif entry.is_file(follow_symlinks=False) or keep(entry):
                    st = entry.stat()
                    files.append((f"{relative}{entry.name}", st.st_size, st.st_mtime_ns))
    files.sort()
    return hashlib.sha256(json.dumps(files).encode()).hexdigest()


def start(work_root: Path) -> None:
    """Fork the walk of the folders the last run in `work_root` fingerprinted, if it is a work root of ours that
    says which; signals reach it as they would any process (it dies of them, saying nothing)."""
    global walk
    folders = _hinted(work_root)
    if not folders:
        return
    read, write = os.pipe()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)  # until the child has its own handlers
    try:
        pid = os.fork()
        if pid == 0:
            _walk_and_say(folders, read, write, blocked)
    except OSError:  # no process to spare: the fingerprint walks them itself
        os.close(read)
        return
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        os.close(write)
    walk = (pid, read, folders)


def _walk_and_say(folders: list[str], read: int, write: int, blocked: set[signal.Signals]) -> NoReturn:
    """The forked process: the digest of each folder it walked whole, as JSON on `write`, then exit."""
    try:
        signal.set_wakeup_fd(-1)
        for signum in _SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        os.close(read)
        digests = {}
        for folder in folders:
            with contextlib.suppress(_Odd, OSError):
                digests[folder] = tree_digest(folder, _refuse)
        said = json.dumps(digests).encode()
        while said:
            said = said[os.write(write, said) :]
    finally:
        os._exit(0)


def _refuse(entry: os.DirEntry[str]) -> bool:
    raise _Odd(entry.path)


def walked(folder: Path) -> str | None:
    """The forked walk's digest of `folder`, once; None when it did not walk it whole: walk it here."""
    global walk
    if walk is not None:
        pid, read, _ = walk
        walk = None
        said = b""
        try:
            while chunk := os.read(read, 1 << 16):
                said += chunk
        finally:
            _end(pid, read)
        with contextlib.suppress(ValueError):
            digests = json.loads(said)
            if isinstance(digests, dict):
                _walked.update((k, v) for k, v in digests.items() if isinstance(k, str) and isinstance(v, str))
    return _walked.pop(os.fspath(folder), None)


def abandon() -> None:
    """End a forked walk nothing read (the command refused its arguments, or ended before its fingerprint)."""
    global walk
    if walk is not None:
        pid, read, _ = walk
        walk = None
        _end(pid, read)


def _end(pid: int, read: int) -> None:
    os.close(read)
    with contextlib.suppress(OSError):  # ended already (a zombie still takes the signal), or reaped
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def remember(work_root: Path, folders: Sequence[Path]) -> None:
    """Say in `work_root` (ours, claimed) which `folders` this run fingerprinted, for the next run to walk ahead; a
    hint only: a work root that cannot take it is said so by what writes there next."""
    names = [os.fspath(folder) for folder in folders]
    if names != _hinted(work_root):
        from warnonce_guard.common.files import write_atomic

        with contextlib.suppress(OSError):
            write_atomic(work_root / HINT, json.dumps(names) + "\n")


def _hinted(work_root: Path) -> list[str]:
    from warnonce_guard.common.files import Kind, marked

    hint = work_root / HINT
    if not marked(work_root, Kind.WORK_ROOT) or not hint.is_file():  # a FIFO would block
        return []
    try:
        names = json.loads(hint.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return names if isinstance(names, list) and all(isinstance(name, str) for name in names) else []
