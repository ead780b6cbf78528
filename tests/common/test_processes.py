"""Processes the run forks while staging and discovering die with it and stay quiet on Ctrl-C; the session's
process group is stopped whole, by force when it will not stop."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from warnonce_guard.common import processes

_PR_GET_PDEATHSIG = 2


def _child_report() -> dict[str, object]:
    """Fork; the child reports its SIGINT/SIGTERM handlers, blocked signals and parent-death signal."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        sig = ctypes.c_int(0)
        ctypes.CDLL(None, use_errno=True).prctl(_PR_GET_PDEATHSIG, ctypes.byref(sig), 0, 0, 0)
        found = {
            "sigint": str(signal.getsignal(signal.SIGINT)),
            "sigterm": str(signal.getsignal(signal.SIGTERM)),
            "blocked": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
            "pdeathsig": sig.value,
        }
        os.write(write, json.dumps(found).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        found = json.loads(pipe.read())
    os.waitpid(pid, 0)
    return found


def raising_handler(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # as the command line's handlers do


@pytest.fixture
def raising_handlers():
    previous = {sig: signal.signal(sig, raising_handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in previous.items():
        signal.signal(sig, handler)


@pytest.mark.usefixtures("raising_handlers")
def test_a_helper_forked_while_staging_dies_with_the_run_and_leaves_ctrl_c_to_it() -> None:
    with processes.helpers_bound_to_run():
        inside = _child_report()
    outside = _child_report()

    assert inside == {
        "sigint": str(signal.SIG_IGN),  # the run reports Ctrl-C, once
        "sigterm": str(signal.SIG_DFL),  # how the pool stops its workers
        "blocked": [],
        "pdeathsig": int(signal.SIGKILL),
    }
    assert outside["sigint"] == str(raising_handler) and outside["pdeathsig"] == 0  # only inside the block


@pytest.mark.usefixtures("raising_handlers")
def test_ctrl_c_while_helpers_fork_takes_effect_when_the_block_ends() -> None:
    done = []
    with pytest.raises(KeyboardInterrupt), processes.helpers_bound_to_run():
        os.kill(os.getpid(), signal.SIGINT)  # lands while a helper could be between fork and its hook
        done.append("the block finished")
    assert done == ["the block finished"]
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # let in again


@pytest.mark.parametrize("order", [(signal.SIGTERM, signal.SIGINT), (signal.SIGINT, signal.SIGTERM)])
def test_the_first_of_two_signals_while_helpers_run_is_the_one_that_takes_effect(
    order: tuple[signal.Signals, signal.Signals],
) -> None:
    """A signal mask would hand them over lowest number first: SIGTERM then Ctrl-C became Ctrl-C's 130."""
    raised = []

    def handler(signum: int, frame: object) -> None:  # as the command line's: only the first one raises
        raised.append(signal.Signals(signum))
        if len(raised) == 1:
            raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, handler) for sig in order}
    try:
        with pytest.raises(KeyboardInterrupt), processes.helpers_bound_to_run():
            for sig in order:
                os.kill(os.getpid(), sig)
            time.sleep(0.05)
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
    assert raised[0] == order[0]


# --- stopping the session's process group -----------------------------------------------------------------

GROUP = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # a worker of the session's
print(child.pid, flush=True)
time.sleep(60)
"""
STUBBORN = """
import signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a session that does not stop when asked
print("ready", flush=True)
time.sleep(60)
"""


def started(source: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", source], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None
    return proc


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as stat:  # a zombie waiting for its parent to reap it is gone too
            return stat.read().split(")")[-1].split()[0] == "Z"
    except (ProcessLookupError, FileNotFoundError):
        return True


def test_stopping_the_session_ends_its_whole_group_and_reaps_it() -> None:
    proc = started(GROUP)
    worker = int(proc.stdout.readline())  # type: ignore[union-attr]

    processes.stop_group(proc)

    assert proc.returncode == -signal.SIGTERM
    deadline = time.monotonic() + 10
    while not gone(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(worker)


def test_a_session_that_ignores_sigterm_is_killed_after_the_grace_period(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "STOP_GRACE_S", 0.2)
    proc = started(STUBBORN)
    assert proc.stdout.readline() == "ready\n"  # type: ignore[union-attr]

    processes.stop_group(proc)

    assert proc.returncode == -signal.SIGKILL


def test_stopping_a_session_that_already_ended_only_reaps_it() -> None:
    proc = started("pass")
    proc.wait()
    processes.stop_group(proc)  # its group is gone: no error, nothing signalled
    assert proc.returncode == 0
