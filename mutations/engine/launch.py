"""The run's side of the session (mutations.engine.session): start it, then tell it what to mutate. Light to import,
so that the session's process starts before the run imports the parser or the engine (they load in the session's
process, on the other core, while this one discovers and stages)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Sequence

from warnonce_guard.common import protocol
from warnonce_guard.common.processes import child_environment
from warnonce_guard.mutations.workspace import Workspace

SESSION_MODULE = "warnonce_guard.mutations.engine.session"
BYTECODE_OFF = {"PYTHONDONTWRITEBYTECODE": "1"}  # in the session's environment (and so its workers')


def start_session(ws: Workspace, run_id: str, warm_up: Sequence[str] = (), rounds: int = 1) -> subprocess.Popen[bytes]:
    """Start the session in a process group of its own, its output appended to the workspace's log: it imports
    `warm_up` at once, then waits for `tell_to_mutate`; it confirms each kill by `rounds` re-runs."""
    with ws.log_file.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", SESSION_MODULE, str(ws.dir), run_id, *warm_up],
            stdin=subprocess.PIPE,  # `tell_to_mutate`, and nothing else: a stray prompt must not wait on the terminal
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=child_environment(os.environ, **BYTECODE_OFF, **{protocol.CONFIRM: str(rounds)}),
        )


def tell_to_mutate(session: subprocess.Popen[bytes], files: Sequence[str]) -> None:
    """Tell the session the workspace is staged: mutmut runs now, mutating `files`. A session that already ended
    says why by its exit code."""
    assert session.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        session.stdin.write(json.dumps(list(files)).encode() + b"\n")
        session.stdin.close()


def files_to_mutate() -> list[str] | None:
    """In the session: the files `tell_to_mutate` names; None when the run closed the pipe without them (it ended
    before staging)."""
    line = sys.stdin.buffer.readline()
    return json.loads(line) if line.strip() else None
