"""Fault injection: the report folder. Two runs with their own work directories and one --out: one is refused at
once (exit 4, one line) and the other's whole report is there; an interrupted run names the earlier report
--out still holds; a --vllm-src whose path holds a byte that is not UTF-8 gets its report, run after run."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
from warnonce_guard.common.errors import ExitCode
from warnonce_guard.common.locks import out_lock
from warnonce_guard.mutations.report import FILES

from tests.faults import (
    CleanRun,
    RunDirs,
    TreeShape,
    cli_args,
    in_phase,
    one_line_error,
    read_verdicts,
    run,
    send,
    start,
    survivors,
    wait_until,
)

pytestmark = [pytest.mark.slow, pytest.mark.long]

WRITING_THERE = "another warnonce-guard run is writing its report there"


@pytest.fixture(scope="module")
def fault_shape() -> TreeShape:
    return TreeShape(guard_sleep_s=0.5)  # runs long enough to overlap, even with a loaded machine's slow startups


def report_run(out: Path) -> dict[str, str]:
    return json.loads((out / "mutation.json").read_text(encoding="utf-8"))["config"]["run"]


def session_run_id(work: Path) -> str:
    """The run id the mutmut session of the run in `work` generated under (its generation.json)."""
    (generation,) = work.glob("*/generation.json")
    return json.loads(generation.read_text(encoding="utf-8"))["run"]


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

    assert sorted(codes) == [0, ExitCode.ENVIRONMENT], [started.err for started in runs]
    winner, loser = (0, 1) if codes[0] == 0 else (1, 0)
    said = one_line_error(runs[loser].err)
    assert said == (f"warnonce-guard: error: --out {out}: {WRITING_THERE}; wait for it to finish or pass another --out")
    assert runs[loser].out == ""
    # --out is the winner's whole report, naming its run; nothing half-written beside it, no process left
    assert read_verdicts(out) == clean_run.verdicts
    assert sorted(p.name for p in out.iterdir()) == sorted([*FILES, ".warnonce-guard"])
    assert report_run(out)["id"] == session_run_id(works[winner])
    assert beside(out) == [out_lock(out).name]
    assert survivors(works[0]) == [] and survivors(works[1]) == []

    again = run(cli_args(untouched_user_tree, out, works[loser], small_viewer), cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert read_verdicts(out) == clean_run.verdicts and report_run(out)["id"] == session_run_id(works[loser])
    record_property("outcome", f"exits {codes}; refused: {said}")


def test_a_run_started_while_another_tests_the_same_targets_guards_for_the_same_out_is_refused_at_once(
    untouched_user_tree: Path, small_viewer: Path, clean_run: CleanRun, tmp_path: Path
) -> None:
    dirs = RunDirs(untouched_user_tree, tmp_path / "report", tmp_path / "work1")
    first = start(cli_args(dirs.tree, dirs.out, dirs.work, small_viewer), tmp_path, tmp_path / "logs1")
    if not wait_until(lambda: in_phase("baseline", dirs), first.proc):  # every guard run still to come
        pytest.skip(f"the first run ended (exit {first.wait()}) before its baseline was seen")

    began = time.monotonic()
    second = run(cli_args(dirs.tree, dirs.out, tmp_path / "work2", small_viewer), cwd=tmp_path)
    refused_after = time.monotonic() - began

    assert first.proc.poll() is None, "the first run ended before the second one ended: not a real overlap"
    assert second.returncode == ExitCode.ENVIRONMENT, second.stdout + second.stderr
    assert WRITING_THERE in one_line_error(second.stderr)
    assert refused_after < 5.0  # at once, not after waiting for the lock
    assert first.wait() == 0, first.err
    assert read_verdicts(dirs.out) == clean_run.verdicts and report_run(dirs.out)["id"] == session_run_id(dirs.work)


def test_an_interrupted_run_says_that_out_still_holds_the_earlier_report_of_another_target(
    user_tree: Path, small_viewer: Path, tmp_path: Path
) -> None:
    out = tmp_path / "report"
    done = run(cli_args(user_tree, out, tmp_path / "work", small_viewer), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    earlier, files = report_run(out), {name: (out / name).read_bytes() for name in FILES}
    other = tmp_path / "other"
    shutil.copytree(user_tree, other)
    (other / "vllm" / "_version.py").write_text("__version__ = version = '9.9.8'\n", encoding="utf-8")

    dirs = RunDirs(other, out, tmp_path / "work-other")
    second = start(cli_args(other, out, dirs.work, small_viewer), tmp_path, tmp_path / "logs")
    if not wait_until(lambda: in_phase("mutants", dirs), second.proc):
        pytest.skip(f"the run ended (exit {second.wait()}) before its mutants were seen")
    send(second, signal.SIGINT)

    assert second.wait() == ExitCode.INTERRUPTED
    (said,) = second.err.strip().splitlines()
    assert said.startswith("warnonce-guard: interrupted; finished verdicts are kept in "), said
    assert said.endswith(
        f"; --out {out} still holds the earlier report: run {earlier['id']} started {earlier['started']}, "
        f"vLLM 9.9.9 (source tree at {user_tree / 'vllm'})"
    ), said
    assert {name: (out / name).read_bytes() for name in FILES} == files
    assert survivors(dirs.work) == []


def test_a_vllm_src_whose_path_is_not_utf8_gets_its_report_on_every_run(
    user_tree: Path, small_viewer: Path, tmp_path: Path
) -> None:
    tree = Path(os.fsdecode(os.fsencode(tmp_path) + b"/tree\xff"))
    shutil.copytree(user_tree, tree)
    out, work = tmp_path / "report", tmp_path / "work"
    env = dict(os.environ, PYTHONIOENCODING="utf-8")  # stdout refuses what UTF-8 cannot hold, as most locales do
    shown = f"{tmp_path}/tree\\xff/vllm"
    for attempt in ("first", "rerun"):
        args = cli_args(tree, out, work, small_viewer)
        done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)

        assert done.returncode == 0, (attempt, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr and "Mutation score: 100.00%" in done.stdout
        texts = {name: (out / name).read_bytes().decode("utf-8") for name in FILES}  # valid UTF-8, each
        assert json.loads(texts["mutation.json"])["config"]["target"] == f"source tree at {shown}"
        assert f"(source tree at {shown})" in texts["summary.md"].splitlines()[0]
        assert f"(source tree at {shown})" in re.search("<title>(.*)</title>", texts["index.html"]).group(1)
        ET.fromstring(texts["junit.xml"].encode("utf-8"))
    assert "nothing changed since the last complete run" in done.stdout  # the rerun reused the verdicts
