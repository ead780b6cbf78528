"""Own only what you create: one marker scheme, temporary names, swaps, sweeps and removals (`common.files`)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from warnonce_guard.common import files
from warnonce_guard.common.errors import ExitCode, PathUnusable, StagingFailed
from warnonce_guard.common.files import (
    MARKER,
    Kind,
    is_temporary,
    mark,
    marked,
    marker,
    remove_ours,
    scratch,
    swap,
    sweep,
    temporary,
)


def test_the_marker_is_a_file_named_for_the_tool_with_a_kinds_own_fields(tmp_path: Path) -> None:
    mark(tmp_path, Kind.REPORT)
    assert (tmp_path / MARKER).read_text().startswith('{"tool": "warnonce-guard"')
    assert marked(tmp_path, Kind.REPORT) and marked(tmp_path) and not marked(tmp_path, Kind.WORKSPACE)
    mark(tmp_path, Kind.RELEASE_TREE, sha256="ab" * 32, tree="cd" * 32)
    assert marker(tmp_path, Kind.RELEASE_TREE)["sha256"] == "ab" * 32 and not marked(tmp_path, Kind.REPORT)
    assert [p.name for p in tmp_path.iterdir()] == [MARKER]  # written whole: no temporary left beside it


def test_a_marker_that_is_not_a_file_is_never_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / MARKER)  # opening it would wait for a writer for ever
    assert marker(tmp_path) == {} and not marked(tmp_path)


def test_a_removal_cut_short_keeps_the_marker_so_it_is_finished_later(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "deep" / "er").mkdir(parents=True)
    mark(ws, Kind.WORKSPACE)
    remove_ours(ws)
    assert not ws.exists()
    ws.mkdir()
    (ws / MARKER).write_text("not json")  # a marker that does not parse is not ours: nothing removed
    assert not marked(ws, Kind.WORKSPACE)


def test_a_symlink_is_removed_and_never_followed(tmp_path: Path) -> None:
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "keep.txt").write_text("precious")
    (tmp_path / "link").symlink_to(tmp_path / "theirs")
    assert remove_ours(tmp_path / "link") is None
    assert not (tmp_path / "link").is_symlink() and (tmp_path / "theirs" / "keep.txt").read_text() == "precious"


def test_temporary_names_are_unique_hidden_and_known_for_the_entry_they_are_of(tmp_path: Path) -> None:
    first, second = temporary(tmp_path / "report"), temporary(tmp_path / "report", "old")
    assert first != temporary(tmp_path / "report") and first.parent == tmp_path
    assert first.name.startswith(f".report.tmp-{os.getpid()}-") and second.name.startswith(".report.old-")
    assert is_temporary(first.name) and is_temporary(first.name, "report") and not is_temporary(first.name, "rep")
    assert not is_temporary(".report.tmp-1-user") and not is_temporary("report") and not is_temporary(".report.lock")


def test_a_sweep_removes_only_temporaries_that_are_provably_ours(tmp_path: Path) -> None:
    half_written = temporary(tmp_path / "history.md")
    half_written.write_text("half")
    marked_dir, empty_dir, foreign = (temporary(tmp_path / "tree") for _ in range(3))
    for folder in (marked_dir, empty_dir, foreign):
        folder.mkdir()
    mark(marked_dir, Kind.RELEASE_TREE)
    (marked_dir / "vllm").mkdir()
    (foreign / "keep.txt").write_text("precious")  # our name, no marker: not ours
    other = temporary(tmp_path / "other")
    other.write_text("half")
    (tmp_path / "notes.txt").write_text("mine")

    assert sweep(tmp_path, "tree") == sorted([marked_dir, empty_dir])
    assert sweep(tmp_path) == sorted([half_written, other])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([foreign.name, "notes.txt"])
    assert sweep(tmp_path / "missing") == []


def test_a_failed_second_rename_of_a_swap_puts_the_old_directory_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target, new = tmp_path / "report", tmp_path / "new"
    for folder, text in ((target, "old"), (new, "new")):
        folder.mkdir()
        (folder / "index.html").write_text(text)
    real_replace = os.replace

    def second_fails(source: object, destination: object) -> None:
        if Path(str(source)) == new:
            raise OSError(28, "No space left on device")
        real_replace(source, destination)

    monkeypatch.setattr(os, "replace", second_fails)
    with pytest.raises(OSError, match="No space left"):
        swap(new, target)
    assert (target / "index.html").read_text() == "old" and (new / "index.html").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "report"]  # nothing left aside

    monkeypatch.undo()
    swap(new, target)
    assert (target / "index.html").read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_a_scratch_directory_is_marked_and_gone_after_its_block_even_on_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), scratch(tmp_path / "attribution") as folder:
        assert marked(folder, Kind.SCRATCH) and is_temporary(folder.name, "attribution")
        (folder / "baseline").mkdir()
        (folder / "baseline" / "record.json").write_text("{}")
        raise RuntimeError
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EROFS])
def test_a_write_the_disk_refuses_is_the_disks_exit_12_naming_the_file_and_the_fix(tmp_path: Path, code: int) -> None:
    refused = files.cannot_write(OSError(code, os.strerror(code), str(tmp_path / "x.json")), "cannot write", "fix")
    assert isinstance(refused, StagingFailed) and refused.exit_code == ExitCode.ENVIRONMENT
    assert str(refused) == f"cannot write: {os.strerror(code)}: {tmp_path / 'x.json'}; fix"


@pytest.mark.parametrize("code", [errno.EACCES, errno.EPERM])
def test_a_write_refused_for_permission_is_the_paths_exit_10(tmp_path: Path, code: int) -> None:
    refused = files.cannot_write(OSError(code, os.strerror(code), str(tmp_path / "x.json")), "cannot write")
    assert isinstance(refused, PathUnusable) and refused.exit_code == ExitCode.BAD_INPUT
    assert str(refused) == (
        f"cannot write: {os.strerror(code)}: {tmp_path / 'x.json'} (another user's files?); "
        "pass a --work-dir of your own"
    )
