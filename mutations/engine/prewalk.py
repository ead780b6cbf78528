"""The target's walk, done ahead when the run is likely to be a rerun. `mutate`'s fingerprint stats every file of the
target (vLLM: 6,000 files, 31 ms), the longest step of a run that finds nothing changed, which starts no session.

A run whose verdicts stood complete (tested whole, or read back) says so in its work root: `walked.json`, the
folders its fingerprint walked; a run that starts testing afresh removes it first. The next command in that work root
then starts no session as it starts (`launch.start_early`: the run would not need it; one that does starts it as it
finds out) and forks this walk of those folders instead, on the other core while the command imports; the
fingerprint takes that walk of a folder once, and walks any other folder, and the same one again, itself. So a
rerun's fingerprint is of the target's files as the command started, before it loaded the platform plugins (and,
with --platform, imported its platform): a file changed meanwhile is a change for the next run, as one changed just
after the fingerprint always was; a run that tests afresh stages the files as they are then, and its last
fingerprint, which walks again, finds the change and keeps none of its verdicts (`TargetChanged`).

Both walks are `tree_digest`; the forked one gives up on a folder holding anything but folders and regular files (a
symlink, a socket), which the command then walks itself, with its notes. Light to import: `launch` starts it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from warnonce_guard.common.processes import die_with_parent

HINT = "walked.json"  # in a work root of ours: the folders its last run fingerprinted, when its verdicts stood
_SIGNALS = {signal.SIGINT, signal.SIGTERM}

# The forked walk until `walked` reads it or `abandon` ends it: its pid, the read end of its pipe, its folders
walk: tuple[int, int, list[str]] | None = None
# What it said: each folder's digest (None: it gave up), until the fingerprint takes it
_walked: dict[str, str | None] = {}
_heard = b""  # the part of a line it said so far


class _Odd(Exception):
    """An entry the forked walk leaves to the command: neither a folder nor a regular file."""


def tree_digest(root: str, keep: Callable[[os.DirEntry[str]], bool]) -> str:
    """A digest of every file under `root` but bytecode: relative path, size and modification time, folder by folder
    in name order (one stat per file). A folder is walked, but `__pycache__`; any other entry is counted, as what it
    points to, when `keep(entry)` says so, else left out."""
    digest = hashlib.sha256()
    folders = [("", root)]
    while folders:
        relative, folder = folders.pop()
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
        lines = []
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    folders.append((f"{relative}{entry.name}/", entry.path))
            elif entry.is_file(follow_symlinks=False) or keep(entry):
                st = entry.stat()
                lines.append(f"{relative}{entry.name}\0{st.st_size}\0{st.st_mtime_ns}\n")
        # os.fsencode: a file name that is not UTF-8 (kept by Python as surrogates) hashes as its bytes
        digest.update(os.fsencode("".join(lines)))
    return digest.hexdigest()


def start(work_root: Path) -> bool:
    """Fork the walk of the folders the last run in `work_root` fingerprinted, if it is a work root of ours whose last
    run's verdicts stood (`remember`); whether it did. Signals reach it as they would any process (it dies of them,
    saying nothing), and so does its parent's end (`processes.die_with_parent`). It holds no file of its parent's but
    its pipe (not its output)."""
    global walk
    abandon()  # one walk at a time
    folders = _hinted(work_root)
    if not folders:
        return False
    read, write = os.pipe()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)  # until the child has its own handlers
    try:
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            _walk_and_say(folders, write, blocked, parent)
        walk = (pid, read, folders)  # before a signal held meanwhile runs (the command's handler exits: the walk dies
        # with it, `die_with_parent`)
    except OSError:  # no process to spare: the fingerprint walks them itself
        os.close(read)
        return False
    finally:
        os.close(write)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    return True


def _walk_and_say(folders: list[str], write: int, blocked: set[signal.Signals], parent: int) -> NoReturn:
    """The forked process: a line for each folder as it is walked, `[folder, digest]` (null when it gave up), on
    `write`, then exit."""
    try:
        os.closerange(0, write)  # the parent's output, its session's pipes, the wakeup pipe of its handlers
        os.closerange(write + 1, os.sysconf("SC_OPEN_MAX"))
        for signum in _SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        die_with_parent()
        if os.getppid() == parent:  # else it ended before it could be told to take this process with it
            for folder in folders:
                digest = None
                with contextlib.suppress(_Odd, OSError):
                    digest = tree_digest(folder, _refuse)
                said = (json.dumps([folder, digest]) + "\n").encode()
                while said:
                    said = said[os.write(write, said) :]
    finally:
        os._exit(0)


def _refuse(entry: os.DirEntry[str]) -> bool:
    raise _Odd(entry.path)


def walked(folder: Path) -> str | None:
    """The forked walk's digest of `folder`, once; None when it did not walk it whole, or was not to: walk it here.
    Waits for the walk of `folder` alone (and of the folders walked before it)."""
    name = os.fspath(folder)
    try:
        while walk is not None and name in walk[2] and name not in _walked:
            heard = os.read(walk[1], 1 << 16)
            if not heard:  # it ended, having said all it will
                _end()
            _hear(heard)
    except BaseException:  # a signal's exception (the command's `Stops`): nothing is taken
        abandon()
        raise
    return _walked.pop(name, None)


def _hear(heard: bytes) -> None:
    global _heard
    *lines, _heard = (_heard + heard).split(b"\n")
    for line in lines:
        with contextlib.suppress(ValueError):
            folder, digest = json.loads(line)
            if isinstance(folder, str) and isinstance(digest, str | None):
                _walked[folder] = digest


def abandon() -> None:
    """End the forked walk and forget what it said: the command refused its arguments, or ended before its
    fingerprint, or the fingerprint took what it needed (`stage.fingerprint`: a later one walks again)."""
    global _heard
    _end()
    _walked.clear()
    _heard = b""


def _end() -> None:
    """Close the forked walk's pipe, kill it if it still walks, and reap it once it ended: one stuck in a folder that
    does not answer (a hung network disk) is not waited for past 0.1 s; it dies once the disk answers, and the end of
    its parent reaps it."""
    global walk
    if walk is not None:
        pid, read, _ = walk
        walk = None
        os.close(read)
        with contextlib.suppress(OSError):  # ended already (a zombie still takes the signal)
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 0.1
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(pid, os.WNOHANG)[0] == 0 and time.monotonic() < deadline:
                time.sleep(0.001)


def remember(work_root: Path, folders: Sequence[Path]) -> None:
    """Say in `work_root` (ours, claimed) that this run's verdicts stood, and which `folders` it fingerprinted, for
    the next run to walk ahead; a hint only: a work root that cannot take it is said so by what writes there next."""
    names = [os.fspath(folder) for folder in folders]
    if names != _hinted(work_root):
        from warnonce_guard.common.files import write_atomic

        with contextlib.suppress(OSError):
            write_atomic(work_root / HINT, json.dumps(names) + "\n")


def forget(work_root: Path) -> None:
    """This run tests afresh: until its verdicts stand, the next run in `work_root` starts its session at once."""
    with contextlib.suppress(OSError):
        (work_root / HINT).unlink(missing_ok=True)


def _hinted(work_root: Path) -> list[str]:
    from warnonce_guard.common.files import Kind, marked

    hint = work_root / HINT
    if not marked(work_root, Kind.WORK_ROOT) or not hint.is_file():  # a FIFO would block
        return []
    try:
        names = json.loads(hint.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested deeper than Python recurses
        return []
    return names if isinstance(names, list) and all(isinstance(name, str) for name in names) else []
