"""A worker's run in the guards' session collected once (`engine.collected`) ends as `pytest.main` on the same tests
would, from the same pre-test state: the same exit status, the same tests run in the same order, the same
`pytest_sessionfinish`, nothing written to the session's output. Each case runs both ways, each in a child forked
from one process, in a subprocess of its own (a pytest session inside this one's would share its capture)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from warnonce_guard.mutations.engine.workers import WORKER_RAISED

CONFTEST = """
import json, os, sys

import pytest

def pytest_collection_modifyitems(config, items):
    # what the guards' conftest does: each session's own, from the environment
    if os.environ.get("MUTANT") == "raise":
        raise RuntimeError("a hook that fails")
    if os.environ.get("MUTANT") == "reverse":
        items.reverse()
        config.option.maxfail = 0

def pytest_runtest_logstart(nodeid):
    with open(os.environ["LOG"], "a") as log:
        log.write(nodeid + "\\n")

def pytest_runtest_logreport(report):
    if report.failed:
        with open(os.environ["LOG"], "a") as log:
            log.write(f"captured {report.capstdout!r}\\n")

def pytest_sessionfinish(session, exitstatus):
    sys.stderr.write("written to stderr as the session ended\\n")
    with open(os.environ["LOG"], "a") as log:
        log.write(f"finish {int(exitstatus)}\\n")
    if os.environ.get("MUTANT") == "unwritten":
        session.exitstatus = 99
    if os.environ.get("MUTANT") == "exit":
        pytest.exit("ended at the end", returncode=9)
"""

TESTS = """
import os
import sys

import pytest

STATE = []

def test_a():
    assert not STATE  # every session starts from the state before any test ran
    STATE.append("a")

def test_b():
    print("printed by a test")
    os.write(1, b"written to fd 1 by a test")

def test_fail():
    assert False

def test_exit():
    pytest.exit("stopped", returncode=7)

def test_after():
    pass

def test_dies():
    os.write(1, b"left by a worker that died")
    os._exit(0)

def test_fail_quietly():
    assert False

def test_segfault():
    import faulthandler
    faulthandler._sigsegv()
"""

DRIVER = """
import json, os, sys
from warnonce_guard.mutations.engine.collected import Guards

def forked(work):
    pid = os.fork()
    if pid == 0:
        sys.stdout = sys.stderr = open(os.devnull, "w")
        code = work()
        os._exit(100 if code is None else code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

def logged(mutant, work):
    log = os.path.abspath("log.txt")
    os.environ["MUTANT"], os.environ["LOG"] = mutant, log
    code = forked(work)
    lines = open(log).read().splitlines() if os.path.exists(log) else []
    os.path.exists(log) and os.remove(log)
    return [code, lines]

args, cases = json.loads(sys.argv[1]), json.loads(sys.argv[2])
import pytest
guards = Guards()
guards.collect([*args, "tests"], "project")  # every test, as mutmut's selection
out = {"why_not": guards.why_not, "cases": []}
for mutant, tests in cases:
    def main():
        os.chdir("project")
        return int(pytest.main([*args, *tests]))
    out["cases"].append([logged(mutant, main), logged(mutant, lambda: guards.run(tests))])
guards.close()
print(json.dumps(out))
"""

ARGS = ["--rootdir=.", "--tb=native", "-x", "-q", "-p", "no:cacheprovider", "-c", "/dev/null"]


def _ids(*names: str) -> list[str]:
    return [f"tests/test_x.py::{name}" for name in names]


def drive(tmp_path: Path, cases: list[tuple[str, list[str]]], tests: str = TESTS) -> dict[str, Any]:
    project = tmp_path / "project"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "conftest.py").write_text(CONFTEST)
    (project / "tests" / "test_x.py").write_text(tests)
    return run_driver(tmp_path, DRIVER, ARGS, cases)


def run_driver(folder: Path, driver: str, *arguments: Any) -> dict[str, Any]:
    """`driver` run in `folder` with `arguments` (as JSON), no plugin of this environment loaded: what it printed
    last (JSON), with its whole stdout and stderr."""
    (folder / "driver.py").write_text(driver)
    done = subprocess.run(
        [sys.executable, "driver.py", *map(json.dumps, arguments)],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    result["stdout"], result["stderr"] = done.stdout, done.stderr
    return result


CASES: list[tuple[str, list[str]]] = [
    ("", _ids("test_a", "test_b")),  # passes
    ("", _ids("test_a", "test_fail", "test_after")),  # -x stops at the failure
    ("reverse", _ids("test_a", "test_fail", "test_after")),  # reordered, no stop: the session's own hook
    ("", _ids("test_exit", "test_after")),  # pytest.exit's return code
    ("unwritten", _ids("test_a")),  # sessionfinish changes the exit status
    ("", _ids("test_a", "test_a")),  # a test named twice runs once
    ("raise", _ids("test_a")),  # a hook that fails: an internal error, and the session still ends
    ("exit", _ids("test_a")),  # pytest.exit as the session ends: its code
]


def test_a_run_in_the_collected_session_ends_as_pytest_main_on_the_same_tests(tmp_path: Path) -> None:
    result = drive(tmp_path, CASES)
    assert result["why_not"] == ""
    expected = [
        [0, [*_ids("test_a", "test_b"), "finish 0"]],
        [1, [*_ids("test_a", "test_fail"), "captured ''", "finish 1"]],
        [1, [*_ids("test_after", "test_fail"), "captured ''", *_ids("test_a"), "finish 1"]],
        [7, [*_ids("test_exit"), "finish 7"]],
        [99, [*_ids("test_a"), "finish 0"]],
        [0, [*_ids("test_a"), "finish 0"]],
        [3, ["finish 3"]],
        [9, [*_ids("test_a"), "finish 0"]],
    ]
    for (mutant, tests), (by_main, collected), want in zip(CASES, result["cases"], expected, strict=True):
        assert by_main == want, (mutant, tests)
        assert collected == want, (mutant, tests)
    # what the tests, the hooks and pytest's reporter wrote stayed in the children
    assert "printed by a test" not in result["stdout"] and "written to fd 1" not in result["stdout"]
    assert "passed" not in result["stdout"] and "written to stderr" not in result["stderr"]


def test_a_worker_that_crashes_ends_as_under_pytest_main_and_writes_nothing_where_the_session_writes(
    tmp_path: Path,
) -> None:
    """faulthandler's traceback of a worker's crash goes where its pytest.main's would: the null device."""
    result = drive(tmp_path, [("", _ids("test_segfault"))])
    [(by_main, collected)] = result["cases"]
    assert by_main == collected == [-11, _ids("test_segfault")]
    assert "Fatal Python error" not in result["stderr"] and "Fatal Python error" not in result["stdout"]


def test_a_worker_captures_into_files_of_its_own(tmp_path: Path) -> None:
    """A worker that died in a test (its time limit, `os._exit`) leaves what it wrote in its capture's files; the
    next worker's failing test does not report it as its own output."""
    result = drive(tmp_path, [("", _ids("test_dies")), ("", _ids("test_fail_quietly"))])
    (_, died), (_, failed) = result["cases"]
    assert died == [0, _ids("test_dies")]
    assert failed == [1, [*_ids("test_fail_quietly"), "captured ''", "finish 1"]]


def test_a_test_the_session_did_not_collect_is_left_to_pytest_main(tmp_path: Path) -> None:
    result = drive(tmp_path, [("", _ids("test_a", "test_missing")), ("", [])])
    assert [collected[0] for _, collected in result["cases"]] == [100, 100]  # run() said None: not its to run


@pytest.mark.parametrize(
    ("tests", "why"),
    [("def test_a(:\n", "error(s) during collection"), ("import nowhere_at_all\n", "error(s) during collection")],
)
def test_a_collection_that_fails_leaves_no_session_and_says_why(tmp_path: Path, tests: str, why: str) -> None:
    result = drive(tmp_path, [("", _ids("test_a"))], tests=tests)
    assert why in result["why_not"]
    by_main, collected = result["cases"][0]
    assert by_main[0] != 0 and collected[0] == 100


RUNNER_DRIVER = """
import json, os, sys
from mutmut.runners.harness import PytestRunner
from mutmut.state import state
from warnonce_guard.mutations.engine import collected

original, STARTED = PytestRunner.execute_pytest, os.path.abspath("started.txt")

def counted(self, params, **kwargs):  # every pytest.main mutmut's runner starts, in this process or a worker
    with open(STARTED, "a") as started:
        started.write(str(os.getpid()) + "\\n")
    return original(self, params, **kwargs)

PytestRunner.execute_pytest = counted
guards = collected.Guards()
runner = collected.fork_runner(guards)(1)
clean = runner.run_clean_tests(tests=[])  # mutmut's own session, before the runner starts: pytest.main
runner.startup()
exits = {}
for mutant, tests in json.loads(sys.argv[1]):
    for test in tests:
        state().duration_by_test[test] = 0.0
    runner.submit(mutant, tests, 60, 1.0)
    exits[mutant] = runner.wait_for_result().exit_code
runner.shutdown()
started = open(STARTED).read().split()
me, why_not = str(os.getpid()), guards.why_not
print(json.dumps({"clean": clean, "exits": exits, "started": started, "me": me, "why_not": why_not}))
"""


def _project(tmp_path: Path) -> None:
    project = tmp_path / "mutants"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "conftest.py").write_text("")
    (project / "tests" / "test_x.py").write_text("def test_a():\n    pass\n\ndef test_fail():\n    assert False\n")
    options = "\n    ".join(["-p", "no:cacheprovider", "-c", "/dev/null", "--rootdir=."])
    (tmp_path / "setup.cfg").write_text(
        f"[mutmut]\nsource_paths = src\npytest_add_cli_args =\n    {options}\n"
        "pytest_add_cli_args_test_selection =\n    tests/\n"
    )


def test_mutmuts_workers_run_their_mutants_tests_in_the_session_collected_once(tmp_path: Path) -> None:
    """mutmut's own sessions start pytest; its workers, forked once the runner started, run in the collected one."""
    _project(tmp_path)
    cases = [["m.f__mutmut_1", ["tests/test_x.py::test_a"]], ["m.f__mutmut_2", ["tests/test_x.py::test_fail"]]]
    result = run_driver(tmp_path, RUNNER_DRIVER, cases)
    assert result["why_not"] == "" and result["clean"] == 1  # the clean session ran both tests, one failing
    assert result["exits"] == {"m.f__mutmut_1": 0, "m.f__mutmut_2": 1}
    assert result["started"] == [result["me"]]  # one pytest.main, the clean session's: none in a worker


# A worker whose run raises (as mutmut's does on pytest's usage error): in mutmut's own runner the exception climbs
# the worker's copy of this script, which would go on running and print a second result.
RAISING_DRIVER = RUNNER_DRIVER.replace(
    "runner.startup()",
    """runner.startup()
run_tests = runner.test_runner.run_tests
def raising(*, mutant_name, tests):
    if mutant_name.endswith("_2"):
        raise KeyboardInterrupt if "stop" in mutant_name else RuntimeError("as pytest's usage error raises")
    return run_tests(mutant_name=mutant_name, tests=tests)
runner.test_runner.run_tests = raising""",
)


def test_a_worker_that_raises_or_is_interrupted_ends_in_the_runner_never_as_a_verdict(tmp_path: Path) -> None:
    _project(tmp_path)
    cases = [[name, ["tests/test_x.py::test_a"]] for name in ("m.f__mutmut_1", "m.f__mutmut_2", "m.stop__mutmut_2")]
    result = run_driver(tmp_path, RAISING_DRIVER, cases)
    assert result["exits"] == {"m.f__mutmut_1": 0, "m.f__mutmut_2": WORKER_RAISED, "m.stop__mutmut_2": WORKER_RAISED}
    assert result["stdout"].count('"exits"') == 1  # the workers printed nothing of this script's
    assert "mutmut's worker raised" in result["stderr"] and "as pytest's usage error raises" in result["stderr"]
