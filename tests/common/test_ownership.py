"""Own only what you create: --out and --work-dir are refused before any work unless missing, empty or ours."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from warnonce_guard.common.errors import PathRefused, PathUnusable
from warnonce_guard.common.files import MARKER, Kind, mark
from warnonce_guard.common.ownership import Protected, check_out_dir, check_readable_file, check_work_root


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "checkout" / "vllm").mkdir(parents=True)
    return tmp_path / "checkout"


def protected(tree: Path) -> list[Protected]:
    return [Protected("the target package vllm/", tree / "vllm"), Protected("the target tree", tree, inside_ok=True)]


def test_a_missing_or_empty_directory_or_an_earlier_report_is_accepted(tmp_path: Path, tree: Path) -> None:
    assert check_out_dir(tmp_path / "new" / "report", protected(tree), cwd=tree) == tmp_path / "new" / "report"
    (tmp_path / "empty").mkdir()
    check_out_dir(tmp_path / "empty", protected(tree), cwd=tree)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "index.html").write_text("x")
    mark(tmp_path / "old", Kind.REPORT)
    check_out_dir(tmp_path / "old", protected(tree), cwd=tree)


def test_a_report_beside_vllm_inside_a_checkout_is_accepted(tree: Path) -> None:
    check_out_dir(tree / "mutation-report", protected(tree), cwd=tree)


def test_an_existing_file_is_refused(tmp_path: Path, tree: Path) -> None:
    (tmp_path / "f").write_text("precious")
    with pytest.raises(PathRefused, match="a file is there"):
        check_out_dir(tmp_path / "f", protected(tree), cwd=tree)


def test_a_foreign_directory_is_refused(tmp_path: Path, tree: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "keep.txt").write_text("precious")
    with pytest.raises(PathRefused, match="did not create"):
        check_out_dir(tmp_path / "mine", protected(tree), cwd=tree)


def test_a_work_directory_marker_does_not_make_it_a_report(tmp_path: Path, tree: Path) -> None:
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "x").write_text("state")
    mark(tmp_path / "w", Kind.WORK_ROOT)
    with pytest.raises(PathRefused):
        check_out_dir(tmp_path / "w", protected(tree), cwd=tree)


@pytest.mark.parametrize("where", ["root", "package", "inside-package", "above-root"])
def test_the_target_is_refused_inside_and_above(tree: Path, where: str) -> None:
    path = {"root": tree, "package": tree / "vllm", "inside-package": tree / "vllm" / "r", "above-root": tree.parent}
    with pytest.raises(PathRefused, match="target"):
        check_out_dir(path[where], protected(tree), cwd=Path("/"))


def test_the_current_directory_and_above_are_refused(tmp_path: Path, tree: Path) -> None:
    here = tmp_path / "here"
    here.mkdir()
    for path in (here, tmp_path):
        with pytest.raises(PathRefused, match="current directory"):
            check_out_dir(path, [], cwd=here)


def test_the_work_directory_and_the_report_keep_apart(tmp_path: Path) -> None:
    with pytest.raises(PathRefused, match="work directory"):
        work = Protected("the work directory (--work-dir)", tmp_path / "w")
        check_out_dir(tmp_path / "w" / "r", [work], cwd=Path("/"))
    with pytest.raises(PathRefused, match="report directory"):
        check_work_root(tmp_path, [Protected("the report directory (--out)", tmp_path / "r")])


def test_a_foreign_work_directory_is_refused_and_an_empty_one_accepted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "p1").mkdir(parents=True)
    with pytest.raises(PathRefused, match="did not create"):
        check_work_root(home, [])
    assert check_work_root(tmp_path / "fresh", []) == tmp_path / "fresh"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_a_read_only_parent_is_unusable(tmp_path: Path) -> None:
    locked = tmp_path / "ro"
    locked.mkdir(mode=0o555)
    with pytest.raises(PathUnusable, match="not writable"):
        check_out_dir(locked / "r", [], cwd=Path("/"))


def test_a_parent_that_is_a_file_is_unusable(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    with pytest.raises(PathUnusable, match="not a directory"):
        check_out_dir(tmp_path / "f" / "r", [], cwd=Path("/"))


def test_a_symlink_is_not_taken_for_our_directory(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    mark(real, Kind.REPORT)
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(PathRefused):
        check_out_dir(tmp_path / "link", [], cwd=Path("/"))


def test_viewer_js_must_be_a_readable_file(tmp_path: Path) -> None:
    with pytest.raises(PathUnusable, match="no such file"):
        check_readable_file(tmp_path / "missing.js", "--viewer-js")
    (tmp_path / "v.js").write_text("x")
    assert check_readable_file(tmp_path / "v.js", "--viewer-js") == tmp_path / "v.js"


@pytest.mark.parametrize("option", ["--out", "--work-dir"])
def test_a_symlinked_parent_does_not_lead_inside_the_target(tmp_path: Path, tree: Path, option: str) -> None:
    (tmp_path / "link").symlink_to(tree / "vllm")  # link/report is tree/vllm/report on disk
    checks = {
        "--out": lambda path: check_out_dir(path, protected(tree), cwd=Path("/")),
        "--work-dir": lambda path: check_work_root(path, protected(tree)),
    }
    with pytest.raises(PathRefused, match="is the target package vllm/"):
        checks[option](tmp_path / "link" / "report")


def test_the_current_directory_reached_through_a_symlinked_parent_is_refused(tmp_path: Path) -> None:
    here = tmp_path / "here"
    here.mkdir()  # empty: without the check it would be accepted and swapped out for the report
    (tmp_path / "l").symlink_to(tmp_path)
    with pytest.raises(PathRefused, match="current directory"):
        check_out_dir(tmp_path / "l" / "here", [], cwd=here)


def test_a_viewer_bundle_that_is_not_utf8_text_is_refused_before_any_work(tmp_path: Path) -> None:
    bundle = tmp_path / "viewer.js"
    bundle.write_bytes(b"/* bundle */" * 200_000 + b"\x8c")  # read whole only after the run, into index.html
    with pytest.raises(PathUnusable, match="not UTF-8 text"):
        check_readable_file(bundle, "--viewer-js", utf8=True)
    assert check_readable_file(bundle, "--viewer-js") == bundle  # any readable file, when text is not needed
    bundle.write_bytes("/* é, split across a read boundary */".encode() * 100_000)
    assert check_readable_file(bundle, "--viewer-js", utf8=True) == bundle


def test_a_directory_holding_only_an_empty_marker_is_ours_to_use(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / MARKER).write_text("")  # a run killed between creating its marker and writing it
    assert check_work_root(work, []) == work
    assert check_out_dir(work, [], cwd=Path("/")) == work
    (work / "keep.txt").write_text("precious")  # with anything else beside it, it is the user's
    with pytest.raises(PathRefused, match="did not create"):
        check_work_root(work, [])
    (work / "keep.txt").unlink()
    (work / MARKER).write_text("mine")  # a marker that says something else is not ours either
    with pytest.raises(PathRefused, match="did not create"):
        check_work_root(work, [])


def test_a_work_root_another_run_marks_and_fills_while_it_is_checked_is_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs started together: the other one made the directory, then wrote its marker and its lock between this
    check's look for the marker and its listing. Refused as someone's files (exit 3) in one CI run; it is ours, and
    the lock then says it is busy (tests/e2e/test_faults_concurrency.py)."""
    from warnonce_guard.common import ownership

    work = tmp_path / "work"
    work.mkdir()
    real_iterdir, other_run = Path.iterdir, [1]

    def the_other_run_goes_first(self: Path) -> object:
        if self == work and other_run and other_run.pop():
            mark(work, Kind.WORK_ROOT)
            (work / ".warnonce-guard.lock").write_text("")
        return real_iterdir(self)

    monkeypatch.setattr(Path, "iterdir", the_other_run_goes_first)
    assert ownership.check_work_root(work, []) == work
    (work / "keep.txt").write_text("precious")
    (work / MARKER).unlink()
    with pytest.raises(PathRefused, match="did not create"):  # files of no run's: still the user's
        ownership.check_work_root(work, [])
