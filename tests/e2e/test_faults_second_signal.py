"""Fault injection: a second signal (INT or TERM) at each moment of a run, soon or late after the first: the run
ends with the first one's code and one line, and a rerun finds the clean run's verdicts."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.faults import (
    ATTEMPTS,
    BIG_TREE,
    NAPPING,
    CleanRun,
    TreeShape,
    answers_stop_signals,
    ended_with_one_line,
    fresh_dirs,
    in_phase,
    read_verdicts,
    rerun_of,
    send,
    started_run,
    wait_until,
)

pytestmark = [pytest.mark.slow, pytest.mark.long]


@pytest.fixture(scope="module")
def fault_shape() -> TreeShape:
    return BIG_TREE


ORDERS = [(signal.SIGINT, signal.SIGINT), (signal.SIGTERM, signal.SIGINT), (signal.SIGINT, signal.SIGTERM)]
MOMENTS = ["imports", "staging", "naming", "mutants", "report"]
GAPS_S = [0.02, 0.4]
# Every order at every moment, once, with the gap alternating: every moment and every order meets both gaps (the 30
# of the whole product cost the slow tier 75 worker seconds more; the nightly fault campaign draws the moment and the
# gap of its double signals at random: `nox -s faults`).
CASES = [
    pytest.param(
        order, moment, GAPS_S[(i + j) % 2], id=f"{'-'.join(s.name for s in order)}-{moment}-{GAPS_S[(i + j) % 2]}"
    )
    for i, order in enumerate(ORDERS)
    for j, moment in enumerate(MOMENTS)
]


def test_the_cases_meet_every_order_moment_and_gap_pair() -> None:
    pairs = {(order, moment) for order, moment, _ in (case.values for case in CASES)}
    assert pairs == {(order, moment) for order in ORDERS for moment in MOMENTS}
    for index in (0, 1):
        met = {(case.values[index], case.values[2]) for case in CASES}
        assert met == {(value, gap) for value in (ORDERS, MOMENTS)[index] for gap in GAPS_S}


@pytest.mark.parametrize(("order", "moment", "gap_s"), CASES)
def test_a_second_signal_at_any_moment_ends_the_run_with_the_first_ones_code_and_one_line(
    order: tuple[signal.Signals, signal.Signals],
    moment: str,
    gap_s: float,
    untouched_user_tree: Path,
    small_viewer: Path,
    report_viewer: Path,
    clean_run: CleanRun,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    """A second Ctrl-C as "interrupted" was printed ended with -2 (17 of 20) or exit 1 and a traceback; TERM then
    INT said 130. A later signal now ends the process at once with the first one's code (the mutmut session dies
    with it), or finds it already ending: either way one line, the first code, and a rerun that finds the clean
    run's verdicts."""
    first, second = order
    viewer = report_viewer if moment == "report" else small_viewer
    misses = []
    for dirs in fresh_dirs(tmp_path, untouched_user_tree, moment):
        started = started_run(dirs, viewer, naps=moment in NAPPING)
        if moment == "imports":
            reached = wait_until(lambda pid=started.proc.pid: answers_stop_signals(pid), started.proc, timeout=30)
        else:
            reached = wait_until(lambda dirs=dirs: in_phase(moment, dirs), started.proc)
        if reached:
            send(started, first)
            time.sleep(gap_s)
            send(started, second)
            break
        started.wait()
        misses.append(f"exit {started.proc.returncode} before {moment} was seen")
        if len(misses) == ATTEMPTS:
            pytest.skip(f"could not reach {moment} in {ATTEMPTS} attempts: {'; '.join(misses)}")
    ended_with_one_line(started, first, dirs)
    record_property("outcome", started.err.strip())
    if moment in ("imports", "staging"):
        return  # nothing kept yet: the rerun is a clean run
    rerun = rerun_of(dirs, small_viewer)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert read_verdicts(dirs.out) == clean_run.verdicts
