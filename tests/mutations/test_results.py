"""The verdict rule: killed or survived only with mutmut's exit code and a finished guard record that agree;
and a verdict per named mutant, counted only at a site guarded at baseline."""

from __future__ import annotations

from dataclasses import replace

import pytest
from warnonce_guard.guards.detectors import EXCEPTION_RETAINED, OWNER_PINNED
from warnonce_guard.guards.sessions import GuardRecord, GuardSession, Phase, RecordKind
from warnonce_guard.mutations.engine.attempts import STOPPED_CODES
from warnonce_guard.mutations.engine.status import EXIT_CODE_STATUS
from warnonce_guard.mutations.identify import NamedMutant
from warnonce_guard.mutations.judge import LIVE_BUT_PASSED, judge, retest, site_baselines, verdicts
from warnonce_guard.mutations.records import (
    CRASHED,
    EXPOSED,
    GUARDED,
    KILLED,
    NO_TESTS,
    NOT_RUN,
    SKIPPED,
    SURVIVED,
    TIMEOUT,
    UNATTRIBUTED,
    UNREACHED,
    MutantVerdict,
    RunResult,
    SiteBaseline,
)
from warnonce_guard.rule.sites import sites_in_source

from tests.toy import INTERFACE

SITE_A, SITE_B = "a.py::f::vllm._C#0", "a.py::f::vllm._C#1"
LEAK = GuardRecord("t[a]", SITE_A, "call", RecordKind.LEAK, (EXCEPTION_RETAINED,), "a: 1 detector(s) fired")
PASS = GuardRecord("t[a]", SITE_A, "call", RecordKind.PASSED)
UNREACH = GuardRecord("t[a]", SITE_A, "call", RecordKind.UNREACHED, (), "a unreached: no logging call")
ERROR = GuardRecord("t[a]", SITE_A, "call", RecordKind.ERROR, (), "ImportError: boom")


def session(status: int, *records: GuardRecord, mutant: str = "m__mutmut_1") -> GuardSession:
    phase = Phase.MUTANT if "__mutmut_" in mutant else Phase.BASELINE
    return GuardSession("run", phase, mutant, status, records)


def test_a_kill_needs_the_exit_code_and_a_finished_session_with_a_detector() -> None:
    judged = judge(1, session(1, PASS, LEAK))
    assert (judged.status, judged.killer) == (KILLED, LEAK)
    assert judged.reason == LEAK.message


def test_a_survivor_needs_the_exit_code_and_a_finished_passing_session() -> None:
    assert judge(0, session(0, PASS)).status is SURVIVED


@pytest.mark.parametrize("code", [0, 1])
def test_an_exit_code_without_a_finished_session_is_not_a_verdict(code: int) -> None:
    judged = judge(code, None)
    assert judged.status is NOT_RUN and "no finished guard record" in judged.reason


def test_an_exit_code_the_session_contradicts_is_not_a_verdict() -> None:
    # the Ctrl-C case: mutmut stored 0 for a mutant whose last finished session failed
    judged = judge(0, session(1, LEAK))
    assert judged.status is NOT_RUN and "says 1" in judged.reason


@pytest.mark.parametrize("code", sorted(STOPPED_CODES))
def test_a_run_stopped_from_outside_is_tested_again(code: int) -> None:
    assert judge(code, session(1, LEAK)).status is NOT_RUN


def test_a_failure_without_a_detector_is_a_crash_not_a_kill() -> None:
    for record in (UNREACH, ERROR):
        judged = judge(1, session(1, record))
        assert judged.status is CRASHED and record.message in judged.reason and judged.killer is None


@pytest.mark.parametrize(
    ("code", "status"),
    [(None, NOT_RUN), (5, NO_TESTS), (33, NO_TESTS), (3, CRASHED), (2, NOT_RUN), (-11, CRASHED), (-6, CRASHED)],
)
def test_other_exit_codes(code: int | None, status: str) -> None:
    assert judge(code, session(1, LEAK)).status == status


# --- a worker killed from outside or past its time limit ------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status"), [(-9, CRASHED), (-10, CRASHED), (137, CRASHED), (36, TIMEOUT), (-24, TIMEOUT), (152, TIMEOUT)]
)
def test_a_worker_killed_from_outside_or_timed_out_once_is_not_a_verdict_and_is_tested_again(
    code: int, status: str
) -> None:
    once = judge(code, None, attempts=1)
    assert once.status is NOT_RUN and "1 of the 2 attempts" in once.reason
    assert judge(code, None, attempts=0).status is NOT_RUN  # a code the ledger does not back (lost, damaged)
    assert retest({"m": code}, {}, {"m": (code,)}) == {"m": once.reason}  # cleared before the next run


@pytest.mark.parametrize(
    ("code", "status"), [(-9, CRASHED), (-10, CRASHED), (137, CRASHED), (36, TIMEOUT), (-24, TIMEOUT), (152, TIMEOUT)]
)
def test_the_same_abnormal_outcome_on_two_attempts_in_a_row_is_the_verdict(code: int, status: str) -> None:
    twice = judge(code, None, attempts=2)
    assert twice.status is status and "2 attempts" in twice.reason and twice.killer is None
    assert retest({"m": code}, {}, {"m": (code, code)}) == {}


def test_a_segfault_or_abort_of_the_worker_is_its_own_crash_at_once() -> None:
    for code in (-11, -6, -7, -8, -4):  # SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL: raised by what it ran
        assert judge(code, None).status is CRASHED


@pytest.mark.parametrize("code", [-9, 36])
def test_a_run_whose_only_abnormal_attempt_is_a_crash_or_timeout_is_not_final(code: int) -> None:
    named = [NamedMutant(MUTANT, SITE.id, "live-arg", "repr(e)", "e")]
    baseline = [SiteBaseline(SITE, GUARDED, "t")]

    def result(attempts: tuple[int, ...]) -> RunResult:
        mutants = verdicts(named, [SITE], baseline, {MUTANT: code}, {}, {}, {MUTANT: attempts})
        return RunResult("9.9.9", None, "toy", {}, [], baseline, mutants)

    assert not result((code,)).final and result((code,)).count(NOT_RUN) == 1  # never stored: the next run retests
    assert result((code, code)).final and result((code, code)).score == 0.0


# --- killed-by: one fixed rule ----------------------------------------------------------------------------


def test_the_killer_is_the_guard_of_the_mutants_own_site_when_it_fired_whatever_ran_first() -> None:
    other = GuardRecord("t[a-b]", SITE_B, "call", RecordKind.LEAK, (OWNER_PINNED,), "b fired")
    for records in ((other, LEAK), (LEAK, other)):
        assert judge(1, session(1, *records), site=SITE_A).killer == LEAK
        assert judge(1, session(1, *records), site=SITE_B).killer == other


def test_without_its_own_sites_guard_firing_the_killer_is_the_first_by_node_id() -> None:
    b = GuardRecord("t[b]", SITE_B, "call", RecordKind.LEAK, (OWNER_PINNED,), "b fired")
    c = GuardRecord("t[c]", "c", "call", RecordKind.LEAK, (OWNER_PINNED,), "c fired")
    for records in ((c, b, PASS), (PASS, b, c)):
        assert judge(1, session(1, *records), site=SITE_A).killer == b


def test_every_exit_code_mutmut_knows_gets_a_status() -> None:
    for code in EXIT_CODE_STATUS:
        assert judge(code, session(1, LEAK)).status in set(type(KILLED))


def test_retest_lists_codes_no_verdict_stands_on_and_leaves_the_rest() -> None:
    codes = {"m1": 1, "m2": 0, "m3": None, "m4": 1, "m5": 36}
    sessions = {"m1": session(1, LEAK), "m2": session(1, LEAK), "m4": session(1, LEAK)}
    del sessions["m4"]
    assert sorted(retest(codes, sessions, {"m5": (36, 36)})) == ["m2", "m4"]


class FakeSite:
    def __init__(self, id: str, form: str = "eager") -> None:
        self.id = id
        self.form = form


def test_baselines_guarded_exposed_and_unreached() -> None:
    sites = [FakeSite(SITE_A), FakeSite(SITE_B), FakeSite("c")]
    unreached_b = GuardRecord("t[b]", SITE_B, "call", RecordKind.UNREACHED, (), "b unreached")
    sessions = [session(1, PASS, unreached_b, mutant=""), session(1, LEAK, mutant="stats")]

    got = {b.site.id: (b.status, b.detectors, b.detail) for b in site_baselines(sites, sessions)}  # type: ignore[arg-type]

    assert got[SITE_A] == (EXPOSED, (EXCEPTION_RETAINED,), LEAK.message)  # a failure anywhere wins
    assert got[SITE_B] == (UNREACHED, (), "b unreached")
    assert got["c"][0] is UNREACHED and "did not run" in got["c"][2]
    assert site_baselines([FakeSite(SITE_A)], [session(0, PASS, mutant="")])[0].status is GUARDED  # type: ignore[list-item]


def test_a_live_site_is_exposed_at_baseline_though_its_guard_passed() -> None:
    (baseline,) = site_baselines([FakeSite(SITE_A, form="live")], [session(0, PASS, mutant="")])  # type: ignore[list-item]
    assert (baseline.status, baseline.detectors, baseline.detail) == (EXPOSED, (), LIVE_BUT_PASSED)


# --- verdicts: one per named mutant -----------------------------------------------------------------------

FILE = "vllm/platforms/interface.py"
(SITE,) = sites_in_source(INTERFACE, FILE, "vllm.platforms.interface")
MUTANT = "vllm.platforms.interface.xǁPlatformǁimport_kernels__mutmut_1"
KILLING = GuardRecord(f"t[{SITE.id}]", SITE.id, "call", RecordKind.LEAK, (OWNER_PINNED,), "1 detector(s) fired")


def one_verdict(named: NamedMutant, baseline: SiteBaseline | None) -> MutantVerdict:
    sessions = {MUTANT: session(1, KILLING, mutant=MUTANT)}
    (verdict,) = verdicts([named], [SITE], [baseline] if baseline else [], {MUTANT: 1}, {MUTANT: 2.0}, sessions)
    return verdict


@pytest.mark.parametrize("status", [EXPOSED, UNREACHED])
def test_a_mutant_at_a_site_not_guarded_at_baseline_is_skipped_whatever_its_guard_said(status: str) -> None:
    verdict = one_verdict(NamedMutant(MUTANT, SITE.id, "live-arg", "repr(e)", "e"), SiteBaseline(SITE, status, "t"))
    assert (verdict.status, verdict.reason) == (SKIPPED, f"not counted: the site is {status} at baseline")
    assert verdict.killed_by is None


def test_a_mutant_at_a_site_without_a_baseline_is_skipped_as_not_guarded() -> None:
    verdict = one_verdict(NamedMutant(MUTANT, SITE.id, "live-arg", "repr(e)", "e"), None)
    assert (verdict.status, verdict.reason) == (SKIPPED, "not counted: the site is not guarded at baseline")


def test_an_unattributed_mutant_is_shown_at_its_own_call_and_never_judged() -> None:
    stand_in = replace(SITE, kernel_module="unattributed@13", form="unknown")
    why = f"{FILE}:13: Platform.import_kernels changes a call no discovered site has"
    named = NamedMutant(MUTANT, stand_in.id, "live-arg", "repr(e)", "e", why, stand_in.to_json())

    verdict = one_verdict(named, SiteBaseline(SITE, GUARDED, "t"))

    assert (verdict.status, verdict.reason, verdict.site) == (UNATTRIBUTED, f"not counted: {why}", stand_in)
    assert verdict.killed_by is None  # its exit code and guard record are not a kill


def test_a_judged_mutant_keeps_its_killer_the_guards_that_ran_and_its_duration() -> None:
    verdict = one_verdict(NamedMutant(MUTANT, SITE.id, "live-arg", "repr(e)", "e"), SiteBaseline(SITE, GUARDED, "t"))
    assert (verdict.status, verdict.killed_by, verdict.detectors) == (KILLED, KILLING.test, (OWNER_PINNED,))
    assert (verdict.covered_by, verdict.duration_s, verdict.original, verdict.replacement) == (
        (KILLING.test,), 2.0, "repr(e)", "e"
    )  # fmt: skip
