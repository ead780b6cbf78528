"""The session's process group is stopped whole, by force when it will not stop; a process that imported with the
cycle collector off turns it on with what it imported frozen."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time

import pytest
from warnonce_guard.common import processes

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


def test_waiting_up_to_a_time_returns_the_code_when_the_child_ends_not_when_the_time_is_up() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time, sys; time.sleep(0.3); sys.exit(3)"])
    started = time.monotonic()
    assert processes.wait_up_to(child, 30) == 3
    assert time.monotonic() - started < 10  # woken by the exit, not by the 30 s
    assert processes.wait_up_to(child, 30) == 3  # reaped: its code again, at once


def test_waiting_up_to_a_time_on_a_child_that_goes_on_returns_none_then() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        started = time.monotonic()
        assert processes.wait_up_to(child, 0.2) is None
        assert time.monotonic() - started >= 0.2
    finally:
        child.kill()
        child.wait()


def test_waiting_without_pidfds_polls_as_popen_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "pidfd_open")
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(4)"])
    assert processes.wait_up_to(child, 30) == 4


def test_the_collector_comes_back_on_with_what_was_made_while_it_was_off_frozen() -> None:
    kept = [object(), [[]]]  # made before: tracked objects the freeze takes
    gc.disable()
    try:
        processes.collect_from_here()
        assert gc.isenabled() and gc.get_freeze_count() >= len(gc.get_referents(kept)) > 0
    finally:
        gc.unfreeze()
        gc.enable()


def test_a_process_whose_collector_was_never_off_is_left_as_it_is() -> None:
    frozen = gc.get_freeze_count()
    processes.collect_from_here()  # a test calling `mutate` in: nothing of its process is frozen
    assert gc.isenabled() and gc.get_freeze_count() == frozen
