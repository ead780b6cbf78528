"""Fault injection: the report folder. Two runs with their own work directories and one --out: one is refused at
once (exit 11, one line) and the other's whole report is there."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from faults import (
    CleanRun,
    RunDirs,
    TreeShape,
    cli_args,
    in_phase,
    one_line_error,
    read_verdicts,
    run,
    start,
    survivors,
    wait_until,
)
from warnonce_guard.guards.errors import ExitCode
from warnonce_guard.mutations.report import FILES, atomic

pytestmark = pytest.mark.slow

WRITING_THERE = "another warnonce-guard run is writing its report there"


@pytest.fixture(scope="module")
def fault_shape() -> TreeShape:
    return TreeShape(guard_sleep_s=0.3)  # runs long enough to overlap


def beside(out: Path) -> list[str]:
    """What is next to --out that this tool put there: its lock file, and nothing half-written."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def test_two_runs_with_their_own_work_directories_and_one_out_started_together(
    untouched_user_tree: Path,
    small_viewer: Path,
    clean_run: CleanRun,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    out, works = tmp_path / "report", [tmp_path / "work1", tmp_path / "work2"]
    runs = [
        start(cli_args(untouched_user_tree, out, work, small_viewer), tmp_path, tmp_path / f"logs{i}")
        for i, work in enumerate(works)
    ]
    codes = [started.wait() for started in runs]

    assert sorted(codes) == [0, ExitCode.WORK_DIR_BUSY], [started.err for started in runs]
    loser = codes.index(ExitCode.WORK_DIR_BUSY)
    said = one_line_error(runs[loser].err)
    assert said == (
        f"warnonce-guard: error: --out {out}: {WRITING_THERE}; wait for it to finish or pass another --out"
    )
    assert runs[loser].out == ""
    # --out is the winner's whole report; nothing half-written beside it, no process left
    assert read_verdicts(out) == clean_run.verdicts
    assert sorted(p.name for p in out.iterdir()) == sorted([*FILES, ".warnonce-guard"])
    assert beside(out) == [atomic.lock_path(out).name]
    assert survivors(works[0]) == [] and survivors(works[1]) == []

    again = run(cli_args(untouched_user_tree, out, works[loser], small_viewer), cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert read_verdicts(out) == clean_run.verdicts
    record_property("outcome", f"exits {codes}; refused: {said}")


def test_a_run_started_while_another_tests_its_mutants_for_the_same_out_is_refused_at_once(
    untouched_user_tree: Path, small_viewer: Path, clean_run: CleanRun, tmp_path: Path
) -> None:
    dirs = RunDirs(untouched_user_tree, tmp_path / "report", tmp_path / "work1")
    first = start(cli_args(dirs.tree, dirs.out, dirs.work, small_viewer), tmp_path, tmp_path / "logs1")
    if not wait_until(lambda: in_phase("mutants", dirs), first.proc):
        pytest.skip(f"the first run ended (exit {first.wait()}) before its mutants were seen")

    began = time.monotonic()
    second = run(cli_args(dirs.tree, dirs.out, tmp_path / "work2", small_viewer), cwd=tmp_path)
    refused_after = time.monotonic() - began

    assert second.returncode == ExitCode.WORK_DIR_BUSY, second.stdout + second.stderr
    assert WRITING_THERE in one_line_error(second.stderr)
    assert first.proc.poll() is None, "the first run ended before the second was refused: not a real overlap"
    assert refused_after < 5.0  # at once, not after waiting for the lock
    assert first.wait() == 0, first.err
    assert read_verdicts(dirs.out) == clean_run.verdicts

