"""A suite of --tests (`mutations.suite`): its paths as pytest takes them from its root, what keys its workspace,
its record of the unmutated code; and its verdicts (`judge.judge_in_suite`): killed by which test, survived, or not
reached, never confused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from warnonce_guard.common.errors import BadRecord, PathUnusable, UsageError
from warnonce_guard.guards.sessions import GuardRecord, GuardSession, Phase, RecordKind
from warnonce_guard.mutations.engine import config
from warnonce_guard.mutations.engine.state import NO_TESTS_CODE
from warnonce_guard.mutations.identify import NamedMutant
from warnonce_guard.mutations.judge import judge_in_suite, retest, verdicts
from warnonce_guard.mutations.records import CRASHED, KILLED, NO_TESTS, SURVIVED, TIMEOUT, SiteBaseline, SiteStatus
from warnonce_guard.mutations.suite import Suite, SuiteBaseline, read_baseline, read_suite, resolve_suite, signature
from warnonce_guard.rule.sites import sites_in_source

from tests.toy import write

MUTANT = "vllm.platforms.interface.xǁPlatformǁimport_kernels__mutmut_1"
FUNCTION = "vllm.platforms.interface.xǁPlatformǁimport_kernels"
FAILED = GuardRecord("tests/test_a.py::test_k", None, "call", RecordKind.FAILED, (), "AssertionError: pinned")
PASSED = GuardRecord("tests/test_a.py::test_p", None, "call", RecordKind.PASSED)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write(tmp_path, "suite/tests/test_a.py", "def test_k():\n    pass\n")
    write(tmp_path, "suite/tests/sub/test_b.py", "def test_b():\n    pass\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "suite"


# --- which tests, from where ----------------------------------------------------------------------------------


def test_paths_and_node_ids_are_taken_from_here_and_written_from_the_root(root: Path) -> None:
    suite = resolve_suite(["suite/tests/test_a.py::test_k", str(root / "tests" / "sub"), "suite/tests/./sub"], "suite")
    assert suite == Suite(root, ("tests/test_a.py::test_k", "tests/sub"))  # each once, in the order given
    assert suite.describe() == f"the tests tests/test_a.py::test_k, tests/sub (pytest in {root})"


def test_the_root_defaults_to_the_paths_nearest_common_folder(root: Path) -> None:
    assert resolve_suite(["suite/tests"], None) == Suite(root / "tests", (".",))
    tests = resolve_suite(["suite/tests/test_a.py", "suite/tests/sub/test_b.py::test_b"], None)
    assert tests == Suite(root / "tests", ("test_a.py", "sub/test_b.py::test_b"))
    assert resolve_suite(["."], None).describe() == f"the tests (pytest in {root.parent})"


def test_the_settings_and_conftest_files_above_the_root_key_the_workspace_too(root: Path) -> None:
    suite = Suite(root / "tests", ("test_a.py",))
    write(root, "pyproject.toml", "[tool.pytest.ini_options]\n")
    write(root, "conftest.py", "")
    write(root, "notes.txt", "not a setting")
    above = [entry[0] for entry in signature(suite, []) if entry[0].startswith("/")]
    assert above == [str(root / "conftest.py"), str(root / "pyproject.toml")]


@pytest.mark.parametrize(
    ("tests", "tests_root", "error", "said"),
    [
        ([""], "suite", UsageError, "--tests: an empty path"),
        (["  "], "suite", UsageError, "--tests: an empty path"),
        ([], "suite", UsageError, "give at least one test"),
        (["suite/tests"], "", UsageError, "--tests-root: an empty value"),
        (["suite/tests/nope.py"], "suite", PathUnusable, "no such file or directory"),
        (["suite/tests"], "suite/tests/test_a.py", PathUnusable, "not a directory"),
        (["suite/tests"], "elsewhere", PathUnusable, "not a directory"),
        (["suite/tests"], "suite/tests/sub", PathUnusable, "is outside --tests-root"),
    ],
    ids=["empty", "blank", "none", "empty-root", "missing", "root-is-a-file", "root-missing", "outside-the-root"],
)
def test_a_bad_suite_is_one_line_naming_the_option(
    root: Path, tests: list[str], tests_root: str, error: type[Exception], said: str
) -> None:
    with pytest.raises(error, match=said) as raised:
        resolve_suite(tests, tests_root)
    assert "\n" not in str(raised.value)


def test_the_sources_and_settings_of_the_root_key_the_workspace_but_caches_and_the_runs_own_folders(
    root: Path,
) -> None:
    write(root, "tests/__pycache__/x.pyc", "")
    write(root, ".git/HEAD", "ref: x\n")
    write(root, ".venv/lib/site.py", "")
    write(root, "report/mutation.json", "{}")
    write(root, "report/helper.py", "")
    suite = Suite(root, ("tests",))
    before = signature(suite, [root / "report"])
    assert [entry[0] for entry in before] == ["tests/sub/test_b.py", "tests/test_a.py"]
    write(root, "report/more.py", "")  # the run's own report changes as it runs: no new key
    assert signature(suite, [root / "report"]) == before
    for written in ("sessions.log", "tests/data.json", "tests/cache.sqlite"):  # what a suite writes as it runs
        write(root, written, "written by a test")
        assert signature(suite, [root / "report"]) == before
    for setting in ("tox.ini", "tests/pyproject.toml", "setup.cfg", "tests/helpers.py"):  # what a user edits
        write(root, setting, "")
        assert setting in [entry[0] for entry in signature(suite, [root / "report"])]
    write(root, "conftest.py", "")  # a conftest (or any helper) of the suite: a new key
    assert signature(suite, [root / "report"])[0][0] == "conftest.py"
    os.utime(root / "tests" / "test_a.py", ns=(1, 1))
    assert dict((path, mtime) for path, _, mtime in signature(suite, [root / "report"]))["tests/test_a.py"] == 1


def test_a_suite_is_written_and_read_back_and_a_damaged_one_is_never_taken_for_the_guards(tmp_path: Path) -> None:
    path, suite = tmp_path / "suite.json", Suite(tmp_path, ("tests", "x.py::t"))
    assert read_suite(path) is None  # no file: the guards
    path.write_text(json.dumps(suite.to_json()))
    assert read_suite(path) == suite
    for damaged in ("{", json.dumps({"root": "/r", "paths": []}), json.dumps({"paths": ["t"]}), "[]"):
        path.write_text(damaged)
        with pytest.raises(BadRecord):
            read_suite(path)


def test_the_baseline_reads_back_and_a_damaged_one_is_bad(tmp_path: Path) -> None:
    path = tmp_path / "suite-baseline.json"
    baseline = SuiteBaseline(1, 4, {"t.py::x": "AssertionError: no"}, frozenset({FUNCTION}))
    path.write_text(json.dumps(baseline.to_json()))
    assert read_baseline(path) == baseline
    for damaged in (
        "",
        "{}",
        json.dumps(baseline.to_json() | {"status": "1"}),
        json.dumps({**baseline.to_json(), "failures": []}),
    ):
        path.write_text(damaged)
        with pytest.raises(BadRecord):
            read_baseline(path)


def test_mutmut_is_told_to_run_the_suites_paths_with_the_recording_plugin_and_no_cache(tmp_path: Path) -> None:
    section = config.section(["vllm/platforms/cpu.py"], "guard_tests", Suite(tmp_path, ("tests", "a.py::t")))
    assert "pytest_add_cli_args_test_selection = \n    tests\n    a.py::t\n" in section
    assert "also_copy" not in section and "guard_tests" not in section  # the suite is run where it lies
    assert "    warnonce_guard.mutations.engine.suite_plugin\n" in section and "    no:cacheprovider\n" in section
    assert "no:logging" not in section  # a suite keeps the plugins the guards' sessions do without (caplog, ...)


# --- verdicts ---------------------------------------------------------------------------------------------------


def session(status: int, *records: GuardRecord) -> GuardSession:
    return GuardSession("run", Phase.MUTANT, MUTANT, status, records)


def test_a_failing_test_kills_and_is_named_a_passing_suite_lets_it_survive() -> None:
    killed = judge_in_suite(SuiteBaseline(0, 2), MUTANT, 1, session(1, PASSED, FAILED), 0, "s")
    assert (killed.status, killed.killer, killed.reason) == (KILLED, FAILED, FAILED.message)
    survived = judge_in_suite(SuiteBaseline(0, 2), MUTANT, 0, session(0, PASSED), 0, "s")
    assert (survived.status, survived.reason) == (
        SURVIVED,
        "every test of the suite that runs the mutated function passed",
    )


def test_a_mutant_no_test_reaches_is_not_reached_and_says_why() -> None:
    plain = judge_in_suite(SuiteBaseline(0, 2), MUTANT, NO_TESTS_CODE, None, 0, "s")
    assert (plain.status, plain.reason) == (NO_TESTS, "no test of the suite runs the mutated function")
    outside = judge_in_suite(SuiteBaseline(0, 2, {}, frozenset({FUNCTION})), MUTANT, NO_TESTS_CODE, None, 0, "s")
    assert outside.status is NO_TESTS and "runs only while the suite is collected" in outside.reason
    left_out = judge_in_suite(SuiteBaseline(1, 2), MUTANT, 5, None, 0, "s")  # every test reaching it was left out
    assert (left_out.status, left_out.reason) == (
        NO_TESTS,
        "only tests that fail (or are flaky) on the unmutated code run the mutated function",
    )


def test_a_suites_mutants_are_judged_without_site_baselines_and_a_guards_run_still_skips() -> None:
    source = (
        "class Platform:\n    def import_kernels(self):\n        try:\n            import vllm._C\n"
        "        except ImportError as e:\n            logger.warning_once('x: %s', repr(e))\n"
    )
    (site,) = sites_in_source(source, "vllm/platforms/interface.py", "vllm.platforms.interface")
    named = [NamedMutant(MUTANT, site.id, "live-arg", "repr(e)", "e")]
    sessions = {MUTANT: session(1, FAILED)}
    (in_suite,) = verdicts(named, [site], [], {MUTANT: 1}, {}, sessions, suite=SuiteBaseline(0, 1))
    assert (in_suite.status, in_suite.killed_by) == (KILLED, FAILED.test)
    (by_guards,) = verdicts(named, [site], [SiteBaseline(site, SiteStatus.EXPOSED, "g")], {MUTANT: 1}, {}, sessions)
    assert by_guards.status.value == "skipped"  # a guards' run: the site baseline still decides


def test_a_test_past_the_timeout_makes_its_mutant_timeout_naming_it_and_a_stopped_worker_names_its_test() -> None:
    late = GuardRecord("tests/test_a.py::test_h", None, "call", RecordKind.TIMEOUT, (), "Failed: Timeout >5.0s")
    timed = judge_in_suite(SuiteBaseline(0, 2), MUTANT, 1, session(1, PASSED, late), 0, "s")
    assert (timed.status, timed.reason) == (
        TIMEOUT,
        "tests/test_a.py::test_h ran past --timeout (Failed: Timeout >5.0s)",
    )
    assert timed.killer == late  # the report's "killed by" column names it
    stopped = judge_in_suite(SuiteBaseline(0, 2), MUTANT, -24, None, 2, "s", running="tests/test_a.py::test_h")
    assert stopped.status is TIMEOUT and stopped.reason.endswith("; tests/test_a.py::test_h was running")


def test_a_test_that_ends_its_process_makes_its_mutant_crashed_naming_it_and_no_run_tests_it_again() -> None:
    test = "tests/test_a.py::test_exits"
    ended = judge_in_suite(SuiteBaseline(0, 1), MUTANT, 0, None, 0, "s", running=test)
    assert (ended.status, ended.reason) == (
        CRASHED,
        f"{test} ended its test process (exit code 0) before the session finished",
    )
    assert retest({MUTANT: 0}, {}, running={MUTANT: test}) == {}  # its verdict stands: the next run keeps it
    assert MUTANT in retest({MUTANT: 0}, {})  # no test named: an interrupted run's code, tested again
