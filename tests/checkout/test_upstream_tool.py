"""`nox -s upstream` (tools/vllm_tests/upstream.py): its table from the runs' reports, the exported test's copy of
vLLM's tests kept between runs, and its verdict: the export must kill every mutant and hold in both suites."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tools.vllm_tests import exported, upstream


def report(folder: Path, statuses: list[str], failing: dict[str, str] | None = None) -> Path:
    config: dict[str, object] = {"scoredBy": "the tests x", "score": 50.0}
    if failing is not None:
        config["failingOnUnmutated"] = failing
    files = {"vllm/platforms/cpu.py": {"mutants": [{"status": status} for status in statuses]}}
    folder.mkdir(parents=True)
    (folder / "mutation.json").write_text(json.dumps({"files": files, "config": config}))
    return folder


def test_a_row_counts_each_outcome_and_says_how_many_tests_were_left_out(tmp_path: Path) -> None:
    statuses = ["Killed", "Survived", "NoCoverage", "NoCoverage", "Timeout"]
    score = upstream.read_score(report(tmp_path / "r", statuses, {"t::a": "x", "t::b": "y"}), "vLLM's", 1)
    assert score.row() == ["vLLM's, 2 failing on the unmutated code left out", "5", "1", "1", "2", "50.0%"]
    assert upstream.read_score(report(tmp_path / "s", []), "none", 1).row()[0] == "none"


def test_the_table_lines_its_columns_up() -> None:
    lines = upstream.table(["suite", "score"], [["long suite name", "0.0%"], ["x", "100.0%"]]).splitlines()
    assert lines == [
        "suite            score ",
        "---------------  ------",
        "long suite name  0.0%  ",
        "x                100.0%",
    ]


def test_the_suites_copy_is_hard_links_and_keeps_an_unchanged_export_as_it_was(tmp_path: Path) -> None:
    tree = tmp_path / "vllm-0.33.0"
    (tree / "tests" / "platforms").mkdir(parents=True)
    (tree / "tests" / "conftest.py").write_text("")
    file = tmp_path / "exported.py"
    file.write_text("def test_x():\n    pass\n")

    suite = upstream.suite_with(file, tree, tmp_path / "suite")
    placed = suite / exported.PATH
    assert placed.read_text() == file.read_text() and not (tree / exported.PATH).exists()  # the fetched tree unwritten
    assert os.stat(suite / "tests" / "conftest.py").st_ino == os.stat(tree / "tests" / "conftest.py").st_ino
    before = placed.stat().st_mtime_ns
    os.utime(file, ns=(before + 10**9, before + 10**9))  # export-test writes it anew each time
    assert upstream.suite_with(file, tree, tmp_path / "suite") == suite
    assert placed.stat().st_mtime_ns == before  # unchanged text: the same workspace key, nothing re-tested
    file.write_text("def test_y():\n    pass\n")
    assert upstream.suite_with(file, tree, tmp_path / "suite").joinpath(exported.PATH).read_text() == file.read_text()


def test_a_mutation_run_that_gives_no_verdict_stops_the_proof(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upstream, "CLI", ("sh", "-c", "exit 4", "--"))  # the environment failed: no report
    with pytest.raises(SystemExit, match="ended with exit code 4, no verdict"):
        upstream.mutate(tmp_path, "x", "x", tmp_path, ["t.py"])
