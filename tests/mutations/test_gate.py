"""The gate (`mutations.run.gate`): why a run fails, one line per reason, on hand-made results; none when it passes."""

from __future__ import annotations

from dataclasses import replace

import pytest
from warnonce_guard.guards.detectors import EXCEPTION_RETAINED, OWNER_PINNED
from warnonce_guard.mutations.records import (
    GUARDED,
    KILLED,
    NOT_RUN,
    SKIPPED,
    SURVIVED,
    UNATTRIBUTED,
    MutantVerdict,
    RunResult,
    SiteBaseline,
)
from warnonce_guard.mutations.run import gate

from tests.records_support import CPU_SITE, CUDA_SITE, OPS, every_status_result, guard_id, sample_result, verdict


def guarded_run(*mutants: MutantVerdict) -> RunResult:
    """The cpu site guarded at baseline, with these mutants."""
    result = sample_result()
    return replace(result, baselines=[SiteBaseline(CPU_SITE, GUARDED, guard_id(CPU_SITE))], mutants=list(mutants))


ALL_KILLED = [verdict(CPU_SITE, i + 1, op, KILLED) for i, op in enumerate(OPS)]


def test_every_site_guarded_and_every_mutant_killed_passes() -> None:
    assert gate(guarded_run(*ALL_KILLED), 100.0) == []


def test_a_site_exposed_at_baseline_names_what_fired() -> None:
    assert gate(sample_result(), 0.0) == [f"{CUDA_SITE.id} is exposed: {EXCEPTION_RETAINED}, {OWNER_PINNED}"]


def test_a_site_unreached_at_baseline_says_why() -> None:
    problems = gate(every_status_result(), 0.0)
    assert f"{CUDA_SITE.id} is unreached: no CUDA device to steer to" in problems


def test_no_mutant_is_a_failure_never_a_vacuous_pass() -> None:
    assert gate(guarded_run(), 0.0) == [
        "no mutant was made: nothing was checked",
        "no mutant ran, so there is no score",
    ]


def test_an_unattributed_mutant_fails_the_run_as_a_bug_of_the_site_rule() -> None:
    stray = verdict(CPU_SITE, 9, OPS[0], UNATTRIBUTED, reason="not counted: changes a call no site has")
    assert gate(guarded_run(*ALL_KILLED, stray), 100.0) == [
        "1 mutant(s) change a call no discovered site has (a bug of the site rule)"
    ]


def test_a_mutant_without_a_finished_run_fails_the_run_and_is_not_scored() -> None:
    pending = replace(ALL_KILLED[0], status=NOT_RUN)
    assert gate(guarded_run(pending, *ALL_KILLED[1:]), 100.0) == [
        "1 mutant(s) have no finished run (tested again by the next run)"
    ]


def test_skipped_mutants_are_a_reason_of_their_own_only_when_nothing_else_failed() -> None:
    skipped = verdict(CUDA_SITE, 1, OPS[0], SKIPPED, reason="not counted: the site is not guarded at baseline")
    assert gate(guarded_run(*ALL_KILLED, skipped), 100.0) == ["1 mutant(s) were not run"]
    assert "were not run" not in " ".join(gate(sample_result(), 0.0))  # the exposed site's line says it


@pytest.mark.parametrize(("fail_under", "fails"), [(100.0, True), (200 / 3, False), (50.0, False), (0.0, False)])
def test_the_score_fails_the_run_only_below_fail_under(fail_under: float, fails: bool) -> None:
    survivor = replace(ALL_KILLED[1], status=SURVIVED, killed_by=None, detectors=())
    result = guarded_run(ALL_KILLED[0], survivor, ALL_KILLED[2])
    assert result.score == pytest.approx(200 / 3)
    expected = [f"score 66.7% is below --fail-under {fail_under:g}%"] if fails else []
    assert gate(result, fail_under) == expected


def test_a_flaky_test_fails_the_run_naming_it_and_what_it_did() -> None:
    result = replace(guarded_run(*ALL_KILLED), flaky={"tests/t.py::test_k": "passed when re-run on m1"})
    assert gate(result, 0.0) == ["tests/t.py::test_k is flaky: passed when re-run on m1; none of its kills is counted"]
