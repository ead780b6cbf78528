"""Processes the run forks while staging and discovering die with it and stop quietly on Ctrl-C."""

from __future__ import annotations

import ctypes
import json
import os
import signal

from mutations import run

_PR_GET_PDEATHSIG = 2


def _child_report(read: int, write: int) -> dict[str, object]:
    """Fork; the child reports its SIGINT/SIGTERM handlers and parent-death signal through a pipe."""
    pid = os.fork()
    if pid == 0:
        os.close(read)
        sig = ctypes.c_int(0)
        ctypes.CDLL(None, use_errno=True).prctl(_PR_GET_PDEATHSIG, ctypes.byref(sig), 0, 0, 0)
        found = {
            "sigint_default": signal.getsignal(signal.SIGINT) == signal.SIG_DFL,
            "sigterm_default": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL,
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


def test_a_helper_forked_while_staging_dies_with_the_run_and_stops_quietly() -> None:
    previous = {sig: signal.signal(sig, raising_handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with run._helpers_die_with_run():
            inside = _child_report(*os.pipe())
        outside = _child_report(*os.pipe())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    assert inside == {"sigint_default": True, "sigterm_default": True, "pdeathsig": int(signal.SIGKILL)}
    assert outside == {"sigint_default": False, "sigterm_default": False, "pdeathsig": 0}  # only inside the block
