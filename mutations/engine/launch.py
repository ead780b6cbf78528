"""The run's side of the session (mutations.engine.session): start it first, give it its workspace, then tell it what
to mutate. Light to import, so that the session's process starts before the command imports the parser, the report
or the engine: the session imports the engine while the command checks its paths and fingerprints the target, then
torch while it discovers and stages the sites (on the other core)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from warnonce_guard.common import protocol
from warnonce_guard.common.errors import EngineFailed
from warnonce_guard.common.processes import child_environment, stop_group, wait_up_to
from warnonce_guard.mutations.engine import prewalk

if TYPE_CHECKING:
    from warnonce_guard.mutations.workspace import Workspace

SESSION_MODULE = "warnonce_guard.mutations.engine.session"
BYTECODE_OFF = {"PYTHONDONTWRITEBYTECODE": "1"}  # in the session's environment (and so its workers')
# How long a session that said its exit code (`ended`) is given to end before it is stopped: its teardown takes 25 ms
ENDING_S = 1.0
DEFAULT_WORK_DIR = ".warnonce-work"  # `mutate --work-dir`'s default, read by `start_early` before the parser is built


class Session(subprocess.Popen[bytes]):
    """The session's process, the file its output goes to until it takes the workspace's log (a file, unlinked:
    no pipe to fill while nothing reads it), and the pipe it says its exit code on as it ends (`ended`)."""

    early_output: IO[bytes] | None = None
    end: int | None = None
    said = False  # whether it said its exit code (`ended`)


def start_session(work_root: Path) -> Session:
    """Start the session in a process group of its own: it imports the engine at once, then waits to be given a
    workspace (`assign`), which it does not know yet. Its command line names `work_root` (absolute), where that
    workspace will be, so that a session left running is found by it; its output goes to a file of its own until it
    takes the workspace's log, what it said before first (`keep_early_output` keeps it when it never took it)."""
    early = tempfile.TemporaryFile()  # noqa: SIM115 - the session's: closed by `close_early_output`
    try:
        end, write_end = os.pipe()
    except BaseException:
        early.close()
        raise
    try:
        session = Session(
            [sys.executable, "-m", SESSION_MODULE, str(work_root)],
            stdin=subprocess.PIPE,  # `assign` and `tell_to_mutate` only: a stray prompt must not wait on the terminal
            stdout=early,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=child_environment(os.environ, **BYTECODE_OFF, **{protocol.SESSION_END: str(write_end)}),
            pass_fds=(write_end,),
        )
    except BaseException:
        early.close()
        os.close(end)
        raise
    finally:
        os.close(write_end)
    session.early_output, session.end = early, end
    return session


def ended(session: subprocess.Popen[bytes], seconds: float) -> int | None:
    """The session's exit code once it said it (as it ends: its processes then tear down vLLM and torch, 25 ms the
    run need not wait for) or ended, else None after `seconds`; a session that says nothing is waited for."""
    end = getattr(session, "end", None)
    if end is None:
        return wait_up_to(session, seconds)
    deadline = time.monotonic() + seconds
    ready = select.poll()
    ready.register(end, select.POLLIN)
    if ready.poll(seconds * 1000):
        with contextlib.suppress(ValueError):
            code = int(os.read(end, 16))  # a line; none (b""): every process of the session closed it, ended
            session.said = True  # type: ignore[attr-defined]  # a Popen of a test's stands in too
            return code
        return wait_up_to(session, max(0.0, deadline - time.monotonic()))  # what is left of `seconds`, not more
    return session.poll()


# The session `start_early` started for this process, until `session_started` takes it or `stop_early` stops it
early: Session | None = None
# The work root `start_early` started no session for, its last run's verdicts having stood (`prewalk`)
rerun_likely: Path | None = None


def start_early(argv: Sequence[str]) -> None:
    """The session of `mutate` with `argv`, started by the command line's first module before it imports the parser
    and the run's modules (30 ms sooner: the session's imports, then torch, are the run's critical path), in the
    work root `argv` names; none when it names it in a way only the parser reads (it starts with the command then),
    nor when the last run there found its verdicts standing: likely so again, a rerun needs no session, and the
    target's walk is forked instead (`prewalk`; a run that does need one starts it once it knows). `session_started`
    takes it if the parser reads the same work root; `stop_early` stops one it never took."""
    global early, rerun_likely
    if (work_dir := _work_dir(argv)) is not None:
        with contextlib.suppress(OSError):  # a current directory gone, no process to spare: the command says so
            work_root = Path(os.path.abspath(work_dir))
            if prewalk.start(work_root):
                rerun_likely = work_root
            else:
                early = start_session(work_root)


def _work_dir(argv: Sequence[str]) -> str | None:
    """`--work-dir`'s value in `mutate`'s arguments (the last one given, else the default), as the parser reads them
    (it takes no abbreviation); None, and the session starts with the command, if it is missing or empty (a usage
    error), looks like an option (`--work-dir -w`: the parser tells), follows `--`, or help is asked for."""
    value: str | None = DEFAULT_WORK_DIR
    tokens = iter(argv)
    for token in tokens:
        if token in ("-h", "--help", "--"):
            return None
        if token == "--work-dir":
            value = next(tokens, None)
            if value is None or value.startswith("-"):
                return None
        elif token.startswith("--work-dir="):
            value = token.partition("=")[2]
    return value or None


def stop_early() -> None:
    """Stop the session `start_early` started if nothing took it (the command line refused its arguments, or a
    signal or an error ended the command before it took it): killed with its group before it is let go of (given no
    workspace, it holds nothing), so that a signal meanwhile still finds it to kill (`cli.__main__`)."""
    global early, rerun_likely
    prewalk.abandon()
    rerun_likely = None
    if (session := early) is not None:
        dismiss(session)
        early = None
        stop(session)


@contextlib.contextmanager
def session_started(work_root: Path) -> Iterator[Session | None]:
    """A session for `work_root`: the one `start_early` started for it, else one started now (`start_session`), or
    none when `start_early` found a rerun likely there (the run starts one if it needs one); stopped with its group
    if it still runs when the block ends: the run needed none (its verdicts stood, it refused its input) or was
    stopped."""
    global early, rerun_likely
    session = None
    try:
        if early is not None and early.args[-1] == str(work_root):
            session = early
            early = None  # the run's from here: stopped below
        elif rerun_likely == work_root:
            rerun_likely = None  # its walk ahead is the fingerprint's
        else:
            stop_early()  # another work root than the parser read (an argument only it reads): not the run's
            session = start_session(work_root)
        yield session
    finally:
        if session is not None:
            stop(session)


def stop(session: subprocess.Popen[bytes]) -> None:
    """Stop the session with its group if it still runs (`stop_group`), and close the file of its early output and
    the pipe of its end."""
    try:
        if getattr(session, "said", False):
            wait_up_to(session, ENDING_S)  # it said its code and is ending: no signal meanwhile
        if session.poll() is None:
            stop_group(session)
    finally:
        close_early_output(session)
        if (end := getattr(session, "end", None)) is not None:
            session.end = None  # type: ignore[attr-defined]
            os.close(end)


def dismiss(session: subprocess.Popen[bytes]) -> None:
    """Stop a session the run turned out not to need (its verdicts stand), without waiting: it was given no
    workspace, so it holds nothing; whoever started it reaps it (`session_started`)."""
    if session.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(session.pid, signal.SIGKILL)


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
    created here, so that a disk or folder refusing it is this process's error. `EngineFailed` if it already ended
    (it could not start: what it said is kept in the log, its last line quoted)."""
    with ws.log_file.open("ab"):
        pass
    if (code := session.poll()) is not None:
        said = keep_early_output(session, ws).decode(errors="replace").strip().splitlines()
        line = f": {said[-1].strip()}" if said else ""
        raise EngineFailed(f"the mutmut session ended (exit code {code}) as it started{line}; see {ws.log_file}")
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


def keep_early_output(session: subprocess.Popen[bytes], ws: Workspace) -> bytes:
    """Once the session ended: append to the workspace's log what it said before it took that log, and return it
    (nothing, unless it ended before it was given its workspace: then why; the session copies it itself when it
    takes the log)."""
    early = getattr(session, "early_output", None)
    if early is None or early.closed:
        return b""
    early.seek(0)
    said = early.read()
    close_early_output(session)
    if said:
        with ws.log_file.open("ab") as log:
            log.write(said)
    return bytes(said)


def close_early_output(session: subprocess.Popen[bytes]) -> None:
    early = getattr(session, "early_output", None)
    if early is not None:
        early.close()


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
