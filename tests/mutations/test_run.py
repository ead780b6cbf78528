"""One mutation run in process (`mutations.run.mutate`) on the toy tree, the engine's session replaced by
`FakeSession` (tests/records_support.py), which writes what the session writes: what each phase leaves,
what fails the run, and what the next run keeps. The same runs with mutmut and pytest are the slow tier's
(tests/e2e/test_mutation_run.py, tests/e2e/test_faults_*.py).
"""

from __future__ import annotations

import errno
import io
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from warnonce_guard.cli.main import main
from warnonce_guard.common import locks
from warnonce_guard.common.errors import (
    EngineFailed,
    ExitCode,
    Interrupted,
    MutantsUnaccounted,
    NothingToCheck,
    NotInstalled,
    PathUnusable,
    StagingFailed,
    TargetChanged,
)
from warnonce_guard.guards.detectors import EXCEPTION_RETAINED
from warnonce_guard.guards.sessions import RecordKind
from warnonce_guard.mutations import report
from warnonce_guard.mutations.engine import launch, layout, prewalk
from warnonce_guard.mutations.engine.session import ENGINE_FAILED, WRITE_REFUSED
from warnonce_guard.mutations.records import CRASHED, EXPOSED, KILLED, SKIPPED
from warnonce_guard.mutations.report.viewer import find_viewer
from warnonce_guard.mutations.run import mutate, read_result
from warnonce_guard.mutations.workspace import Workspace

from tests.faults import held_by_another_run
from tests.records_support import KILLED_ONCE, KILLED_TWICE, SURVIVES, UNRECORDED, FakeSession
from tests.toy import INTERFACE, LOGGER_SOURCE, fitting_operators, make_tree

SITE_FILE = "vllm/platforms/interface.py"
MUTANTS = len(fitting_operators(INTERFACE))  # one per operator that fits the toy site


class Run:
    """`mutate` on one tree with one --out and --work-dir under `tmp_path`; each call is one more run."""

    def __init__(self, tree: Path, tmp_path: Path, viewer: Path | None) -> None:
        self.tree, self.out, self.work, self.viewer = tree, tmp_path / "report", tmp_path / "work", viewer
        self.said = ""

    def __call__(self, fail_under: float = 100.0) -> int:
        console = Console(width=200, record=True)
        try:
            return mutate(str(self.tree), self.out, self.work, fail_under, self.viewer, console)
        finally:
            self.said = console.export_text()

    @property
    def ws(self) -> Workspace:
        (folder,) = [p for p in self.work.iterdir() if p.is_dir()]
        return Workspace(folder)

    def stryker_statuses(self) -> list[str]:
        report = json.loads((self.out / "mutation.json").read_text(encoding="utf-8"))
        return sorted(m["status"] for m in report["files"][SITE_FILE]["mutants"])


@pytest.fixture
def run(toy_tree: Path, tmp_path: Path, small_viewer: Path) -> Run:
    return Run(toy_tree, tmp_path, small_viewer)


def test_every_mutant_killed_passes_with_a_report_naming_each_killer(run: Run, fake_session: FakeSession) -> None:
    assert run() == ExitCode.OK

    report = json.loads((run.out / "mutation.json").read_text(encoding="utf-8"))
    mutants = report["files"][SITE_FILE]["mutants"]
    assert sorted(m["mutatorName"] for m in mutants) == fitting_operators(INTERFACE)
    assert {m["status"] for m in mutants} == {"Killed"}
    assert all("interface.py::Platform.import_kernels::vllm._C" in m["killedBy"][0] for m in mutants)
    assert sorted(p.name for p in run.out.iterdir() if not p.name.startswith(".")) == [
        "index.html", "junit.xml", "mutation.json", "summary.md"
    ]  # fmt: skip
    assert f"mutants generated and named: {MUTANTS} (0 with a verdict from an earlier run)" in run.said
    assert f"mutants tested: {MUTANTS} of {MUTANTS}" in run.said
    assert "gate:" not in run.said and len(fake_session.runs) == 1


def test_the_run_stages_a_copy_and_never_writes_the_target(run: Run, fake_session: FakeSession) -> None:
    before = {p: p.read_bytes() for p in run.tree.rglob("*") if p.is_file()}
    run()
    assert {p: p.read_bytes() for p in run.tree.rglob("*") if p.is_file()} == before
    assert (run.ws.dir / SITE_FILE).read_text(encoding="utf-8") == INTERFACE  # the staged copy of the site file
    assert json.loads(run.ws.packages_file.read_text(encoding="utf-8")) == {"vllm": str(run.tree / "vllm")}
    assert [s["file"] for s in json.loads(run.ws.sites_file.read_text(encoding="utf-8"))] == [SITE_FILE]


def test_a_complete_run_is_reused_while_nothing_changed_without_a_session(run: Run, fake_session: FakeSession) -> None:
    run()
    first = read_result(run.ws)
    assert first is not None and first.count(KILLED) == MUTANTS

    assert run() == ExitCode.OK

    assert len(fake_session.runs) == 1  # nothing staged, nothing imported, nothing run
    assert f"its {MUTANTS} verdicts stand" in run.said
    assert run.stryker_statuses() == ["Killed"] * MUTANTS


def test_the_command_starts_one_session_as_it_starts_runs_on_it_and_dismisses_the_one_a_rerun_needs_not(
    run: Run, fake_session: FakeSession
) -> None:
    argv = ["mutate", "--vllm-src", str(run.tree), "--work-dir", str(run.work), "--out", str(run.out)]
    if run.viewer is not None:
        argv += ["--viewer-js", str(run.viewer)]
    assert main(argv) == ExitCode.OK
    assert fake_session.started == [run.work] and len(fake_session.runs) == 1  # the one it started ran it
    assert main(argv) == ExitCode.OK  # the verdicts stand
    assert fake_session.started == [run.work] * 2 and len(fake_session.runs) == 1  # started, never told to go


@pytest.fixture
def started_as_the_command() -> Iterator[Callable[[Run], None]]:
    """What the command's first module does before its parser (`launch.start_early`), for `run`'s command; whatever
    the test left of it is stopped after."""
    yield lambda run: launch.start_early(command(run)[1:])
    launch.stop_early()


def command(run: Run) -> list[str]:
    argv = ["mutate", "--vllm-src", str(run.tree), "--work-dir", str(run.work), "--out", str(run.out)]
    return argv + (["--viewer-js", str(run.viewer)] if run.viewer is not None else [])


def test_a_rerun_takes_the_walk_of_the_target_done_ahead_and_starts_no_session(
    run: Run,
    fake_session: FakeSession,
    started_as_the_command: Callable[[Run], None],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A run whose verdicts stood says in its work root which folders it fingerprinted; the next command there walks
    them in a process forked as it starts (`launch.start_early`), starts no session, and its fingerprint is that
    walk's: the same workspace, its verdicts standing."""
    run()
    assert json.loads((run.work / prewalk.HINT).read_text()) == [str(run.tree / "vllm")]
    started_as_the_command(run)
    assert prewalk.walk is not None and launch.early is None
    monkeypatch.setattr(prewalk, "tree_digest", None)  # calling it here raises: the walk ahead is the only one

    assert main(command(run)) == ExitCode.OK

    assert f"its {MUTANTS} verdicts stand" in capsys.readouterr().out
    assert prewalk.walk is None and fake_session.started == [run.work] and len(fake_session.runs) == 1


def test_a_rerun_that_was_likely_but_finds_the_target_changed_starts_its_session_then(
    run: Run, fake_session: FakeSession, started_as_the_command: Callable[[Run], None]
) -> None:
    run()
    (run.tree / "vllm" / "logger.py").write_text(LOGGER_SOURCE + "# changed\n", encoding="utf-8")
    started_as_the_command(run)
    assert prewalk.walk is not None and fake_session.started == [run.work]  # the first run's only

    assert main(command(run)) == ExitCode.OK

    assert fake_session.started == [run.work] * 2 and len(fake_session.runs) == 2  # tested again, in its own session
    assert run.stryker_statuses() == ["Killed"] * MUTANTS


def test_a_run_that_tests_afresh_leaves_no_hint_until_its_verdicts_stand(
    run: Run, fake_session: FakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    from warnonce_guard.mutations import fresh

    run()
    hint = run.work / prewalk.HINT
    assert hint.is_file()
    (run.tree / "vllm" / "logger.py").write_text(LOGGER_SOURCE + "# changed\n", encoding="utf-8")
    fake_session.outcomes = {1: UNRECORDED}  # one verdict still to come: the result is not kept
    hinted_while_testing = []
    tested = fresh.tested
    monkeypatch.setattr(fresh, "tested", lambda *args: hinted_while_testing.append(hint.exists()) or tested(*args))

    assert run() == ExitCode.CHECK_FAILED
    assert hinted_while_testing == [False]  # a run killed as it tests leaves none either
    assert not hint.exists()  # the next run starts its session at once

    fake_session.outcomes = {}
    assert run() == ExitCode.OK
    assert json.loads(hint.read_text()) == [str(run.tree / "vllm")]


@pytest.mark.parametrize(
    "changed",
    [
        {"platform": "acme.platform.AcmePlatform"},  # a plugin installed since, that vLLM would resolve to
        {"distribution": "acme-vllm==2.0"},  # the same plugin, upgraded
    ],
    ids=["installed", "upgraded"],
)
def test_a_platform_plugin_installed_or_upgraded_since_is_a_change_the_next_run_tests_afresh(
    run: Run, fake_session: FakeSession, monkeypatch: pytest.MonkeyPatch, changed: dict[str, str]
) -> None:
    """The guards load every registered platform plugin (vLLM does, as a guard first logs): verdicts of a run without
    it, or with another version of it, do not stand for one with it."""
    from warnonce_guard.mutations import run as command
    from warnonce_guard.rule.platforms import RegisteredPlatform

    plugin = RegisteredPlatform("acme", "acme.plugin:register", None, distribution="acme-vllm==1.0")
    monkeypatch.setattr(command, "registered_platforms", lambda: [plugin])
    run()
    assert run() == ExitCode.OK and len(fake_session.runs) == 1  # the same plugin: the verdicts stand

    monkeypatch.setattr(command, "registered_platforms", lambda: [replace(plugin, **changed)])
    assert run() == ExitCode.OK
    assert len(fake_session.runs) == 2 and "verdicts stand" not in run.said


def test_another_vllm_plugins_is_a_change_the_next_run_tests_afresh(
    run: Run, fake_session: FakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """VLLM_PLUGINS names the plugins vLLM loads (the guards' environment passes it on)."""
    monkeypatch.delenv("VLLM_PLUGINS", raising=False)
    run()
    monkeypatch.setenv("VLLM_PLUGINS", "acme")
    assert run() == ExitCode.OK and len(fake_session.runs) == 2
    assert run() == ExitCode.OK and len(fake_session.runs) == 2  # the same again: its verdicts stand


def test_a_survivor_fails_the_gate_below_fail_under_and_passes_a_lower_bar(run: Run, fake_session: FakeSession) -> None:
    fake_session.outcomes = {1: SURVIVES}
    score = 100.0 * (MUTANTS - 1) / MUTANTS

    assert run() == ExitCode.CHECK_FAILED
    assert f"gate: score {score:.1f}% is below --fail-under 100%" in run.said
    assert run.stryker_statuses() == sorted(["Killed"] * (MUTANTS - 1) + ["Survived"])

    assert run(fail_under=score) == ExitCode.OK  # the stored verdicts, gated again
    assert len(fake_session.runs) == 1


def test_an_exposed_site_fails_the_run_and_its_mutants_are_skipped_not_killed(
    run: Run, fake_session: FakeSession
) -> None:
    fake_session.baseline = RecordKind.LEAK  # the clean guards fail: mutmut exits 1 and tests no mutant

    assert run() == ExitCode.CHECK_FAILED

    site = "vllm/platforms/interface.py::Platform.import_kernels::vllm._C"
    assert f"gate: {site} is exposed: {EXCEPTION_RETAINED}" in run.said
    result = read_result(run.ws)
    assert result is not None and [b.status for b in result.baselines] == [EXPOSED]
    assert {m.status for m in result.mutants} == {SKIPPED} and len(result.mutants) == MUTANTS
    assert "gate: no mutant ran, so there is no score" in run.said


def test_a_mutant_without_a_finished_guard_record_is_not_counted_and_the_next_run_tests_it_again(
    run: Run, fake_session: FakeSession
) -> None:
    fake_session.outcomes = {1: UNRECORDED}  # mutmut wrote its exit code; the guards' record never came

    assert run() == ExitCode.CHECK_FAILED
    assert "gate: 1 mutant(s) have no finished run (tested again by the next run)" in run.said
    assert not run.ws.result_file.exists()  # a result waiting for a verdict is not kept

    fake_session.outcomes = {}
    assert run() == ExitCode.OK
    codes_found = fake_session.found[1]
    assert sorted(codes_found.values(), key=str) == [1] * (MUTANTS - 1) + [None]  # only that one is tested again
    assert "1 mutant result(s) had no finished guard record behind them" in run.said


def test_a_session_that_dies_before_generating_is_an_engine_failure_not_a_report(
    run: Run, fake_session: FakeSession
) -> None:
    fake_session.generates = False
    with pytest.raises(EngineFailed, match=r"ended \(exit code 1\) before generating its mutants; see .*mutmut\.log"):
        run()
    assert not run.out.exists()


def test_a_session_that_fails_after_generating_is_an_engine_failure_and_its_verdicts_are_kept(
    run: Run, fake_session: FakeSession
) -> None:
    fake_session.exit_code = ENGINE_FAILED  # as the session reports a crash of mutmut's
    failed = rf"the mutmut session failed \(exit code {ExitCode.ENVIRONMENT:d}\); see .*mutmut\.log"
    with pytest.raises(EngineFailed, match=failed):
        run()
    assert not run.out.exists()

    fake_session.exit_code = None
    assert run() == ExitCode.OK
    assert list(fake_session.found[1].values()) == [1] * MUTANTS  # nothing tested twice
    assert f"mutants generated and named: {MUTANTS} ({MUTANTS} with a verdict from an earlier run)" in run.said


def test_mutants_only_mutmut_knows_are_unaccounted_not_ignored(run: Run, fake_session: FakeSession) -> None:
    def one_more_mutant() -> None:
        meta = layout.meta(run.ws, SITE_FILE)
        document = json.loads(meta.read_text(encoding="utf-8"))
        document["exit_code_by_key"]["vllm.platforms.interface.x_stray__mutmut_1"] = 1
        meta.write_text(json.dumps(document), encoding="utf-8")

    fake_session.then = one_more_mutant
    with pytest.raises(MutantsUnaccounted, match=r"only mutmut \['vllm\.platforms\.interface\.x_stray__mutmut_1'\]"):
        run()
    assert not run.out.exists()


def test_a_target_edited_while_the_session_ran_keeps_no_verdicts_and_is_staged_afresh(
    run: Run, fake_session: FakeSession
) -> None:
    def edit() -> None:
        (run.tree / "vllm" / "logger.py").write_text(LOGGER_SOURCE + "\n# edited while the guards ran\n")

    fake_session.then = edit
    with pytest.raises(TargetChanged, match="changed while this run tested it"):
        run()
    assert not run.out.exists()
    assert not run.ws.result_file.exists() and not run.ws.staged_manifest.exists()


def test_a_tree_without_a_once_site_is_nothing_to_check_and_runs_no_session(
    tmp_path: Path, small_viewer: Path, fake_session: FakeSession
) -> None:
    tree = make_tree(tmp_path / "plain", INTERFACE.replace("warning_once", "warning"))
    with pytest.raises(NothingToCheck, match=r"no \*_once call recognised at a guarded kernel import"):
        Run(tree, tmp_path, small_viewer)()
    assert fake_session.runs == [] and not (tmp_path / "report").exists()


def test_a_sites_file_that_does_not_read_back_is_discarded_and_the_sites_discovered_again(
    run: Run, fake_session: FakeSession
) -> None:
    run()
    run.ws.result_file.unlink()  # or the stored verdicts would stand
    run.ws.sites_file.write_text("[", encoding="utf-8")

    assert run() == ExitCode.OK

    assert f"discarded {run.ws.sites_file} (not a list of sites (JSONDecodeError)); discovering again" in run.said
    assert [s["file"] for s in json.loads(run.ws.sites_file.read_text(encoding="utf-8"))] == [SITE_FILE]


def test_a_viewer_bundle_that_is_missing_is_refused_before_any_work(
    run: Run, tmp_path: Path, fake_session: FakeSession
) -> None:
    run.viewer = tmp_path / "no-viewer.js"
    with pytest.raises(PathUnusable, match="--viewer-js"):
        run()
    assert not run.work.exists() and fake_session.runs == []


def test_a_timeout_without_pytest_timeout_installed_is_refused_before_any_work(
    run: Run, fake_session: FakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "pytest_timeout" else found(name))
    with pytest.raises(NotInstalled, match=r"--timeout needs pytest-timeout"):
        mutate(str(run.tree), run.out, run.work, 100.0, run.viewer, Console(), timeout=5.0)
    assert not run.work.exists() and fake_session.runs == []


def test_without_viewer_js_the_report_embeds_the_vendored_viewer(run: Run, fake_session: FakeSession) -> None:
    run.viewer = None
    assert run() == ExitCode.OK
    bundle = find_viewer().read_text(encoding="utf-8")
    assert bundle[:200] in (run.out / "index.html").read_text(encoding="utf-8")


def test_ctrl_c_during_the_session_exits_130_and_its_finished_verdicts_are_kept_where_it_says(
    run: Run, fake_session: FakeSession, capsys: pytest.CaptureFixture[str]
) -> None:
    def ctrl_c() -> None:
        raise Interrupted(ExitCode.INTERRUPTED)  # as the command line's SIGINT handler does

    fake_session.then = ctrl_c
    argv = ["mutate", "--vllm-src", str(run.tree), "--out", str(run.out), "--work-dir", str(run.work)]
    code = main([*argv, "--viewer-js", str(run.viewer)])

    assert code == ExitCode.INTERRUPTED
    said = capsys.readouterr().err.strip().splitlines()
    kept = f"finished verdicts are kept in {run.ws.dir}; the next run tests the rest"
    assert said == [f"warnonce-guard: interrupted; {kept}"]
    assert not run.out.exists()

    fake_session.then = None
    assert run() == ExitCode.OK
    assert list(fake_session.found[1].values()) == [1] * MUTANTS  # none tested twice


@pytest.mark.parametrize("where", ["fresh.repair_workspace", "fresh.write_identities", "run.store_result"])
def test_a_full_disk_after_staging_is_one_line_naming_the_work_directory(
    where: str, run: Run, fake_session: FakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(ws: Workspace, *args: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(ws.dir / "identities.json.1.partial"))

    monkeypatch.setattr(f"warnonce_guard.mutations.{where}", full)
    with pytest.raises(StagingFailed) as raised:
        run()
    said = str(raised.value)
    assert said.startswith(f"cannot write in the work directory {run.ws.dir}: No space left on device: {run.ws.dir}")
    assert "\n" not in said and "--work-dir" in said
    assert raised.value.exit_code == ExitCode.ENVIRONMENT
    assert not run.out.exists()  # no partial report


@pytest.mark.parametrize("record", ["identities.json", "result.json"])
def test_a_full_disk_refusing_a_write_that_names_no_file_is_still_the_work_directorys(
    record: str, run: Run, fake_session: FakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk refuses the `write` (which names no file), not the `open`: on a tmpfs with 88 KB free, writing
    identities.json was a traceback and exit 70."""
    write_text = Path.write_text

    def full_disk(path: Path, *args: Any, **kwargs: Any) -> int:
        if path.name.startswith(f".{record}."):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return write_text(path, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(StagingFailed) as raised:
        run()
    assert str(raised.value).startswith(f"cannot write in the work directory {run.ws.dir}: No space left on device")
    assert not run.out.exists() and not any(p.name.startswith(f".{record}.") for p in run.ws.dir.iterdir())


@pytest.mark.parametrize("filename", [None, "/dev/shm/sem.mp-1", "<stdout>"], ids=["no-file", "shm", "stdout"])
def test_a_full_disk_elsewhere_is_not_blamed_on_the_work_directory(
    filename: str | None, run: Run, fake_session: FakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*args: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), filename)

    monkeypatch.setattr("warnonce_guard.mutations.fresh.repair_workspace", full)
    with pytest.raises(OSError) as raised:  # a traceback (70): the message would name the wrong disk
        run()
    assert not isinstance(raised.value, StagingFailed)


def test_an_os_error_that_is_not_the_disks_keeps_its_traceback(
    run: Run, fake_session: FakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    def bug(*args: object) -> None:
        raise FileNotFoundError(errno.ENOENT, "a file the run itself should have made", "x")

    monkeypatch.setattr("warnonce_guard.mutations.fresh.repair_workspace", bug)
    with pytest.raises(FileNotFoundError):
        run()


# --- which run wrote the report; --out owned by one run; paths that are not UTF-8 ----------------------------


def report_run(out: Path) -> dict[str, object]:
    return json.loads((out / "mutation.json").read_text(encoding="utf-8"))["config"]["run"]


def test_every_report_file_names_the_run_and_its_mutmut_session_ran_under_that_id(
    run: Run, fake_session: FakeSession
) -> None:
    assert run() == ExitCode.OK

    named = report_run(run.out)
    assert named["id"] == fake_session.runs[0]  # the run's id is its session's (generation.json records it)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", named["started"]) and named["toolVersion"]
    assert "verdictsFrom" not in named
    said = f"run {named['id']} started {named['started']}, warnonce-guard {named['toolVersion']}"
    headline = f"warnonce-guard mutation report: vLLM 9.9.9 (source tree at {run.tree / 'vllm'}), {said}"
    assert (run.out / "summary.md").read_text(encoding="utf-8").splitlines()[0] == f"# {headline}"
    assert f"<title>{headline}</title>" in (run.out / "index.html").read_text(encoding="utf-8")


def test_a_rerun_reusing_the_verdicts_names_itself_and_the_run_that_found_them(
    run: Run, fake_session: FakeSession
) -> None:
    run()
    first = report_run(run.out)

    assert run() == ExitCode.OK

    again = report_run(run.out)
    assert again["id"] != first["id"] and len(fake_session.runs) == 1  # a new run, and no session
    assert again["verdictsFrom"] == {k: first[k] for k in ("id", "started", "toolVersion")}
    summary = (run.out / "summary.md").read_text(encoding="utf-8")
    assert f"> The verdicts are those of run {first['id']} (started {first['started']}), reused unchanged" in summary


def test_ctrl_c_says_that_out_still_holds_the_earlier_report_of_another_target_and_names_its_run(
    run: Run, tmp_path: Path, fake_session: FakeSession, capsys: pytest.CaptureFixture[str]
) -> None:
    run()
    earlier = report_run(run.out)
    other = make_tree(tmp_path / "other")
    (other / "vllm" / "_version.py").write_text("__version__ = version = '9.9.8'\n", encoding="utf-8")

    def ctrl_c() -> None:
        raise Interrupted(ExitCode.INTERRUPTED)

    fake_session.then = ctrl_c
    argv = ["mutate", "--vllm-src", str(other), "--out", str(run.out), "--work-dir", str(run.work)]
    assert main([*argv, "--viewer-js", str(run.viewer)]) == ExitCode.INTERRUPTED

    (said,) = capsys.readouterr().err.strip().splitlines()
    assert said.startswith("warnonce-guard: interrupted; finished verdicts are kept in ")
    assert said.endswith(
        f"; --out {run.out} still holds the earlier report: run {earlier['id']} started {earlier['started']}, "
        f"vLLM 9.9.9 (source tree at {run.tree / 'vllm'})"
    )
    assert report_run(run.out) == earlier


def test_a_run_with_its_own_work_directory_is_refused_in_one_line_while_another_writes_to_its_out(
    run: Run, tmp_path: Path, fake_session: FakeSession, capsys: pytest.CaptureFixture[str]
) -> None:
    run()
    before = {p.name: p.read_bytes() for p in run.out.iterdir()}
    with held_by_another_run(locks.out_dir(run.out)):  # as a run holds it, from its path check to its last rename
        argv = ["mutate", "--vllm-src", str(run.tree), "--out", str(run.out), "--work-dir", str(tmp_path / "work2")]
        code = main([*argv, "--viewer-js", str(run.viewer)])

    assert code == ExitCode.ENVIRONMENT
    assert capsys.readouterr().err.strip().splitlines() == [
        f"warnonce-guard: error: --out {run.out}: another warnonce-guard run is writing its report there; wait for "
        "it to finish or pass another --out"
    ]
    assert {p.name: p.read_bytes() for p in run.out.iterdir()} == before and len(fake_session.runs) == 1
    assert run() == ExitCode.OK  # the lock is free again: its file stays, and is taken again


def test_a_target_whose_path_is_not_utf8_gets_its_report_with_the_byte_escaped_on_every_rerun(
    tmp_path: Path, small_viewer: Path, fake_session: FakeSession
) -> None:
    tree = make_tree(tmp_path / os.fsdecode(b"tree\xff"))
    out, work = tmp_path / "report", tmp_path / "work"
    for attempt in ("first", "rerun"):
        stdout = io.BytesIO()  # a console that refuses what UTF-8 cannot hold (PYTHONIOENCODING=utf-8)
        console = Console(file=io.TextIOWrapper(stdout, encoding="utf-8", errors="strict"), width=200)
        assert mutate(str(tree), out, work, 100.0, small_viewer, console) == ExitCode.OK, attempt
        console.file.flush()

        shown = f"{tmp_path}/tree\\xff/vllm"  # the byte as `\xff`, in each file and on the console
        said = stdout.getvalue().decode("utf-8")
        assert "Mutation score: 100.00%" in said and (attempt == "rerun" or f"source tree at {shown}" in said)
        texts = {name: (out / name).read_bytes().decode("utf-8") for name in report.FILES}  # valid UTF-8 each
        assert json.loads(texts["mutation.json"])["config"]["target"] == f"source tree at {shown}"
        assert f"(source tree at {shown})" in texts["summary.md"].splitlines()[0]
        assert f"(source tree at {shown})" in re.search("<title>(.*)</title>", texts["index.html"]).group(1)
        ET.fromstring(texts["junit.xml"].encode("utf-8"))
    assert len(fake_session.runs) == 1  # the rerun reused the stored verdicts, and wrote the report again


# --- a worker killed from outside, a folder that refuses the records --------------------------------------


def test_a_crash_from_one_killed_worker_is_never_kept_and_the_next_run_tests_it_again(
    run: Run, fake_session: FakeSession
) -> None:
    fake_session.outcomes = {1: KILLED_ONCE}  # SIGKILL (the OOM killer), and no second attempt behind it

    assert run() == ExitCode.CHECK_FAILED
    assert "gate: 1 mutant(s) have no finished run (tested again by the next run)" in run.said
    assert not run.ws.result_file.exists()  # never "nothing changed ... its verdicts stand"

    fake_session.outcomes = {}
    assert run() == ExitCode.OK
    assert run.stryker_statuses() == ["Killed"] * MUTANTS
    assert sorted(fake_session.found[1].values(), key=str) == [1] * (MUTANTS - 1) + [None]  # that one tested again


def test_a_worker_killed_on_two_attempts_in_a_row_is_a_crash_that_stands(run: Run, fake_session: FakeSession) -> None:
    fake_session.outcomes = {1: KILLED_TWICE}

    assert run() == ExitCode.CHECK_FAILED
    result = read_result(run.ws)
    assert result is not None and result.count(CRASHED) == 1  # kept: the same outcome twice is the mutant's
    assert "killed (SIGKILL) on 2 attempts in a row" in next(m.reason for m in result.mutants if m.status == CRASHED)


def test_a_ledger_that_does_not_validate_is_discarded_in_one_line_and_its_crashes_tested_again(
    run: Run, fake_session: FakeSession
) -> None:
    fake_session.outcomes = {1: KILLED_TWICE}
    run()
    run.ws.attempts_file.write_text("{", encoding="utf-8")
    run.ws.result_file.unlink()
    fake_session.outcomes = {}

    assert run() == ExitCode.OK
    assert f"discarded {run.ws.attempts_file} (not valid JSON" in run.said
    assert run.stryker_statuses() == ["Killed"] * MUTANTS


def test_a_session_that_could_not_write_is_one_line_naming_the_work_directory_never_a_score(
    run: Run, fake_session: FakeSession
) -> None:
    fake_session.exit_code = WRITE_REFUSED  # the session's guards or mutmut's state were refused

    with pytest.raises(StagingFailed) as raised:
        run()
    assert str(raised.value).startswith(f"cannot write in the work directory {run.ws.dir}")
    assert "\n" not in str(raised.value) and not run.out.exists()


@pytest.mark.parametrize("damage", ["file", "records-file", "immutable"])
def test_an_attribution_folder_that_cannot_be_written_is_one_line_naming_it_before_any_session_runs(
    damage: str, run: Run, fake_session: FakeSession
) -> None:
    run()
    run.ws.result_file.unlink()
    fake_session.runs.clear()
    report = (run.out / "mutation.json").read_bytes()
    attribution = run.ws.attribution
    if damage == "file":
        shutil.rmtree(attribution)
        attribution.write_text("not a folder", encoding="utf-8")
        named = attribution
    elif damage == "records-file":
        shutil.rmtree(attribution / "mutants")
        (attribution / "mutants").write_text("not a folder", encoding="utf-8")
        named = attribution / "mutants"
    else:
        named = attribution / "mutants"
        if subprocess.run(["chattr", "+i", str(named)], capture_output=True).returncode:
            pytest.skip("chattr +i is not available on this filesystem")
    try:
        with pytest.raises(StagingFailed) as raised:
            run()
    finally:
        subprocess.run(["chattr", "-i", str(named)], capture_output=True)
    assert f"the guards' records cannot be written: {named}" in str(raised.value)
    assert fake_session.runs == [] and (run.out / "mutation.json").read_bytes() == report  # no new report


def test_a_failed_session_is_named_by_its_own_line_in_its_log_never_by_an_earlier_runs(
    run: Run, fake_session: FakeSession
) -> None:
    run()
    run.ws.result_file.unlink()
    run.ws.log_file.write_text("warnonce-guard: error: an earlier session's problem\n", encoding="utf-8")
    fake_session.exit_code = ENGINE_FAILED
    with pytest.raises(EngineFailed) as failed:
        run()
    assert "earlier" not in str(failed.value)

    def says() -> None:
        with run.ws.log_file.open("a", encoding="utf-8") as log:
            log.write("warnonce-guard: error: a process generating mutants died\n")

    fake_session.then = says
    failed = rf"failed \(exit code {ExitCode.ENVIRONMENT:d}\): a process generating mutants died; see "
    with pytest.raises(EngineFailed, match=failed):
        run()


UNREAD = """

class Hidden(Platform):
    @classmethod
    def import_kernels(cls) -> None:
        try:
            import vllm._C_AVX2  # noqa: F401
        except ImportError as e:
            getattr(logger, "warning_once")("Failed to import from vllm._C_AVX2: %s", repr(e))
"""


def test_a_site_whose_call_is_not_recognised_is_guarded_listed_and_counted_without_failing_the_run(
    tmp_path: Path, small_viewer: Path, fake_session: FakeSession
) -> None:
    run = Run(make_tree(tmp_path / "tree", INTERFACE + UNREAD), tmp_path, small_viewer)

    assert run() == ExitCode.OK

    summary = (run.out / "summary.md").read_text(encoding="utf-8")
    (row,) = [line for line in summary.splitlines() if "Hidden.import_kernels::vllm._C_AVX2" in line]
    assert "| guarded |" in row and "the handler's call is not recognised: no operator rewrites it there" in row
    assert "2 sites: 2 guarded, 0 exposed, 0 unreached." in summary
    assert "sites exposed: 0, unreached: 0, sites no operator mutates: 1)" in run.said
    assert "baseline (no operator applies)" in run.said


def test_the_command_line_and_the_run_import_no_parser_and_no_engine() -> None:
    """A run that finds its result in the workspace reads it back, reports it and exits: libcst, mutmut, the engine
    and the verdicts' judge are imported only by a fresh run (`mutations.fresh`: discovery, generation, naming,
    judging), two thirds of a rerun's imports; and
    a fresh run starts its session (`engine.launch`, imported here) before it imports either."""
    heavy = (
        "('libcst', 'mutmut', 'warnonce_guard.mutations.engine.session', 'warnonce_guard.rule.sites', 'http', "
        "'warnonce_guard.mutations.fresh', 'warnonce_guard.mutations.judge', 'warnonce_guard.mutations.engine.state')"
    )
    code = (
        "import sys, warnonce_guard.cli.main, warnonce_guard.mutations.run; "
        f"print(sorted(m for m in sys.modules if m.startswith({heavy})))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert found.strip() == "[]"


def test_a_rerun_checking_its_expected_sites_needs_nothing_of_a_fresh_run(
    run: Run, fake_session: FakeSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`nox -s mutation` and vLLM's Buildkite step pass --expect-sites on every run: its check reads the sites the
    workspace recorded, so a rerun stays one that imports none of the engine (`mutations.fresh`)."""
    from warnonce_guard.mutations.stage import read_sites
    from warnonce_guard.rule import expected

    assert run() == ExitCode.OK
    record = run.ws.dir.parent.parent / "expected.json"
    expected.write(record, read_sites(run.ws), "the toy tree")
    monkeypatch.setitem(sys.modules, "warnonce_guard.mutations.fresh", None)  # importing it raises ImportError
    console = Console(width=200, record=True)

    code = mutate(str(run.tree), run.out, run.work, 100.0, run.viewer, console, expect_sites=record)

    assert code == ExitCode.OK, console.export_text()
    assert "nothing changed since the last complete run" in console.export_text()
    assert len(fake_session.found) == 1  # the first run's session only
