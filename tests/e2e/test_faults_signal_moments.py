"""Fault injection: a signal at any instant of a run's first second (the command line's imports), and at any moment
of making the mutants: its exit code and one line, never a traceback (tests/e2e/test_faults_interrupt.py hits each
phase; the big tree's phases are long enough to aim at)."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.faults import (
    ATTEMPTS,
    BIG_TREE,
    MAKING,
    CleanRun,
    TreeShape,
    answers_stop_signals,
    ended_with_one_line,
    fresh_dirs,
    in_phase,
    send,
    started_run,
    stopped_in,
    wait_until,
)

pytestmark = [pytest.mark.slow, pytest.mark.long]


@pytest.fixture(scope="module")
def fault_shape() -> TreeShape:
    return BIG_TREE


@pytest.mark.parametrize("delay_s", [0.0, 0.002, 0.01, 0.03, 0.1, 0.3, 0.6, 1.0])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_signal_from_the_first_instruction_on_is_its_exit_code_and_one_line(
    sig: signal.Signals,
    delay_s: float,
    untouched_user_tree: Path,
    small_viewer: Path,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    """The first tenth of a second (the command line's imports) was a KeyboardInterrupt traceback with -2 or 1,
    and SIGTERM a silent -15. The interpreter's own start-up, before the entry module catches SIGTERM, is not
    ours to answer (README): the delay counts from then."""
    dirs = next(fresh_dirs(tmp_path, untouched_user_tree, f"{sig.name}-{delay_s}"))
    started = started_run(dirs, small_viewer)
    assert wait_until(lambda: answers_stop_signals(started.proc.pid), started.proc, timeout=30)
    time.sleep(delay_s)
    send(started, sig)
    ended_with_one_line(started, sig, dirs)
    record_property("outcome", started.err.strip())


@pytest.mark.parametrize(
    ("sig", "fraction"),
    [(signal.SIGINT, f) for f in (0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.9)]
    + [(signal.SIGTERM, f) for f in (0.2, 0.5, 0.8)],
    ids=lambda v: v.name if isinstance(v, signal.Signals) else f"{v:.0%}",
)
def test_a_signal_at_any_moment_of_making_the_mutants_is_one_line(
    sig: signal.Signals,
    fraction: float,
    untouched_user_tree: Path,
    small_viewer: Path,
    clean_run: CleanRun,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    """Making the mutants parses the site files with libcst, whose position recording turned the interrupt into a
    KeyError: exit 70 and megabytes of traceback. Several moments of it, not just its start: each a fraction of how
    long the clean run was seen making and naming them, so that a faster machine moves the moments with it; a signal
    that landed after naming is retried, aimed within how long that attempt made them if it was quicker (the clean
    run may have been measured on a busier machine), and never passes as a hit."""
    window = clean_run.making_s
    assert window > 0.5, f"making and naming the mutants was seen for {window:.2f} s only: too short to aim at"
    misses = []
    for dirs in fresh_dirs(tmp_path, untouched_user_tree, "making"):
        started = started_run(dirs, small_viewer)
        assert wait_until(lambda dirs=dirs: in_phase(MAKING[0], dirs), started.proc, timeout=120)
        began, making = time.monotonic(), lambda dirs=dirs: any(in_phase(phase, dirs) for phase in MAKING)
        while (lasted := time.monotonic() - began) < fraction * window and making():
            time.sleep(0.003)
        quicker = lasted < fraction * window  # the mutants were made before the moment came
        send(started, sig)
        ended_with_one_line(started, sig, dirs)
        if any(stopped_in(phase, dirs) for phase in MAKING):
            break
        misses.append(f"landed after naming ({fraction:.0%} of {window:.2f} s)")
        window = lasted if quicker else window
        if len(misses) == ATTEMPTS:
            pytest.fail(f"could not land {sig.name} while the mutants were made in {ATTEMPTS} attempts: {misses}")
    record_property("outcome", f"{started.err.strip()}; attempts {len(misses) + 1}")
