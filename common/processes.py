"""Processes a run starts: they die with it, even on SIGKILL, and stop cleanly on Ctrl-C and SIGTERM.

- `die_with_parent`: Linux's PR_SET_PDEATHSIG, asked for by a child (the mutmut session, its workers);
  `bind_to_parent` in a child started with `child_environment` (the mutmut session, the history's guard runs).
- `helpers_bound_to_run`: processes forked meanwhile (staging's copier, discovery's parsers) die with
  the run and leave Ctrl-C to it.
- `stop_group`: SIGTERM a child's process group, SIGKILL it after a grace period, reap the child.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from types import FrameType

from warnonce_guard.common import protocol

STOP_GRACE_S = 5.0  # how long a process group gets to exit after SIGTERM before SIGKILL
_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Ask Linux to send `sig` to this process when its parent dies (a no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


# A run's own pytest sessions (the mutmut session, history's guard runs) take their options from their command
# line only: a shell's PYTEST_ADDOPTS (-x, -k, --pdb) or PYTEST_PLUGINS would change what the guards run, or
# wait on a terminal nobody watches.
USER_PYTEST_VARIABLES = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")


def child_environment(environ: Mapping[str, str], **extra: str) -> dict[str, str]:
    """`environ` for a child the run starts (it calls `bind_to_parent`): told this process's pid, and without the
    user's pytest variables."""
    env = {k: v for k, v in environ.items() if k not in USER_PYTEST_VARIABLES}
    env.update(extra)
    protocol.tell_parent(env, os.getpid())
    return env


def bind_to_parent() -> None:
    """Die with the process that started this one (`protocol.PARENT_PID`); exit at once if it is already gone."""
    die_with_parent()
    expected = protocol.settings().parent_pid
    if expected is not None and os.getppid() != expected:
        os._exit(1)  # the parent died while this interpreter was starting


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_run_pid: int | None = None  # in helpers_bound_to_run: the run's pid


def _forked_helper() -> None:
    """In a process forked by staging or discovery: Ctrl-C is left to the run, SIGTERM ends it (as the pool
    stops a worker), and it dies with the run, even on SIGKILL."""
    global _run_pid
    run_pid, _run_pid = _run_pid, None
    if run_pid is None:
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent()
    if os.getppid() != run_pid:
        os._exit(1)  # the run died before this helper could ask to die with it


os.register_at_fork(after_in_child=_forked_helper)


@contextlib.contextmanager
def stop_signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM that arrive in the block are noted, in order, and the first is raised again when the
    block is over, for its handler to act on then. Unlike a signal mask (the kernel delivers what a mask held
    lowest number first), this keeps which came first: SIGTERM then Ctrl-C is still SIGTERM's 143."""
    arrived: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        arrived.append(signum)

    previous = {sig: signal.signal(sig, note) for sig in _STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if arrived:
            signal.raise_signal(arrived[0])  # the others came after it: later signals, which never raise


@contextlib.contextmanager
def helpers_bound_to_run() -> Iterator[None]:
    """Processes forked in the block (staging's copier, discovery's parsers) die with this one and stay quiet.

    The command line's SIGINT/SIGTERM handlers raise; a helper inheriting them printed a traceback on Ctrl-C
    (and one dying of it broke the pool, another traceback, in the run). So the two signals are deferred for
    the block (`stop_signals_deferred`), helpers replace the handlers they inherit as they start, and in the
    run the first signal takes effect when the block ends: staging and discovery take a second or two on vLLM.
    """
    global _run_pid
    with stop_signals_deferred():
        _run_pid = os.getpid()
        try:
            yield
        finally:
            _run_pid = None


def stop_group(session: subprocess.Popen[bytes]) -> None:
    """SIGTERM the session's process group, SIGKILL it after a grace period, and reap the session."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(session.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        session.wait(timeout=STOP_GRACE_S)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(session.pid, signal.SIGKILL)
    session.wait()


