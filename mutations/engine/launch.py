"""The run's side of the session (mutations.engine.session): start it first, give it its workspace, then tell it what
to mutate. Light to import, so that the session's process starts before the command imports the parser, the report
or the engine: the session imports the engine while the command checks its paths and fingerprints the target, then
torch while it discovers and stages the sites (on the other core)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from warnonce_guard.common.processes import child_environment, stop_group

if TYPE_CHECKING:
    from warnonce_guard.mutations.workspace import Workspace

SESSION_MODULE = "warnonce_guard.mutations.engine.session"
BYTECODE_OFF = {"PYTHONDONTWRITEBYTECODE": "1"}  # in the session's environment (and so its workers')


def start_session(work_root: Path) -> subprocess.Popen[bytes]:
    """Start the session in a process group of its own: it imports the engine at once, then waits to be given a
    workspace (`assign`), which it does not know yet. Its command line names `work_root` (absolute), where that
    workspace will be, so that a session left running is found by it; its output comes back through a pipe until it
    takes the workspace's log (`keep_early_output` appends what it said before)."""
    return subprocess.Popen(
        [sys.executable, "-m", SESSION_MODULE, str(work_root)],
        stdin=subprocess.PIPE,  # `assign` and `tell_to_mutate` only: a stray prompt must not wait on the terminal
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=child_environment(os.environ, **BYTECODE_OFF),
    )


@contextlib.contextmanager
def session_started(work_root: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A session started now (`start_session`), stopped with its group if it still runs when the block ends: the
    run needed none (its verdicts stood, it refused its input) or was stopped."""
    session = start_session(work_root)
    try:
        yield session
    finally:
        if session.poll() is None:
            stop_group(session)
        if session.stdout is not None:
            session.stdout.close()


@dataclass(frozen=True)
class Assignment:
    """What the run gives the session once it knows: its workspace, the run's id, the modules to import before the
    target (torch), how many re-runs confirm each kill."""

    workspace: Path
    run_id: str
    warm_up: list[str]
    rounds: int


def assign(session: subprocess.Popen[bytes], ws: Workspace, run_id: str, warm_up: Sequence[str], rounds: int) -> None:
    """Give the session its workspace (`Assignment`): it appends its output to the workspace's log from then on,
    created here, so that a disk or folder refusing it is this process's error. A session that already ended says
    why by its exit code."""
    with ws.log_file.open("ab"):
        pass
    _say(session, json.dumps({"workspace": str(ws.dir), "run": run_id, "warm_up": list(warm_up), "confirm": rounds}))


def tell_to_mutate(session: subprocess.Popen[bytes], files: Sequence[str]) -> None:
    """Tell the session the workspace is staged: mutmut runs now, mutating `files`. A session that already ended
    says why by its exit code."""
    _say(session, json.dumps(list(files)))
    assert session.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        session.stdin.close()


def _say(session: subprocess.Popen[bytes], line: str) -> None:
    assert session.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        session.stdin.write(line.encode() + b"\n")
        session.stdin.flush()


def keep_early_output(session: subprocess.Popen[bytes], ws: Workspace) -> None:
    """Once the session ended: append to the workspace's log what it said before it took that log (nothing, unless
    its start failed: then why)."""
    if session.stdout is None or session.stdout.closed:
        return
    with session.stdout as early:
        said = early.read()
    if said:
        with ws.log_file.open("ab") as log:
            log.write(said)


def assignment() -> Assignment | None:
    """In the session: what `assign` gave it; None when the run closed the pipe first (it needed no session)."""
    line = sys.stdin.buffer.readline()
    if not line.strip():
        return None
    given = json.loads(line)
    return Assignment(Path(given["workspace"]), given["run"], list(given["warm_up"]), int(given["confirm"]))


def files_to_mutate() -> list[str] | None:
    """In the session: the files `tell_to_mutate` names; None when the run closed the pipe without them (it ended
    before staging)."""
    line = sys.stdin.buffer.readline()
    return json.loads(line) if line.strip() else None
