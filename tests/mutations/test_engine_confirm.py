"""A kill is confirmed, or it is not a kill (`mutations.engine.confirm`): the tests of each killing session re-run in
forked sessions (a suite's, on the mutant and on the unmutated code), the guards' drives of their sites again read
from their own session, a suite's failing tests re-run alone; what each found, in the workspace's ledger."""

from __future__ import annotations

import importlib
import json
import os
import signal
from pathlib import Path

import pytest
from warnonce_guard.common import protocol
from warnonce_guard.common.errors import BadRecord, RecordsUnwritten
from warnonce_guard.guards.sessions import (
    AGAIN,
    UNWRITTEN_STATUS,
    GuardRecord,
    GuardSession,
    Phase,
    RecordKind,
    write_session,
)
from warnonce_guard.mutations.engine import confirm
from warnonce_guard.mutations.engine.confirm import Check, Ledger, Rerun, differs, killers, rechecked
from warnonce_guard.mutations.workspace import Workspace

from tests.records_support import generated

FILE = "vllm/platforms/interface.py"
KILLED, OTHER, SURVIVOR = (f"vllm.platforms.interface.xǁPlatformǁimport_kernels__mutmut_{i}" for i in (1, 2, 3))
FIRST, KILLER = "tests/test_a.py::test_first", "tests/test_a.py::test_killer"


def record(test: str, kind: RecordKind = RecordKind.PASSED, phase: str = "call") -> GuardRecord:
    return GuardRecord(test, None, phase, kind, (), "AssertionError: no" if kind is not RecordKind.PASSED else "")


def killing(mutant: str = KILLED, run: str = "run1") -> GuardSession:
    """A suite's session that killed `mutant`: a test passed, then the killer failed (and the session stopped)."""
    return GuardSession(run, Phase.MUTANT, mutant, 1, (record(FIRST), record(KILLER, RecordKind.FAILED)))


# --- one re-run: what it says ------------------------------------------------------------------------------


def test_a_rerun_on_the_mutant_agrees_when_the_same_tests_fail_and_names_each_test_that_did_otherwise() -> None:
    rerun, before = Rerun(KILLED, (FIRST, KILLER), (KILLED,)), (KILLER,)
    assert differs(rerun, (1, killing()), before) == {}
    passed = GuardSession("r", Phase.MUTANT, KILLED, 0, (record(FIRST), record(KILLER)))
    assert differs(rerun, (0, passed), before) == {KILLER: f"passed when re-run on {KILLED}"}
    first_failed = GuardSession("r", Phase.MUTANT, KILLED, 1, (record(FIRST, RecordKind.FAILED),))
    assert differs(rerun, (1, first_failed), before) == {
        KILLER: f"passed when re-run on {KILLED}",
        FIRST: f"failed when re-run on {KILLED}, having passed where the mutant was killed",
    }


def test_a_rerun_on_the_unmutated_code_agrees_when_every_test_passes() -> None:
    rerun = Rerun("", (FIRST, KILLER), (KILLED,))
    clean = GuardSession("r", Phase.BASELINE, "", 0, (record(FIRST), record(KILLER)))
    assert differs(rerun, (0, clean), (KILLER,)) == {}
    failed = GuardSession("r", Phase.BASELINE, "", 1, (record(FIRST), record(KILLER, RecordKind.FAILED)))
    assert differs(rerun, (1, failed), (KILLER,)) == {
        KILLER: "failed when re-run on the unmutated code (AssertionError: no)"
    }


@pytest.mark.parametrize("mutant", [KILLED, ""], ids=["on-the-mutant", "on-the-unmutated-code"])
def test_a_rerun_its_tests_interrupted_is_a_disagreement_for_every_killing_test(mutant: str) -> None:
    """pytest writes no report of the test that interrupted (KeyboardInterrupt, pytest.exit): the record of the tests
    before it would agree on the unmutated code, and say the killer passed on the mutant."""
    rerun = Rerun(mutant, (FIRST, KILLER), (KILLED,))
    before = GuardSession("r", Phase.MUTANT, mutant, 0, (record(FIRST),))
    where = f"on {KILLED}" if mutant else "on the unmutated code"
    assert differs(rerun, (2, before), (KILLER,)) == {
        KILLER: f"its session was interrupted (exit code 2) when re-run {where}"
    }


def test_a_rerun_past_its_time_limit_or_without_a_record_is_a_disagreement_one_stopped_says_nothing() -> None:
    rerun = Rerun(KILLED, (KILLER,), (KILLED,))
    assert differs(rerun, (-signal.SIGXCPU, None), (KILLER,)) == {
        KILLER: f"ran past its time limit when re-run on {KILLED}"
    }
    assert differs(rerun, (3, None), (KILLER,)) == {
        KILLER: f"ended without a record (exit code 3) when re-run on {KILLED}"
    }
    for stopped in (-signal.SIGTERM, -signal.SIGKILL, 130):  # a stop, or killed from outside: no verdict
        assert differs(rerun, (stopped, None), (KILLER,)) is None
        assert rechecked(KILLER, stopped) is None
    with pytest.raises(RecordsUnwritten):
        differs(rerun, (UNWRITTEN_STATUS, None), (KILLER,))


def test_a_failing_test_re_run_alone_is_flaky_when_it_passes() -> None:
    assert rechecked(KILLER, 1) == {}
    assert rechecked(KILLER, 0) == {
        KILLER: "failed on the unmutated code in the suite's first session, then passed when re-run alone"
    }


def test_the_killers_of_a_session_are_the_tests_that_failed_or_fired_not_a_timeout_or_an_error() -> None:
    records = (record(FIRST, RecordKind.ERROR), record(KILLER, RecordKind.LEAK), record(KILLER, RecordKind.LEAK, AGAIN))
    assert killers(records) == (KILLER,)


# --- the ledger ------------------------------------------------------------------------------------------


def test_the_ledger_is_written_and_read_back_and_one_that_does_not_validate_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "confirmations.json"
    assert confirm.read(path) == Ledger()
    ledger = Ledger({KILLED: Check("run1", (KILLER,), {KILLER: "passed"})}, {FIRST: ""})
    confirm.write(path, ledger)
    assert confirm.read(path) == ledger
    assert ledger.flaky() == {KILLER: "passed"}
    for damaged in ("{", "[]", json.dumps({"version": 1, "kills": {KILLED: {"run": "r"}}, "rechecked": {}})):
        path.write_text(damaged)
        with pytest.raises(BadRecord):
            confirm.read(path)
        assert confirm.read_or_empty(path) == Ledger()  # its kills are confirmed again


def test_a_check_confirms_only_the_session_it_was_made_for() -> None:
    check = Check("run1", (KILLER,))
    assert check.confirms(killing())
    assert not check.confirms(killing(run="run2"))  # the mutant was tested again since


# --- the whole confirmation, forked --------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def rerun_in_a_child(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every re-run runs in a forked child: it sets a CPU limit, discards its output and ends with `os._exit`, which in
    the confirming process would end the `mutate` run itself (here: fail the test saying so)."""
    confirming, real_exit = os.getpid(), os._exit

    def exit_child(code: int) -> None:
        if os.getpid() == confirming:
            raise AssertionError(f"a re-run ended the confirming process (exit code {code})")
        real_exit(code)

    monkeypatch.setattr(os, "_exit", exit_child)


@pytest.fixture
def ws(ws: Workspace) -> Workspace:
    """Two kills and a survivor, each with its finished session."""
    generated(ws, FILE, {KILLED: 1, OTHER: 1, SURVIVOR: 0})
    write_session(ws.attribution, killing(KILLED))
    write_session(ws.attribution, killing(OTHER))
    write_session(ws.attribution, GuardSession("run1", Phase.MUTANT, SURVIVOR, 0, (record(FIRST),)))
    return ws


def flaky_on(mutant: str) -> confirm.RunTests:
    """Re-runs as a forked child does them: the killer fails on every mutant but `mutant`, passes on the unmutated
    code; each writes its record where the engine told it, and says what it ran in a file of its own."""

    def run_tests(on: str, tests: list[str]) -> int:
        fails = on and on != mutant
        records = tuple(record(t, RecordKind.FAILED if fails and t == KILLER else RecordKind.PASSED) for t in tests)
        recorded = GuardSession("rerun", Phase.MUTANT if on else Phase.BASELINE, on, int(bool(fails)), records)
        path = Path(os.environ[protocol.RECORD_TO])
        path.write_text(json.dumps(recorded.to_json()), encoding="utf-8")
        path.with_suffix(".ran").write_text(json.dumps([on, tests]), encoding="utf-8")
        return int(bool(fails))

    return run_tests


def test_each_kill_is_rerun_on_its_mutant_and_the_unmutated_code_and_a_test_that_did_otherwise_is_flaky(
    ws: Workspace,
) -> None:
    ledger = confirm.confirm(ws, flaky_on(OTHER), rounds=2, suite=True)

    assert ledger.kills[KILLED] == Check("run1", (KILLER,))  # confirmed: two rounds, both sides agreed
    assert ledger.kills[OTHER] == Check("run1", (KILLER,), {KILLER: f"passed when re-run on {OTHER}"})
    assert set(ledger.kills) == {KILLED, OTHER}  # the survivor is no kill
    assert confirm.read(ws.confirmations_file) == ledger
    assert not list((ws.attribution / "confirm").glob("*.json"))  # each re-run's record read and removed
    ran = [json.loads(p.read_text(encoding="utf-8")) for p in (ws.attribution / "confirm").glob("*.ran")]
    assert all(tests == [FIRST, KILLER] for _, tests in ran)  # the killing session's tests, in its order
    assert [on for on, _ in ran].count("") == 2  # the same tests on the unmutated code: once a round for both kills


def test_a_kill_already_confirmed_is_not_rerun_and_a_suites_failing_test_is_rerun_alone(ws: Workspace) -> None:
    confirm.write(ws.confirmations_file, Ledger({KILLED: Check("run1", (KILLER,)), OTHER: Check("run1", (KILLER,))}))

    def passes(on: str, tests: list[str]) -> int:
        assert (on, tests) == ("", [FIRST])  # nothing but the failing test, alone, on the unmutated code
        return 0

    ledger = confirm.confirm(ws, passes, rounds=1, suite=True, failing={FIRST: "AssertionError: no"})
    assert ledger.rechecked == {
        FIRST: "failed on the unmutated code in the suite's first session, then passed when re-run alone"
    }
    assert confirm.confirm(ws, passes, rounds=1, suite=True, failing={FIRST: "x"}) == ledger  # nothing left to run


def test_the_guards_kills_are_settled_from_their_drives_again_without_a_rerun(ws: Workspace) -> None:
    guard = "guard_tests/test_kernel_import_sites.py::test_site[interface]"
    for mutant, again in ((KILLED, RecordKind.LEAK), (OTHER, RecordKind.PASSED)):
        records = (record(guard, RecordKind.LEAK), record(guard, again, AGAIN))
        write_session(ws.attribution, GuardSession("run1", Phase.MUTANT, mutant, 1, records))

    def never(on: str, tests: list[str]) -> int:
        raise AssertionError("no re-run")

    ledger = confirm.confirm(ws, never, rounds=1, suite=False)
    assert ledger.kills[KILLED].flaky == {}
    assert ledger.kills[OTHER].flaky == {guard: f"passed when its site was driven again on {OTHER}"}


def test_a_rerun_gets_mutmuts_limits_for_its_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    """As mutmut stops a worker: (the tests' stats time + timeout_constant) x timeout_multiplier of wall-clock time,
    twice that of CPU, rounded up; a test without stats counts nothing."""
    stats = importlib.import_module("mutmut.state")  # the module (the package's `mutmut.state` is its function)
    durations = stats.MutmutState(duration_by_test={FIRST: 0.25, KILLER: 1.5})
    monkeypatch.setattr(stats, "state", lambda: durations)
    assert confirm._limits([FIRST, KILLER, "tests/test_b.py::test_new"]) == ((0.25 + 1.5 + 5.0) * 15.0, 203)
