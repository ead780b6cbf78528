"""Processes a run starts: they die with it, even on SIGKILL, and stop cleanly on Ctrl-C and SIGTERM.

- `die_with_parent`: Linux's PR_SET_PDEATHSIG, asked for by a child (the mutmut session, its workers);
  `bind_to_parent` in a child started with `child_environment` (the mutmut session, the history's guard runs).
- `stop_group`: SIGTERM a child's process group, SIGKILL it after a grace period, reap the child.
- `wait_up_to`: a child's exit code once it ended, waking the moment it does.
- `collect_from_here`: Python's cycle collector on again after imports made with it off.
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import subprocess
import sys
from collections.abc import Mapping

from warnonce_guard.common import protocol

STOP_GRACE_S = 5.0  # how long a process group gets to exit after SIGTERM before SIGKILL
_PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Ask Linux to send `sig` to this process when its parent dies (a no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes  # here, in the child that asks: the command's start (`launch`) does not import it (1.5 ms)

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)


# A run's own pytest sessions (the mutmut session, history's guard runs) take their options from their command
# line only: a shell's PYTEST_ADDOPTS (-x, -k, --pdb) or PYTEST_PLUGINS would change what the guards run, or
# wait on a terminal nobody watches.
USER_PYTEST_VARIABLES = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")
# Nor do they load the environment's pytest plugins (hypothesis, xdist, a locked environment's dozen): the guards
# need none, and loading them costs about a second of each session's start, on the run's critical path.
NO_PLUGIN_AUTOLOAD = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def collect_from_here() -> None:
    """Python's cycle collector on again in a process whose first module turned it off for its imports (`mutate`'s
    command, the mutmut session): the objects they made live as long as the process, and each collection during them
    scanned them all again (a fifth of a second of the session's import of torch and vLLM, on the run's critical
    path). They are frozen (never scanned, never collected), what is made from here on is collected as usual. A
    process that never turned it off (a test calling in) is left as it is."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def child_environment(environ: Mapping[str, str], **extra: str) -> dict[str, str]:
    """`environ` for a child the run starts (it calls `bind_to_parent`): told this process's pid, without the
    user's pytest variables, and with no pytest plugin loaded that its command line does not name."""
    env = {k: v for k, v in environ.items() if k not in USER_PYTEST_VARIABLES}
    env.update(NO_PLUGIN_AUTOLOAD, **extra)
    protocol.tell_parent(env, os.getpid())
    return env


def bind_to_parent() -> None:
    """Die with the process that started this one (`protocol.PARENT_PID`); exit at once if it is already gone."""
    die_with_parent()
    expected = protocol.settings().parent_pid
    if expected is not None and os.getppid() != expected:
        os._exit(1)  # the parent died while this interpreter was starting


def stop_group(session: subprocess.Popen[bytes]) -> None:
    """SIGTERM the session's process group, SIGKILL it after a grace period, and reap the session."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(session.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        session.wait(timeout=STOP_GRACE_S)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(session.pid, signal.SIGKILL)
    session.wait()


def wait_up_to(child: subprocess.Popen[bytes], seconds: float) -> int | None:
    """`child`'s exit code if it ends within `seconds`, else None. Woken the moment it ends, by a pidfd where Linux
    offers one: `Popen.wait(timeout)` polls, up to 50 ms late, and the run waits on the session at its very end."""
    if (code := child.poll()) is not None:
        return code
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(child.pid)
        except OSError:  # reaped already (then `wait` below returns its code), or pidfds refused: polled
            pass
        else:
            try:
                ended = select.poll()
                ended.register(pidfd, select.POLLIN)
                ended.poll(seconds * 1000)
            finally:
                os.close(pidfd)
            return child.poll()
    try:
        return child.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None
