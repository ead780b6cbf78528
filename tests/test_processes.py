"""Processes the run forks while staging and discovering die with it and stay quiet on Ctrl-C."""

from __future__ import annotations

import ctypes
import json
import os
import signal

import pytest
from warnonce_guard.mutations import processes

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
