"""The whole mutation run, end to end, on a small vLLM-shaped tree (no torch): stage, mutmut, verdicts, report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from warnonce_guard.common.errors import EngineFailed, ExitCode, TargetChanged
from warnonce_guard.guards.detectors import EXCEPTION_RETAINED, OWNER_PINNED, WARNING_REPEATED
from warnonce_guard.mutations.fresh import run_session
from warnonce_guard.mutations.run import mutate

from tests.toy import FIXED_LOGGER_SOURCE, INTERFACE, LOGGER_SOURCE, fitting_operators, make_tree

pytestmark = pytest.mark.slow


def run(tree: Path, tmp_path: Path) -> tuple[int, Path, Path]:
    out, work = tmp_path / "report", tmp_path / "work"
    code = mutate(str(tree), out, work, 100.0, None, Console(width=200, record=True))
    return code, out, work


def workspace_of(work: Path) -> Path:
    (ws,) = [p for p in work.iterdir() if p.is_dir()]
    return ws


def statuses(out: Path) -> list[str]:
    report = json.loads((out / "mutation.json").read_text())
    return sorted(m["status"] for f in report["files"].values() for m in f["mutants"])


def test_every_operator_is_killed_with_its_guard_and_detectors_named(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    code, out, _ = run(tree, tmp_path)

    assert code == ExitCode.OK
    report = json.loads((out / "mutation.json").read_text())
    mutants = report["files"]["vllm/platforms/interface.py"]["mutants"]
    assert sorted(m["mutatorName"] for m in mutants) == fitting_operators(INTERFACE)
    assert {m["status"] for m in mutants} == {"Killed"}
    assert all(m["killedBy"] and "interface-Platform.import_kernels" in m["killedBy"][0] for m in mutants)
    summary = (out / "summary.md").read_text()
    assert WARNING_REPEATED in summary and EXCEPTION_RETAINED in summary
    assert (out / "junit.xml").is_file() and (out / "index.html").is_file()


def test_on_a_cache_that_renders_first_a_mutant_leaking_only_into_the_cache_is_neutralized(tmp_path: Path) -> None:
    """The toy with export-fix's patch: eager-repr-revert passes and leaks with vLLM's stock cache (neutralized);
    once-dropped repeats and live-arg changes the text whatever the cache (killed); the run passes."""
    code, out, _ = run(make_tree(tmp_path / "tree", logger=FIXED_LOGGER_SOURCE), tmp_path)

    assert code == ExitCode.OK
    mutants = json.loads((out / "mutation.json").read_text())["files"]["vllm/platforms/interface.py"]["mutants"]
    by_operator = {m["mutatorName"]: (m["status"], m.get("statusReason", "")) for m in mutants}
    assert by_operator["eager-repr-revert"][0] == "Ignored"
    assert "with vLLM's stock cache the same drive leaked" in by_operator["eager-repr-revert"][1]
    assert by_operator["once-dropped"][0] == by_operator["live-arg"][0] == "Killed"
    summary = (out / "summary.md").read_text()
    assert "1 more neutralized by the target's cache, not scored" in summary
    assert "The cache closes the class." in summary


def test_the_session_imports_the_target_while_the_mutants_are_generated(tmp_path: Path) -> None:
    code, _, work = run(make_tree(tmp_path / "tree"), tmp_path)

    assert code == ExitCode.OK
    assert "vllm imported" in (workspace_of(work) / "mutmut.log").read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize(
    "init",
    [
        "from vllm.platforms import interface\n",
        # an import that a missing site module would leave half done: the warm-up is not an ImportError
        "try:\n    from vllm.platforms import interface\nexcept ImportError:\n    interface = None\n",
        "try:\n    from vllm.platforms import interface\nexcept Exception:\n    interface = None\n",
    ],
    ids=["imports-a-site-module", "catches-ImportError", "catches-Exception"],
)
def test_a_target_whose_package_imports_a_site_module_is_tested_by_a_session_that_never_imported_it(
    tmp_path: Path, init: str
) -> None:
    tree = make_tree(tmp_path / "tree")
    (tree / "vllm" / "__init__.py").write_text(init)
    code, out, work = run(tree, tmp_path)

    assert code == ExitCode.OK and set(statuses(out)) == {"Killed"}
    log = (workspace_of(work) / "mutmut.log").read_text(encoding="utf-8")
    assert "not imported while the mutants are generated: importing vllm imports its site module " in log


def test_guards_import_the_staged_copy_and_the_tree_is_left_as_it_was(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    code, _, work = run(tree, tmp_path)

    assert code == ExitCode.OK
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == before  # no __pycache__ either
    ws = workspace_of(work)
    mutated = (ws / "mutants" / "vllm" / "platforms" / "interface.py").read_text()
    assert "__mutmut_1" in mutated  # what the guards imported carries the mutants
    staged = ws / "vllm" / "platforms" / "interface.py"  # mutmut wrote its copy, not through a link
    assert staged.read_text() == INTERFACE
    assert not os.path.samefile(staged, ws / "mutants" / "vllm" / "platforms" / "interface.py")
    assert sorted(p.name for p in (ws / "vllm").rglob("*")) == ["interface.py", "platforms"]  # nothing else staged
    assert not (ws / "mutants" / "vllm" / "logger.py").exists()  # the guards import it from the tree
    sessions = [json.loads(f.read_text()) for f in (ws / "attribution" / "mutants").glob("*.json")]
    assert len(sessions) == len(fitting_operators(INTERFACE)) and all(s["exit_status"] == 1 for s in sessions)


def test_a_leaking_tree_is_exposed_and_fails_the_gate(tmp_path: Path) -> None:
    leaking = INTERFACE.replace('%s", repr(e)', '%r", e')
    code, out, _ = run(make_tree(tmp_path / "tree", leaking), tmp_path)

    assert code == ExitCode.CHECK_FAILED
    summary = (out / "summary.md").read_text()
    assert "exposed" in summary and OWNER_PINNED in summary
    assert "Killed" not in statuses(out)


def test_a_site_exposed_at_baseline_leaves_the_other_sites_mutants_tested(tmp_path: Path) -> None:
    """mutmut stops at the first guard that fails on the unmutated code: the guards of the sites that pass there test
    the mutants again on their own, so one leaking site is one exposed site, not a run with nothing scored."""
    tree = make_tree(tmp_path / "tree")
    leaking = INTERFACE.replace('%s", repr(e)', '%r", e').replace("class Platform", "class Leaky")
    (tree / "vllm" / "platforms" / "leaky.py").write_text(leaking, encoding="utf-8")
    code, out, _ = run(tree, tmp_path)

    assert code == ExitCode.CHECK_FAILED
    summary = (out / "summary.md").read_text()
    assert "2 sites: 1 guarded, 1 exposed, 0 unreached." in summary
    killed = len(fitting_operators(INTERFACE))
    assert f"**Mutation score:** 100.00% ({killed} killed of {killed} reached)" in summary
    assert statuses(out).count("Killed") == killed


def test_a_second_run_with_nothing_changed_retests_no_mutant(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    run(tree, tmp_path)
    ws = workspace_of(tmp_path / "work")
    mtimes = {f: f.stat().st_mtime_ns for f in (ws / "attribution" / "mutants").glob("*.json")}

    code, out, _ = run(tree, tmp_path)

    assert code == ExitCode.OK and len(mtimes) == len(fitting_operators(INTERFACE))
    assert {f: f.stat().st_mtime_ns for f in (ws / "attribution" / "mutants").glob("*.json")} == mtimes
    assert statuses(out) == ["Killed"] * len(fitting_operators(INTERFACE))


def test_mutmut_results_and_show_work_on_the_run(tmp_path: Path) -> None:
    run(make_tree(tmp_path / "tree"), tmp_path)
    ws = workspace_of(tmp_path / "work")
    mutmut = [sys.executable, "-c", "from mutmut.__main__ import cli; cli()"]

    results = subprocess.run([*mutmut, "results", "--all", "true"], cwd=ws, capture_output=True, text=True)
    assert results.stdout.count(": killed") == len(fitting_operators(INTERFACE)), results.stdout + results.stderr

    name = "vllm.platforms.interface.xǁPlatformǁimport_kernels__mutmut_1"
    shown = subprocess.run([*mutmut, "show", name], cwd=ws, capture_output=True, text=True)
    assert f"# {name}: killed" in shown.stdout
    assert '+        logger.warning_once("Failed to import from vllm._C: %r", e)' in shown.stdout


def test_a_session_that_dies_before_generating_is_an_error_not_a_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("warnonce_guard.mutations.fresh.run_session", lambda *args: 7)
    with pytest.raises(EngineFailed, match=r"exit code 7\) before generating its mutants; see .*mutmut\.log"):
        run(make_tree(tmp_path / "tree"), tmp_path)
    assert not (tmp_path / "report").exists()


def test_a_session_that_fails_after_generating_is_an_error_not_a_report_of_unreached_sites(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = run_session

    def crashed(*args: object) -> int:
        real(*args)  # generates, and records what it can
        return int(ExitCode.ENVIRONMENT)  # as the session reports a crash of mutmut's

    monkeypatch.setattr("warnonce_guard.mutations.fresh.run_session", crashed)
    failed = rf"the mutmut session failed \(exit code {ExitCode.ENVIRONMENT:d}\); see .*mutmut\.log"
    with pytest.raises(EngineFailed, match=failed):
        run(make_tree(tmp_path / "tree"), tmp_path)
    assert not (tmp_path / "report").exists()


CRASHING_SESSION = """
import sys
from warnonce_guard.mutations.engine import session

def crash(*args):
    raise KeyError("tests_by_mangled_function_name")  # as mutmut's load_stats does on a stats file it cannot read

session.run_mutmut = crash
session.generate = lambda *args: None  # as if it had generated (generation.json is there)
session.bind_to_parent = lambda: None
sys.exit(session.main(sys.argv[1:]))
"""


def test_a_crash_inside_the_session_is_its_own_exit_code_not_mutmuts_clean_guards_failed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "packages.json").write_text(json.dumps({"vllm": str(tmp_path / "tree" / "vllm")}))
    (ws / "generation.json").write_text(json.dumps({"run": "run1", "files": {}}))
    (ws / "sites.json").write_text("[]")  # staged, as packages.json: the session tells the guards its sites first
    given = {"workspace": str(ws), "run": "run1", "warm_up": [], "confirm": 1}
    done = subprocess.run(
        [sys.executable, "-c", CRASHING_SESSION, str(tmp_path)],
        input=json.dumps(given) + "\n[]\n",  # as `assign`, then `tell_to_mutate`, write them
        capture_output=True,
        text=True,
        timeout=60,
    )
    log = (ws / "mutmut.log").read_text(encoding="utf-8")
    assert done.returncode == ExitCode.ENVIRONMENT, done.stderr + log  # not 1: that means "the clean guards failed"
    assert "KeyError: 'tests_by_mangled_function_name'" in log  # the traceback goes to mutmut.log


def test_a_target_edited_during_the_run_keeps_no_verdicts_and_is_staged_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = make_tree(tmp_path / "tree")
    real_session = run_session

    def session_then_an_edit(*args: object, **kwargs: object) -> int:
        code = real_session(*args, **kwargs)  # type: ignore[arg-type]
        (tree / "vllm" / "logger.py").write_text(LOGGER_SOURCE + "\n# edited while the guards ran\n")
        return code

    monkeypatch.setattr("warnonce_guard.mutations.fresh.run_session", session_then_an_edit)
    with pytest.raises(TargetChanged, match="changed while this run tested it"):
        run(tree, tmp_path)
    ws = workspace_of(tmp_path / "work")
    assert not (tmp_path / "report").exists()
    assert not (ws / "result.json").exists() and not (ws / "staged.json").exists()
