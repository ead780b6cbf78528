"""Every wait on the mutmut session is bounded without a wall-clock limit on a session that works: a session whose
process group uses no CPU for longer than any healthy wait is lost (`engine.watch`), and a dead generation
worker ends generation at once (`engine.generation`). The same on a real run is the slow tier's
(tests/e2e/test_faults_workers.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from warnonce_guard.common.errors import EngineFailed, ExitCode, SessionLost
from warnonce_guard.mutations import fresh, run
from warnonce_guard.mutations.engine import launch, layout, running, watch
from warnonce_guard.mutations.engine.generation import InProcessPool
from warnonce_guard.mutations.engine.watch import Watch, group_cpu_ticks, stall_limit
from warnonce_guard.mutations.workspace import Workspace

IDLE = [sys.executable, "-c", "import time; time.sleep(600)"]
BUSY = [sys.executable, "-c", "while True: pass"]


def group(argv: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, start_new_session=True)


def ended(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """For a run's own Watch (`run_session` makes it): the group's CPU time read every 0.05 s."""
    monkeypatch.setattr(watch, "SAMPLE_S", 0.05)


class Clock:
    """A clock for `Watch` (its `clock`) that moves one sampling interval each time it is read: a check every
    0.05 s of real time samples the group's CPU time each time, as if `SAMPLE_S` had passed."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += watch.SAMPLE_S
        return self.now


def test_the_cpu_time_of_a_process_group_is_read_from_proc() -> None:
    proc = group(BUSY)
    try:
        first = group_cpu_ticks(proc.pid)
        time.sleep(0.5)
        assert first is not None and group_cpu_ticks(proc.pid) > first  # type: ignore[operator]
    finally:
        ended(proc)
    assert group_cpu_ticks(proc.pid) is None  # no such group any more


def test_a_session_that_uses_no_cpu_for_longer_than_its_limit_is_lost() -> None:
    proc, clock, limit = group(IDLE), Clock(), 20 * watch.SAMPLE_S
    try:
        watching = Watch(proc, lambda: limit, clock=clock)
        with pytest.raises(SessionLost) as lost:
            for _ in range(600):  # 30 s of real time
                watching.check()
                time.sleep(0.05)
        assert limit < clock.now < 10 * limit
        assert lost.value.exit_code == ExitCode.ENVIRONMENT and "used no CPU" in str(lost.value)
    finally:
        ended(proc)


def test_a_stall_names_the_tests_that_were_running_and_the_option_that_stops_them(ws: Workspace) -> None:
    running.starting(ws.attribution, "", "tests/test_a.py::test_hangs")  # this process: alive
    running.starting(ws.attribution, "m__mutmut_1", "tests/test_a.py::test_done")
    running.ended(ws.attribution, "m__mutmut_1")
    assert running.running_now(ws.attribution) == ["tests/test_a.py::test_hangs (on the unmutated code)"]
    proc, clock = group(IDLE), Clock()
    try:
        watching = Watch(
            proc, lambda: 2 * watch.SAMPLE_S, clock=clock, running=lambda: running.running_now(ws.attribution)
        )
        with pytest.raises(SessionLost) as lost:
            for _ in range(600):
                watching.check()
                time.sleep(0.05)
        assert str(lost.value).endswith(
            " while tests/test_a.py::test_hangs (on the unmutated code) ran: a test that hangs; give --timeout "
            "SECONDS to fail a test that runs longer"
        )
    finally:
        ended(proc)


def test_a_session_that_works_is_never_lost_however_long_it_takes() -> None:
    proc, clock, limit = group(BUSY), Clock(), 10 * watch.SAMPLE_S
    try:
        watching = Watch(proc, lambda: limit, clock=clock)
        while clock.now < 3 * limit:  # three times its limit, a check every 0.05 s
            watching.check()
            time.sleep(0.05)
    finally:
        ended(proc)


def test_the_limit_is_twice_mutmuts_own_time_limit_for_the_measured_guards_and_never_below_the_floor(
    ws: Workspace,
) -> None:
    assert stall_limit(ws) == watch.STALL_FLOOR_S  # nothing measured yet
    layout.stats(ws).parent.mkdir(parents=True)
    stats = {"tests_by_mangled_function_name": {}, "duration_by_test": {"a": 6.0, "b": 4.0}, "stats_time": 1.0}
    layout.stats(ws).write_text(json.dumps(stats), encoding="utf-8")
    assert stall_limit(ws) == 2 * (10.0 + 5.0) * 15.0  # (estimate + timeout_constant) * timeout_multiplier
    layout.stats(ws).write_text("{", encoding="utf-8")
    assert stall_limit(ws) == watch.STALL_FLOOR_S


def test_a_session_that_stopped_working_ends_the_run_with_exit_13_and_is_stopped(
    ws: Workspace, quick: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[subprocess.Popen[bytes]] = []

    def start(work_root: Path) -> subprocess.Popen[bytes]:
        # a session that never generates, and uses no CPU: a deadlock
        started.append(subprocess.Popen(IDLE, start_new_session=True, stdin=subprocess.PIPE))
        return started[0]

    monkeypatch.setattr(launch, "start_session", start)
    monkeypatch.setattr(fresh, "stall_limit", lambda ws: 1.0)
    try:
        with pytest.raises(EngineFailed, match="used no CPU"), run.started_session(ws, "run1", []) as idle:
            fresh.run_session(ws, idle, "run1", [], [], [])  # waiting for its generation
        assert started[0].poll() is not None  # stopped with its group
    finally:
        ended(started[0])


# --- generation: in the generator's own process ---------------------------------------------------------------


def test_generation_gives_every_result_in_order_in_this_process() -> None:
    with InProcessPool(processes=2) as pool:
        assert list(pool.imap_unordered(lambda x: (x * x, os.getpid()), range(3))) == [
            (0, os.getpid()), (1, os.getpid()), (4, os.getpid())
        ]  # fmt: skip
