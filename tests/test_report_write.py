"""write_report: four files, written into a temporary sibling and swapped in whole."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
import warnonce_guard.mutations.report as report
from records_support import sample_result
from warnonce_guard.guards.errors import PathRefused
from warnonce_guard.mutations.ownership import MARKER
from warnonce_guard.mutations.report import junit, write_report


@pytest.fixture
def viewer(tmp_path: Path) -> Path:
    path = tmp_path / "viewer.js"
    path.write_text("/* stand-in for mutation-test-elements.js */", encoding="utf-8")
    return path


def leftovers(parent: Path, name: str) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{name}."))


def test_writes_the_four_files_and_returns_their_paths(tmp_path: Path, viewer: Path) -> None:
    out = tmp_path / "mutation-report"
    paths = write_report(sample_result(), out, viewer)
    assert [p.name for p in paths] == ["mutation.json", "index.html", "summary.md", "junit.xml"]
    assert all(p.parent == out and p.stat().st_size > 0 for p in paths)
    assert (out / MARKER).is_file()  # a later run may replace it: it is ours
    assert json.loads((out / "mutation.json").read_text(encoding="utf-8"))["schemaVersion"] == "2"
    assert "stand-in for mutation-test-elements.js" in (out / "index.html").read_text(encoding="utf-8")
    assert leftovers(tmp_path, out.name) == []


def test_an_old_report_is_replaced_whole(tmp_path: Path, viewer: Path) -> None:
    out = tmp_path / "mutation-report"
    write_report(sample_result(), out, viewer)
    (out / "stale.txt").write_text("from an older run", encoding="utf-8")
    write_report(sample_result(), out, viewer)
    assert sorted(p.name for p in out.iterdir()) == sorted([*report.FILES, MARKER])
    assert leftovers(tmp_path, out.name) == []


def test_a_directory_it_did_not_write_is_refused_and_left_as_it_was(tmp_path: Path, viewer: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "keep.txt").write_text("precious", encoding="utf-8")
    with pytest.raises(PathRefused, match="holds files warnonce-guard did not create"):
        write_report(sample_result(), out, viewer)
    assert [p.name for p in out.iterdir()] == ["keep.txt"] and (out / "keep.txt").read_text() == "precious"
    assert leftovers(tmp_path, out.name) == []


def test_leftovers_of_a_swap_killed_halfway_are_swept_but_only_marked_ones(tmp_path: Path, viewer: Path) -> None:
    out = tmp_path / "mutation-report"
    write_report(sample_result(), out, viewer)
    ours = tmp_path / ".mutation-report.tmp-1-abcd"
    ours.mkdir()
    (ours / MARKER).write_text('{"tool": "warnonce-guard", "kind": "report"}')
    foreign = tmp_path / ".mutation-report.tmp-2-user"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("precious")

    killed_before_marking = tmp_path / ".mutation-report.tmp-3-efgh"  # SIGKILL between mkdir and the marker
    killed_before_marking.mkdir()
    killed_while_marking = tmp_path / ".mutation-report.tmp-4-ijkl"  # ... or while the marker was written
    killed_while_marking.mkdir()
    (killed_while_marking / MARKER).write_text("")

    write_report(sample_result(), out, viewer)

    assert not ours.exists() and (foreign / "keep.txt").read_text() == "precious"
    assert not killed_before_marking.exists() and not killed_while_marking.exists()


def test_a_failing_writer_leaves_the_old_report_untouched_and_no_temp_dir(
    tmp_path: Path, viewer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "mutation-report"
    write_report(sample_result(), out, viewer)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken(result: object) -> bytes:
        raise RuntimeError("disk full halfway")

    monkeypatch.setattr(junit, "render", broken)  # the last writer: three files are already in the temp dir
    changed = sample_result()
    changed.vllm_version = "9.9.9"
    with pytest.raises(RuntimeError, match="disk full halfway"):
        write_report(changed, out, viewer)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert leftovers(tmp_path, out.name) == []


def test_a_failing_writer_with_no_old_report_leaves_nothing(
    tmp_path: Path, viewer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(junit, "render", lambda result: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        write_report(sample_result(), tmp_path / "mutation-report", viewer)
    assert list(tmp_path.iterdir()) == [viewer]


def test_report_directory_gets_an_ordinary_mode(tmp_path: Path, viewer: Path) -> None:
    out = tmp_path / "mutation-report"
    write_report(sample_result(), out, viewer)
    assert out.stat().st_mode & 0o055  # readable by others (not mkdtemp's 0700) under the usual umask


def test_ctrl_c_between_the_two_renames_of_a_swap_leaves_a_whole_report(
    tmp_path: Path, viewer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "mutation-report"
    write_report(sample_result(), out, viewer)
    real_replace = os.replace

    def replace_then_ctrl_c(source: object, destination: object) -> None:
        real_replace(source, destination)
        if Path(str(source)) == out:  # the old report was just moved aside: Ctrl-C lands now
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(os, "replace", replace_then_ctrl_c)
    changed = sample_result()
    changed.vllm_version = "9.9.9"
    with pytest.raises(KeyboardInterrupt):
        write_report(changed, out, viewer)

    assert sorted(p.name for p in out.iterdir()) == sorted([*report.FILES, MARKER])  # never absent or half
    assert "9.9.9" in (out / "summary.md").read_text(encoding="utf-8")
