"""`nox -s dogfood` (tools/dogfood): it stages every package of the checkout, and every equivalent it lists says why."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest

from tests import layout
from tools.dogfood import run


def test_it_stages_every_package_setup_cfg_maps() -> None:
    assert list(layout.PACKAGE_FOLDERS.values()) == run.PACKAGES


def test_every_listed_equivalent_names_one_mutated_module_and_a_reason() -> None:
    listed = tomllib.loads(run.EQUIVALENTS_FILE.read_text(encoding="utf-8"))["equivalent"]
    modules = {module.removeprefix(f"{run.PACKAGE}/") for module in run.MODULES}
    for entry in listed:
        assert entry["mutant"].partition(":")[0] in modules and len(entry["reason"]) > 20, entry
    assert len({entry["mutant"] for entry in listed}) == len(listed)  # each once


def _mutmut_exits(monkeypatch: pytest.MonkeyPatch, output: str) -> None:
    done = subprocess.CompletedProcess(["mutmut"], 1, stdout=output, stderr="")
    monkeypatch.setattr(run.subprocess, "run", lambda *args, **kwargs: done)


def test_a_failing_test_of_mutmut_s_run_ends_the_session_with_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    summary = "FAILED tests/rule/test_liveness.py::test_deep - RecursionError: maximum recursion depth exceeded"
    _mutmut_exits(monkeypatch, f"....F\n{summary}\n1 failed, 4 passed\nfailed to collect stats. runner returned 1\n")
    with pytest.raises(SystemExit) as ended:
        run.run(tmp_path, 2)
    assert str(ended.value) == (
        "dogfood: mutmut run failed (exit 1): tests/rule/test_liveness.py::test_deep failed (RecursionError: maximum "
        f"recursion depth exceeded); its output: {tmp_path / 'mutmut.log'}"
    )
    assert summary in (tmp_path / "mutmut.log").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("output", "line"),
    [
        ("collected 3 items\nERROR tests/a.py::test_b\n", "tests/a.py::test_b failed"),
        (
            "\u280b Running stats\nfailed to collect stats. runner returned 4\n\n",
            "failed to collect stats. runner returned 4",
        ),
        ("", "no output"),
    ],
)
def test_a_runner_failure_is_named_by_its_test_or_else_by_mutmut_s_last_line(output: str, line: str) -> None:
    assert run.failure(output) == line


def test_a_mutmut_run_that_stopped_early_fails_the_session_naming_how_many_it_left(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    said = {
        "run": "Stopping...\n",  # mutmut's words on SIGINT, and it exits 0
        "results": "    m.x_f__mutmut_1: killed\n    m.x_f__mutmut_2: not checked\n    m.x_f__mutmut_3: not checked\n",
    }

    def mutmut(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(command, 0, stdout=said[command[3]], stderr="")

    monkeypatch.setattr(run.subprocess, "run", mutmut)
    with pytest.raises(SystemExit) as ended:
        run.run(tmp_path, 2)
    assert str(ended.value) == (
        "dogfood: mutmut's run ended with 2 mutant(s) not checked: run again (without --fresh, what it checked is kept)"
    )


@pytest.mark.parametrize(("fresh", "runs"), [(True, [[]]), (False, [[], ["m.x_f__mutmut_2", "m.x_f__mutmut_3"]])])
def test_survivors_are_run_again_by_name_only_when_results_may_predate_the_tests(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fresh: bool, runs: list[list[str]]
) -> None:
    results = "    m.x_f__mutmut_1: killed\n    m.x_f__mutmut_2: survived\n    m.x_f__mutmut_3: no tests\n"
    said = {"run": "", "results": results, "show": "-    a\n+    b\n"}
    ran: list[list[str]] = []

    def mutmut(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        if command[3] == "run":
            ran.append(command[6:])
        return subprocess.CompletedProcess(command, 0, stdout=said[command[3]], stderr="")

    monkeypatch.setattr(run.subprocess, "run", mutmut)
    mutants = run.run(tmp_path, 2, fresh=fresh)
    assert ran == runs
    assert [(m.name, m.status, m.change) for m in mutants] == [
        ("m.x_f__mutmut_1", "killed", ""),
        ("m.x_f__mutmut_2", "survived", "- a / + b"),
        ("m.x_f__mutmut_3", "no tests", "- a / + b"),
    ]


def test_every_timeout_is_run_again_alone_and_its_second_result_is_its_verdict(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    first = "    m.x_f__mutmut_1: timeout\n    m.x_f__mutmut_2: killed\n    m.x_f__mutmut_3: timeout\n"
    second = "    m.x_f__mutmut_1: survived\n    m.x_f__mutmut_2: killed\n    m.x_f__mutmut_3: timeout\n"
    ran: list[list[str]] = []

    def mutmut(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        if command[3] == "run":
            ran.append(command[4:])
        said = {"run": "", "results": second if len(ran) > 1 else first, "show": "-    a\n+    b\n"}
        return subprocess.CompletedProcess(command, 0, stdout=said[command[3]], stderr="")

    monkeypatch.setattr(run.subprocess, "run", mutmut)
    mutants = run.run(tmp_path, 2, fresh=True)
    assert ran == [["--max-children", "2"], ["--max-children", "1", "m.x_f__mutmut_1", "m.x_f__mutmut_3"]]
    assert [(m.name, m.status) for m in mutants] == [
        ("m.x_f__mutmut_1", "survived"),
        ("m.x_f__mutmut_2", "killed"),
        ("m.x_f__mutmut_3", "timeout"),
    ]
