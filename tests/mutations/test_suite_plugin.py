"""The plugin of a suite's sessions (`mutations.engine.suite_plugin`), in pytest sessions as mutmut starts them:
the stats session runs every test, records those that fail (credited with no function, left out later) and what ran
outside any test; a mutant's session records each test's outcome."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from warnonce_guard.common import protocol
from warnonce_guard.guards.sessions import RecordKind, baseline_sessions, mutant_session_path, read_session
from warnonce_guard.mutations.engine.seam import BASELINE_PHASES, MUTANT_MARK, MUTANT_VARIABLE
from warnonce_guard.mutations.suite import SuiteBaseline, read_baseline

pytest_plugins = ["pytester"]
PLUGIN = "warnonce_guard.mutations.engine.suite_plugin"
MUTANT = "vllm.platforms.cpu.xǁCpuPlatformǁimport_kernels__mutmut_2"

SUITE = """
from mutmut.state import state

state()._stats.add("at_import")  # a mutated function that runs while the module is collected


def test_passes():
    state()._stats.add("reached")


def test_fails():
    state()._stats.add("reached_by_a_failing_test")
    assert False, "broken"
"""

# What mutmut's own stats collector does after each test (mutmut.runners.harness): credit it with what ran.
CREDIT = """
import json

import pytest
from mutmut.state import state

CREDITED = {}


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item):
    CREDITED[item.name] = sorted(state()._stats)
    state()._stats.clear()


def pytest_sessionfinish(session):
    with open("credited.json", "w") as out:
        json.dump(CREDITED, out)
"""


@pytest.fixture
def told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in [name for name in list(__import__("os").environ) if name.startswith(protocol.PREFIX)]:
        monkeypatch.delenv(name)
    environ: dict[str, str] = {}
    protocol.tell_guards(
        environ,
        attribution=str(tmp_path / "attribution"),
        run_id="run1",
        mutant_variable=MUTANT_VARIABLE,
        baseline_phases=BASELINE_PHASES,
        mutant_mark=MUTANT_MARK,
        suite_baseline=str(tmp_path / "suite-baseline.json"),
    )
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    from mutmut.state import reset_state

    reset_state()
    return tmp_path


def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, mutant: str, *args: str) -> pytest.RunResult:
    monkeypatch.setenv(MUTANT_VARIABLE, mutant)
    return pytester.runpytest_inprocess("-p", PLUGIN, "-p", "credit", "-p", "no:randomly", "-x", *args)


def test_the_stats_session_runs_every_test_credits_a_failing_one_with_nothing_and_ends_as_passed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, told: Path
) -> None:
    pytester.makepyfile(test_users_suite=SUITE, credit=CREDIT)
    pytester.syspathinsert()
    result = run(pytester, monkeypatch, "stats")

    assert result.ret == 0  # mutmut goes on: the failure is recorded and left out from here on
    result.assert_outcomes(passed=1, failed=1)  # -x did not stop it: every test ran once
    credited = json.loads((pytester.path / "credited.json").read_text())
    assert credited == {"test_passes": ["reached"], "test_fails": []}
    failing = "test_users_suite.py::test_fails"
    assert read_baseline(told / "suite-baseline.json") == SuiteBaseline(
        1, 2, {failing: "AssertionError: broken"}, frozenset({"at_import"}), frozenset({failing})
    )  # it reached a mutated function: the engine re-runs it (engine.confirm), to tell a flaky test
    (recorded,) = baseline_sessions(told / "attribution", "run1")
    assert recorded.exit_status == 1  # the record keeps what really happened
    assert [(r.test, r.kind) for r in recorded.records] == [
        ("test_users_suite.py::test_passes", RecordKind.PASSED),
        ("test_users_suite.py::test_fails", RecordKind.FAILED),
    ]


def test_later_sessions_leave_the_failing_tests_out_and_a_mutants_session_records_each_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, told: Path
) -> None:
    pytester.makepyfile(test_users_suite=SUITE.replace("assert False", "assert True"), credit=CREDIT)
    pytester.syspathinsert()
    failing = {"test_users_suite.py::test_fails": "AssertionError: broken"}
    (told / "suite-baseline.json").write_text(json.dumps(SuiteBaseline(1, 2, failing).to_json()))

    result = run(pytester, monkeypatch, MUTANT)

    result.assert_outcomes(passed=1, deselected=1)
    recorded = read_session(mutant_session_path(told / "attribution", MUTANT))
    assert recorded is not None and recorded.exit_status == 0
    assert [(r.test, r.kind) for r in recorded.records] == [("test_users_suite.py::test_passes", RecordKind.PASSED)]


def test_a_mutants_failing_test_is_recorded_with_its_first_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, told: Path
) -> None:
    pytester.makepyfile(test_users_suite=SUITE, credit=CREDIT)
    pytester.syspathinsert()
    result = run(pytester, monkeypatch, MUTANT, "-k", "fails")
    assert result.ret == 1
    recorded = read_session(mutant_session_path(told / "attribution", MUTANT))
    assert recorded is not None
    assert [(r.kind, r.message) for r in recorded.records] == [(RecordKind.FAILED, "AssertionError: broken")]
    assert not (told / "suite-baseline.json").exists()  # only the stats session writes the baseline


def test_a_test_that_fails_in_the_clean_run_after_passing_in_the_stats_session_is_flaky_and_left_out(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, told: Path
) -> None:
    pytester.makepyfile(test_users_suite=SUITE, credit=CREDIT)
    pytester.syspathinsert()
    (told / "suite-baseline.json").write_text(json.dumps(SuiteBaseline(0, 2).to_json()))  # both passed in stats

    clean = run(pytester, monkeypatch, "")

    assert clean.ret == 0  # mutmut goes on to the mutants
    flaky = read_baseline(told / "suite-baseline.json").flaky
    assert flaky == {
        "test_users_suite.py::test_fails": "passed on the unmutated code, then failed there (AssertionError: broken)"
    }
    (recorded,) = baseline_sessions(told / "attribution", "run1")
    assert recorded.exit_status == 1  # the record keeps what really happened
    later = run(pytester, monkeypatch, MUTANT)
    later.assert_outcomes(passed=1, deselected=1)  # left out of every mutant's session


def test_a_rerun_of_the_engine_runs_a_left_out_test_on_purpose_and_writes_its_record_where_told(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, told: Path
) -> None:
    pytester.makepyfile(test_users_suite=SUITE, credit=CREDIT)
    pytester.syspathinsert()
    failing = {"test_users_suite.py::test_fails": "AssertionError: broken"}
    (told / "suite-baseline.json").write_text(json.dumps(SuiteBaseline(1, 2, failing).to_json()))
    monkeypatch.setenv(protocol.RECORD_TO, str(told / "rerun.json"))

    result = run(pytester, monkeypatch, "", "test_users_suite.py::test_fails")

    result.assert_outcomes(failed=1)
    recorded = read_session(told / "rerun.json")
    assert recorded is not None and [(r.test, r.kind) for r in recorded.records] == [
        ("test_users_suite.py::test_fails", RecordKind.FAILED)
    ]
    assert not list((told / "attribution").glob("**/*.json"))  # nowhere else
    assert read_baseline(told / "suite-baseline.json").flaky == {}  # a re-run is no clean run


HANGS = """
import threading


def test_hangs():
    threading.Event().wait()
"""


def test_a_test_stopped_by_the_timeout_is_recorded_as_such_and_says_what_it_was_running(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, told: Path
) -> None:
    from warnonce_guard.mutations.engine import config, running

    pytester.makepyfile(test_users_suite=HANGS, credit=CREDIT)
    pytester.syspathinsert()
    result = run(pytester, monkeypatch, MUTANT, *config.timeout_args(0.5))

    assert result.ret == 1
    recorded = read_session(mutant_session_path(told / "attribution", MUTANT))
    assert recorded is not None
    assert [(r.kind, r.message) for r in recorded.records] == [(RecordKind.TIMEOUT, "Failed: Timeout >0.5s")]
    assert running.last_tests(told / "attribution") == {}  # its session ended: it runs nothing now

    stats = run(pytester, monkeypatch, "stats", *config.timeout_args(0.5))
    assert stats.ret == 0  # on the unmutated code: left out as failing there
    assert read_baseline(told / "suite-baseline.json").failures == {
        "test_users_suite.py::test_hangs": "Failed: Timeout >0.5s"
    }
