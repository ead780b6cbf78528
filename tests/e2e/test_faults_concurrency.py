"""Fault injection: two runs in one work directory. One is refused at once (exit 4, one line) and touches
nothing; the other ends with the clean run's verdicts; a run afterwards does too, re-testing no mutant."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from warnonce_guard.common.errors import ExitCode

from tests.faults import (
    CleanRun,
    RunDirs,
    TreeShape,
    cli_args,
    held,
    one_line_error,
    read_verdicts,
    rerun_of,
    run,
    start,
    survivors,
    wait_until,
)

pytestmark = pytest.mark.slow

BUSY = "another warnonce-guard run is using it"


@pytest.fixture(scope="module")
def fault_shape() -> TreeShape:
    return TreeShape(guard_sleep_s=0.3, holdable=True)  # runs long enough to overlap; or held as long as needed


def finished_sessions(dirs: RunDirs) -> dict[Path, int]:
    return {path: path.stat().st_mtime_ns for path in dirs.glob("attribution/mutants/*.json")}


def then_a_rerun_retests_nothing(dirs: RunDirs, viewer: Path, clean: CleanRun) -> None:
    tested = finished_sessions(dirs)
    again = rerun_of(dirs, viewer)
    assert again.returncode == 0, again.stdout + again.stderr
    assert read_verdicts(dirs.out) == clean.verdicts
    assert finished_sessions(dirs) == tested and len(tested) == len(clean.verdicts.mutants)


def test_two_runs_started_together(
    untouched_user_tree: Path,
    small_viewer: Path,
    clean_run: CleanRun,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    dirs = RunDirs(untouched_user_tree, tmp_path / "report", tmp_path / "work")  # the same --out too
    args = cli_args(dirs.tree, dirs.out, dirs.work, small_viewer)
    runs = [start(args, tmp_path, tmp_path / f"logs{i}") for i in (1, 2)]
    codes = [started.wait() for started in runs]

    assert sorted(codes) == [0, ExitCode.ENVIRONMENT], [started.err for started in runs]
    refused = runs[codes.index(ExitCode.ENVIRONMENT)]
    assert BUSY in one_line_error(refused.err) and refused.out == ""
    assert read_verdicts(dirs.out) == clean_run.verdicts
    assert survivors(dirs.work) == []
    then_a_rerun_retests_nothing(dirs, small_viewer, clean_run)
    record_property("outcome", f"exits {codes}; refused: {refused.err.strip()}")


def test_a_run_started_while_another_tests_mutants_is_refused_at_once(
    untouched_user_tree: Path,
    small_viewer: Path,
    clean_run: CleanRun,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    dirs = RunDirs(untouched_user_tree, tmp_path / "report", tmp_path / "work")
    hold = tmp_path / "hold"  # the first run's mutants' guards wait while it exists: it tests mutants meanwhile
    args = cli_args(dirs.tree, dirs.out, dirs.work, small_viewer)
    first = start(args, tmp_path, tmp_path / "logs1", env=held(hold))
    try:
        assert wait_until(hold.with_name("hold.held").exists, first.proc), f"the first run ended: {first.err}"

        began = time.monotonic()
        second = run(args, cwd=tmp_path)
        refused_after = time.monotonic() - began
        assert first.proc.poll() is None, "the first run ended before the second was refused: not a real overlap"
    finally:
        hold.unlink()

    assert second.returncode == ExitCode.ENVIRONMENT, second.stdout + second.stderr
    assert BUSY in one_line_error(second.stderr)
    assert refused_after < 5.0  # at once, not after waiting for the lock
    assert first.wait() == 0, first.err
    record_property("outcome", f"second exit {second.returncode} after {refused_after:.2f} s; first exit 0")
    assert read_verdicts(dirs.out) == clean_run.verdicts
    then_a_rerun_retests_nothing(dirs, small_viewer, clean_run)
