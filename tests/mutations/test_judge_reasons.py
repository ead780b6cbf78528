"""Every verdict of the judge (`mutations.judge`) says why in its own words and carries what the report shows with it:
the guard of a site's baseline, the killer a flaky kill keeps, the site and test a suite's verdict names."""

from __future__ import annotations

import pytest
from warnonce_guard.guards.detectors import EXCEPTION_RETAINED
from warnonce_guard.guards.sessions import GuardRecord, GuardSession, Phase, RecordKind
from warnonce_guard.mutations.engine.confirm import Check, Ledger
from warnonce_guard.mutations.engine.state import NO_TESTS_CODE
from warnonce_guard.mutations.identify import NamedMutant
from warnonce_guard.mutations.judge import (
    LIVE_BUT_PASSED,
    Judgement,
    confirmed,
    judge,
    judge_in_suite,
    killed_by,
    site_baselines,
    verdicts,
)
from warnonce_guard.mutations.records import (
    CRASHED,
    EXPOSED,
    FLAKY,
    GUARDED,
    KILLED,
    NO_TESTS,
    NOT_RUN,
    SURVIVED,
    TIMEOUT,
    UNREACHED,
    SiteBaseline,
)
from warnonce_guard.mutations.suite import SuiteBaseline
from warnonce_guard.rule.sites import sites_in_source

from tests.toy import INTERFACE

FILE = "vllm/platforms/interface.py"
(SITE,) = sites_in_source(INTERFACE, FILE, "vllm.platforms.interface")
OTHER_SITE = "vllm/platforms/cpu.py::CpuPlatform.import_kernels::vllm._C#0"
FUNCTION = "vllm.platforms.interface.xǁPlatformǁimport_kernels"
MUTANT = f"{FUNCTION}__mutmut_1"
# The guard of another site fires first by node id; the mutant's own site's guard fires too.
ELSEWHERE = GuardRecord("a_guard[cpu]", OTHER_SITE, "call", RecordKind.LEAK, (EXCEPTION_RETAINED,), "cpu: fired")
OWN = GuardRecord(f"z_guard[{SITE.id}]", SITE.id, "call", RecordKind.LEAK, (EXCEPTION_RETAINED,), "own: fired")
FAILED = GuardRecord("a_test", None, "call", RecordKind.FAILED, (), "AssertionError: no")
PASSED = GuardRecord(f"z_guard[{SITE.id}]", SITE.id, "call", RecordKind.PASSED)


def session(status: int, *records: GuardRecord, run: str = "run1") -> GuardSession:
    return GuardSession(run, Phase.MUTANT, MUTANT, status, records)


@pytest.mark.parametrize(
    ("code", "attempts", "said"),
    [
        (None, 0, (NOT_RUN, "not run yet")),
        (0, 0, (SURVIVED, "every guard passed with the bug put back")),
        (-24, 1, (NOT_RUN, "its worker ran past its time limit (SIGXCPU) on 1 of the 2 attempts a verdict needs; ")),
        (-9, 1, (NOT_RUN, "its worker was killed from outside (SIGKILL) on 1 of the 2 attempts a verdict needs; ")),
        (-24, 2, (TIMEOUT, "its tests ran past mutmut's time limit on 2 attempts (exit code -24)")),
        (4, 0, (CRASHED, "the guard run ended without a guard's verdict (exit code 4, suspicious)")),
    ],
)
def test_each_verdict_of_judge_says_why(code: int | None, attempts: int, said: tuple[str, str]) -> None:
    judged = judge(code, session(code or 0, PASSED) if code in (0, 4) else None, attempts)
    status, reason = said
    assert judged.status is status
    assert judged.reason == (f"{reason}tested again next run" if reason.endswith("; ") else reason)


ERROR = GuardRecord(PASSED.test, SITE.id, "call", RecordKind.ERROR, (), "RuntimeError: boom")


@pytest.mark.parametrize(
    ("code", "records", "said"),
    [
        (-2, None, (NOT_RUN, "its run was interrupted (exit code -2); tested again next run")),
        (33, None, (NO_TESTS, "no guard covers the mutated function")),
        (4, (), (CRASHED, "the guard run ended without a guard's verdict (exit code 4, suspicious)")),
        (
            4,
            (ERROR,),
            (CRASHED, "the guard run ended without a guard's verdict (exit code 4, suspicious); RuntimeError: boom"),
        ),
        (1, (PASSED,), (CRASHED, "the guards failed without a detector firing (no guard failed)")),
        (1, (ERROR,), (CRASHED, "the guards failed without a detector firing (error: RuntimeError: boom)")),
    ],
    ids=["interrupted", "no-tests", "crashed", "crashed-with-an-error", "failed-without-a-failure", "errored"],
)
def test_a_run_without_a_kill_or_a_survival_says_what_it_saw(
    code: int, records: tuple[GuardRecord, ...] | None, said: tuple[str, str]
) -> None:
    judged = judge(code, None if records is None else session(code, *records), 2, SITE.id)
    assert (judged.status, judged.reason) == said


@pytest.mark.parametrize(
    ("attempts", "running", "said"),
    [
        (1, "t.py::test_a", (NOT_RUN, "its worker was interrupted by its tests (exit code 2) on 1 of the 2 attempts")),
        (2, "t.py::test_a", (CRASHED, "t.py::test_a interrupted its session on 2 attempts in a row (exit code 2: "
                             "KeyboardInterrupt or pytest.exit)")),
        (2, None, (CRASHED, "its session was interrupted on 2 attempts in a row (exit code 2: KeyboardInterrupt, "
                   "pytest.exit or a collection error)")),
    ],
)  # fmt: skip
def test_a_session_its_tests_interrupted_twice_is_crashed_naming_the_test_it_ran(
    attempts: int, running: str | None, said: tuple[str, str]
) -> None:
    judged = judge(2, None, attempts, SITE.id, running)
    assert judged.status is said[0] and judged.reason.startswith(said[1])


def test_a_worker_stopped_on_its_first_attempt_counts_that_attempt_as_none_by_default() -> None:
    assert judge(-24, None).reason.startswith("its worker ran past its time limit (SIGXCPU) on 0 of the 2 attempts")


def test_a_leak_kills_before_a_failed_test_and_the_own_sites_guard_before_another_sites() -> None:
    assert killed_by([FAILED, ELSEWHERE], None) == ELSEWHERE  # a detector that fired, before a test that failed
    assert killed_by([ELSEWHERE, OWN], SITE.id) == OWN
    assert judge(1, session(1, ELSEWHERE, OWN), site=SITE.id).killer == OWN


def test_the_baseline_of_every_site_keeps_its_guard_and_says_why() -> None:
    live = sites_in_source(INTERFACE.replace("repr(e)", "e"), FILE, "vllm.platforms.interface")[0]
    unreached = GuardRecord(PASSED.test, SITE.id, "call", RecordKind.UNREACHED, (), "no logging call")
    assert site_baselines([SITE], []) == [
        SiteBaseline(SITE, UNREACHED, "", (), "the guard did not run on the unmutated code")
    ]
    assert site_baselines([live], [session(0, PASSED)]) == [
        SiteBaseline(live, EXPOSED, PASSED.test, (), LIVE_BUT_PASSED)
    ]
    assert site_baselines([SITE], [session(1, OWN)]) == [
        SiteBaseline(SITE, EXPOSED, OWN.test, (EXCEPTION_RETAINED,), "own: fired")
    ]
    assert site_baselines([SITE], [session(1, unreached)]) == [
        SiteBaseline(SITE, UNREACHED, PASSED.test, (), "no logging call")
    ]
    assert site_baselines([SITE], [session(0, PASSED)]) == [SiteBaseline(SITE, GUARDED, PASSED.test)]


def test_a_kill_waits_for_its_confirmation_and_a_kill_by_a_test_flaky_elsewhere_is_flaky_and_keeps_its_killer() -> None:
    killing = session(1, OWN)
    kill = judge(1, killing, site=SITE.id)
    assert confirmed(kill, MUTANT, killing, Ledger()) == Judgement(
        NOT_RUN, "killed, not confirmed yet: its tests are re-run by the next run"
    )
    ledger = Ledger({MUTANT: Check("run1", (OWN.test,)), "other": Check("run1", ("x",), {OWN.test: "passed once"})})
    assert confirmed(kill, MUTANT, killing, ledger) == Judgement(
        FLAKY, f"not counted: killed by {OWN.test}, which is flaky (passed once)", OWN
    )
    assert confirmed(kill, MUTANT, killing, Ledger({MUTANT: Check("run1", (OWN.test,))})) == kill


def test_a_suites_verdict_names_the_mutants_own_site_first_and_says_why_no_test_reached_it() -> None:
    judged = judge_in_suite(SuiteBaseline(0, 2), MUTANT, 1, session(1, ELSEWHERE, OWN), 0, SITE.id)
    assert (judged.status, judged.killer) == (KILLED, OWN)
    outside = judge_in_suite(SuiteBaseline(0, 2, {}, frozenset({FUNCTION})), MUTANT, NO_TESTS_CODE, None, 0, "s")
    assert outside.reason == (
        "no test of the suite runs the mutated function; it runs only while the suite is collected (on import), "
        "which no test sees"
    )


def test_a_function_whose_name_holds_mutmuts_mark_is_found_as_mutmut_records_it() -> None:
    """mutmut names a mutant `<function>__mutmut_<n>` and records the function it ran by the text before the first
    `__mutmut_` (`x_load__mutmut_kernels` ran as `x_load`): the judge reads a mutant's function the same way."""
    function = "plugin.kernels.x_load"  # mutmut's record of `def load__mutmut_kernels()` run on import
    outside = judge_in_suite(
        SuiteBaseline(0, 2, {}, frozenset({function})),
        f"{function}__mutmut_kernels__mutmut_3",
        NO_TESTS_CODE,
        None,
        0,
        "s",
    )
    assert outside.reason.endswith("; it runs only while the suite is collected (on import), which no test sees")


def test_verdicts_hand_each_mutant_its_site_attempts_and_running_test_in_a_suite_and_in_a_guards_run() -> None:
    named = [NamedMutant(MUTANT, SITE.id, "live-arg", "repr(e)", "e")]
    suite = SuiteBaseline(0, 2, {}, frozenset({FUNCTION}))
    sessions = {MUTANT: session(1, ELSEWHERE, OWN)}

    def one(code: int, **more: object) -> tuple[str, str, str | None]:
        (verdict,) = verdicts(named, [SITE], [SiteBaseline(SITE, GUARDED, "g")], {MUTANT: code}, {}, **more)  # type: ignore[arg-type]
        return verdict.status, verdict.reason, verdict.killed_by

    assert one(1, sessions=sessions) == (KILLED, "own: fired", OWN.test)
    assert one(1, sessions=sessions, suite=suite) == (KILLED, "own: fired", OWN.test)
    stopped = one(-24, sessions={}, suite=suite, attempts={MUTANT: (-24, -24)}, running={MUTANT: "tests/t.py::h"})
    assert stopped == (
        TIMEOUT,
        "its tests ran past mutmut's time limit on 2 attempts (exit code -24); tests/t.py::h was running",
        None,
    )
    assert one(NO_TESTS_CODE, sessions={}, suite=suite)[:2] == (
        NO_TESTS,
        "no test of the suite runs the mutated function; it runs only while the suite is collected (on import), "
        "which no test sees",
    )
