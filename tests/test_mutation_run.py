"""The whole mutation run, end to end, on a small vLLM-shaped tree (no torch): stage, mutmut, verdicts, report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from toy import EAGER_CALL, LOGGER_SOURCE, PLATFORM_SOURCE

from mutations import stage
from mutations.run import GATE_FAILED, mutate

pytestmark = pytest.mark.slow

LOGGER = LOGGER_SOURCE

INTERFACE = PLATFORM_SOURCE.replace("CALL", EAGER_CALL).replace("PKG", "vllm")


def make_tree(root: Path, interface: str = INTERFACE) -> Path:
    package = root / "vllm"
    (package / "platforms").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "_version.py").write_text("__version__ = version = '9.9.9'\n__commit_id__ = commit_id = 'gtoy'\n")
    (package / "logger.py").write_text(LOGGER)
    (package / "platforms" / "__init__.py").write_text("")
    (package / "platforms" / "interface.py").write_text(interface)
    return root


def run(tree: Path, tmp_path: Path) -> tuple[int, Path, Path]:
    out, work = tmp_path / "report", tmp_path / "work"
    code = mutate(str(tree), out, work, 100.0, None, Console(width=200, record=True))
    return code, out, work


def test_every_operator_is_killed_with_its_guard_and_detectors_named(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    code, out, _ = run(tree, tmp_path)

    assert code == 0
    report = json.loads((out / "mutation.json").read_text())
    mutants = report["files"]["vllm/platforms/interface.py"]["mutants"]
    assert sorted(m["mutatorName"] for m in mutants) == ["eager-repr-revert", "live-arg", "once-dropped"]
    assert {m["status"] for m in mutants} == {"Killed"}
    assert all(m["killedBy"] and "interface-Platform.import_kernels" in m["killedBy"][0] for m in mutants)
    summary = (out / "summary.md").read_text()
    assert "warning repeated" in summary and "exception retained" in summary
    assert (out / "junit.xml").is_file() and (out / "index.html").is_file()


def test_guards_import_the_staged_copy_and_the_tree_is_left_as_it_was(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    code, _, work = run(tree, tmp_path)

    assert code == 0
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == before  # no __pycache__ either
    (ws,) = [p for p in work.iterdir() if p.is_dir()]
    mutated = (ws / "mutants" / "vllm" / "platforms" / "interface.py").read_text()
    assert "__mutmut_1" in mutated  # what the guards imported carries the mutants
    pristine = ws / "vllm" / "platforms" / "interface.py"  # mutmut wrote its copy, not through a link
    assert pristine.read_text() == INTERFACE
    assert not os.path.samefile(pristine, ws / "mutants" / "vllm" / "platforms" / "interface.py")
    assert os.path.samefile(ws / "vllm" / "logger.py", ws / "mutants" / "vllm" / "logger.py")
    records = [json.loads(line) for f in (ws / "attribution").glob("*.jsonl") for line in f.read_text().splitlines()]
    assert records and all(r["outcome"] in ("passed", "failed") for r in records)


def test_a_leaking_tree_is_exposed_and_fails_the_gate(tmp_path: Path) -> None:
    leaking = INTERFACE.replace('%s", repr(e)', '%r", e')
    code, out, _ = run(make_tree(tmp_path / "tree", leaking), tmp_path)

    assert code == GATE_FAILED
    summary = (out / "summary.md").read_text()
    assert "exposed" in summary and "owner pinned" in summary
    assert not any(
        m["status"] == "Killed"
        for f in json.loads((out / "mutation.json").read_text())["files"].values()
        for m in f["mutants"]
    )


def test_a_second_run_with_nothing_changed_retests_no_mutant(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    run(tree, tmp_path)
    (ws,) = [p for p in (tmp_path / "work").iterdir() if p.is_dir()]
    records_before = len(list((ws / "attribution").glob("*__mutmut_*.jsonl")))
    mtimes = {f: f.stat().st_mtime_ns for f in (ws / "attribution").glob("*__mutmut_*.jsonl")}

    code, out, _ = run(tree, tmp_path)

    assert code == 0 and records_before == 3
    assert {f: f.stat().st_mtime_ns for f in (ws / "attribution").glob("*__mutmut_*.jsonl")} == mtimes
    statuses = [
        m["status"] for f in json.loads((out / "mutation.json").read_text())["files"].values() for m in f["mutants"]
    ]
    assert statuses.count("Killed") == 3


def test_a_change_of_target_gets_a_fresh_work_directory(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    first = stage.workspace(stage_target(tree), tmp_path / "work")
    (tree / "vllm" / "platforms" / "interface.py").write_text(INTERFACE + "\n# changed\n")
    assert stage.workspace(stage_target(tree), tmp_path / "work") != first


def stage_target(tree: Path):
    from guards.target import source_tree

    return source_tree(tree)


def test_old_work_directories_are_pruned_but_the_current_one_kept(tmp_path: Path) -> None:
    work = tmp_path / "work"
    old = [work / f"old{i}" for i in range(5)]
    for i, path in enumerate(old):
        path.mkdir(parents=True)
        os.utime(path, (1000 + i, 1000 + i))
    current = stage.Workspace(work / "current")
    current.dir.mkdir()

    removed = stage.prune(current, keep=3)

    assert sorted(removed) == sorted(old[:3])
    assert sorted(p.name for p in work.iterdir()) == ["current", "old3", "old4"]


def test_mutmut_results_and_show_work_on_the_run(tmp_path: Path) -> None:
    run(make_tree(tmp_path / "tree"), tmp_path)
    (ws,) = [p for p in (tmp_path / "work").iterdir() if p.is_dir()]
    mutmut = [sys.executable, "-c", "from mutmut.__main__ import cli; cli()"]

    results = subprocess.run([*mutmut, "results", "--all", "true"], cwd=ws, capture_output=True, text=True)
    assert results.stdout.count(": killed") == 3, results.stdout + results.stderr

    name = "vllm.platforms.interface.xǁPlatformǁimport_kernels__mutmut_1"
    shown = subprocess.run([*mutmut, "show", name], cwd=ws, capture_output=True, text=True)
    assert f"# {name}: killed" in shown.stdout
    assert '+        logger.warning_once("Failed to import from vllm._C: %r", e)' in shown.stdout


def test_a_session_that_dies_before_generating_is_an_error_not_a_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mutations import run as run_module

    monkeypatch.setattr(run_module, "run_session", lambda *args: 7)
    with pytest.raises(stage.StagingFailed, match=r"exit code 7\) before writing mutants for vllm/platforms"):
        run(make_tree(tmp_path / "tree"), tmp_path)
    assert not (tmp_path / "report").exists()
