"""`neutralized`: a mutant whose guards pass because the target's `*_once` cache renders first, where the same drive
with vLLM's stock cache leaks. Its own status (never survived, never a kill, not scored), what the gate makes of it,
and how each report shows it."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace

from warnonce_guard.guards.detectors import EXCEPTION_RETAINED, OWNER_PINNED, WARNING_REPEATED
from warnonce_guard.guards.sessions import GuardRecord, GuardSession, Phase, RecordKind
from warnonce_guard.mutations.judge import judge
from warnonce_guard.mutations.records import (
    GUARDED,
    KILLED,
    NEUTRALIZED,
    SURVIVED,
    MutantVerdict,
    RunResult,
    SiteBaseline,
)
from warnonce_guard.mutations.report import junit, stryker, summary
from warnonce_guard.mutations.report.terminal import score_line
from warnonce_guard.mutations.run import gate

from tests.records_support import CPU_SITE, OPS, guard_id, sample_result, verdict

LEAKS = (EXCEPTION_RETAINED, OWNER_PINNED, WARNING_REPEATED)
SITE = "site-a"
BY_CACHE = GuardRecord("t[a]", SITE, "call", RecordKind.NEUTRALIZED, LEAKS, "passes on the target's cache ...")
ELSEWHERE = GuardRecord("t[b]", "site-b", "call", RecordKind.NEUTRALIZED, LEAKS, "passes on the target's cache ...")
PASS = GuardRecord("t[b]", "site-b", "call", RecordKind.PASSED)


def session(status: int, *records: GuardRecord) -> GuardSession:
    return GuardSession("run", Phase.MUTANT, "m__mutmut_1", status, records)


def test_guards_that_pass_by_the_cache_at_the_mutants_own_site_neutralize_it() -> None:
    judged = judge(0, session(0, BY_CACHE, PASS), site=SITE)

    assert judged.status is NEUTRALIZED
    assert (judged.reason, judged.stock, judged.killer) == (BY_CACHE.message, LEAKS, None)


def test_passing_by_the_cache_at_another_site_leaves_the_mutant_survived() -> None:
    assert judge(0, session(0, ELSEWHERE), site=SITE).status is SURVIVED


def test_a_failing_guard_kills_whatever_the_cache_did_elsewhere() -> None:
    leak = GuardRecord("t[a]", SITE, "call", RecordKind.LEAK, (WARNING_REPEATED,), "a: 1 detector(s) fired")
    judged = judge(1, session(1, leak, ELSEWHERE), site=SITE)
    assert (judged.status, judged.killer) == (KILLED, leak)


def patched_run(*mutants: MutantVerdict) -> RunResult:
    result = sample_result()
    return replace(result, baselines=[SiteBaseline(CPU_SITE, GUARDED, guard_id(CPU_SITE))], mutants=list(mutants))


def neutralized(index: int, operator: str) -> MutantVerdict:
    return verdict(CPU_SITE, index, operator, NEUTRALIZED, detectors=LEAKS, reason=BY_CACHE.message)


KILL = verdict(CPU_SITE, 3, OPS[2], KILLED)


def test_neutralized_mutants_are_not_scored_and_the_run_passes() -> None:
    result = patched_run(neutralized(1, OPS[0]), neutralized(2, OPS[1]), KILL)

    assert [m.status for m in result.scored] == [KILLED]
    assert result.score == 100.0
    assert gate(result, 100.0) == []
    assert result.cache_note is not None and "2 mutant(s)" in result.cache_note
    assert "The cache closes the class." in result.cache_note


def test_a_run_whose_every_mutant_was_neutralized_has_no_score_and_passes() -> None:
    result = patched_run(neutralized(1, OPS[0]), neutralized(2, OPS[1]))

    assert result.score is None
    assert gate(result, 100.0) == []


def test_a_survivor_beside_neutralized_mutants_fails_the_run() -> None:
    survivor = verdict(CPU_SITE, 3, OPS[2], SURVIVED)
    result = patched_run(neutralized(1, OPS[0]), survivor)

    assert gate(result, 100.0) == ["score 0.0% is below --fail-under 100%"]


def test_without_neutralized_mutants_there_is_no_cache_note() -> None:
    assert patched_run(KILL).cache_note is None


def test_every_report_shows_a_neutralized_mutant_as_neither_a_kill_nor_a_failure() -> None:
    result = patched_run(neutralized(1, OPS[0]), KILL)

    report = stryker.build(result)
    statuses = [m["status"] for f in report["files"].values() for m in f["mutants"]]
    assert sorted(statuses) == ["Ignored", "Killed"]
    assert report["config"]["neutralized"]["count"] == 1
    json.dumps(report)

    suite = ET.fromstring(junit.render(result)).find("testsuite")
    assert suite is not None and (suite.get("failures"), suite.get("skipped")) == ("0", "1")
    skipped = suite.find("testcase/skipped")
    assert skipped is not None and skipped.get("type") == NEUTRALIZED

    text = summary.render(result)
    assert "1 killed of 1 reached; 1 more neutralized by the target's cache, not scored" in text
    assert "The cache closes the class." in text
    assert f"| {NEUTRALIZED} |" in text and "with vLLM's stock cache: exception retained" in text

    assert "1 more neutralized by the target's cache, not scored" in score_line(result).plain
