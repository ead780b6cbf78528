"""The target's walk done ahead (mutations.engine.prewalk): the fingerprint it gives is the one the command makes."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from warnonce_guard.common.files import Kind, mark
from warnonce_guard.mutations import stage
from warnonce_guard.mutations.engine import prewalk
from warnonce_guard.rule.target import source_tree

from tests.toy import add_odd_files, make_tree


@pytest.fixture(autouse=True)
def no_walk_left() -> Iterator[None]:
    yield
    prewalk.abandon()
    prewalk._walked.clear()


@pytest.fixture
def work_root(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    mark(root, Kind.WORK_ROOT)
    return root


def walked_ahead(work_root: Path, folder: Path) -> str | None:
    """What the fingerprint takes for `folder` from a walk forked for `work_root` as the last run there left it."""
    prewalk.remember(work_root, [folder])
    prewalk.start(work_root)
    assert prewalk.walk is not None
    return prewalk.walked(folder)


def test_the_walk_ahead_is_the_commands_own_walk_taken_once(tmp_path: Path, work_root: Path) -> None:
    folder = make_tree(tmp_path / "tree") / "vllm"
    here = prewalk.tree_digest(os.fspath(folder), stage._counted)
    assert walked_ahead(work_root, folder) == here
    assert prewalk.walked(folder) is None  # once: a second fingerprint (has the target changed?) walks again
    assert stage.tree_digest(folder) == here


def test_the_fingerprint_is_the_same_with_the_walk_ahead_or_without_it(tmp_path: Path, work_root: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    packages = {"vllm": tree / "vllm"}
    without = stage.fingerprint(source_tree(tree), packages)
    prewalk.remember(work_root, [tree / "vllm"])
    prewalk.start(work_root)
    assert prewalk.walk is not None
    assert stage.fingerprint(source_tree(tree), packages) == without
    assert prewalk.walk is None and prewalk._walked == {}  # read, reaped and taken


def test_a_change_after_the_walk_ahead_is_a_change_of_the_next_fingerprint(tmp_path: Path, work_root: Path) -> None:
    folder = make_tree(tmp_path / "tree") / "vllm"
    before = walked_ahead(work_root, folder)
    (folder / "platforms" / "interface.py").write_text("# changed\n")
    assert stage.tree_digest(folder) != before


def test_a_folder_holding_anything_but_folders_and_files_is_left_to_the_command(
    tmp_path: Path, work_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A symlink, a FIFO: the command walks it, and says what it skipped (the forked walk could not)."""
    tree = make_tree(tmp_path / "tree")
    odd = add_odd_files(tree)
    assert walked_ahead(work_root, tree / "vllm") is None
    stage.tree_digest(tree / "vllm")
    skipped = {path for path, what in odd.items() if what != "a directory"}  # a folder: walked
    assert sorted(r.getMessage() for r in caplog.records) == sorted(
        f"skipped {path}: {odd[path]}, not a file to read" for path in skipped
    )


def test_only_the_folders_it_walked_are_taken(tmp_path: Path, work_root: Path) -> None:
    folder, other = (make_tree(tmp_path / name) / "vllm" for name in ("tree", "other"))
    assert walked_ahead(work_root, folder) is not None
    prewalk.remember(work_root, [folder])
    prewalk.start(work_root)
    assert prewalk.walked(other) is None


@pytest.mark.parametrize("hint", ["not json", '{"a": 1}', "[1]", None])
def test_no_walk_without_a_hint_of_its_own(tmp_path: Path, work_root: Path, hint: str | None) -> None:
    if hint is not None:
        (work_root / prewalk.HINT).write_text(hint)
    else:
        os.mkfifo(work_root / prewalk.HINT)  # never opened: it would block
    prewalk.start(work_root)
    assert prewalk.walk is None


def test_no_walk_for_a_folder_not_a_work_root_of_ours(tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "tree") / "vllm"
    users = tmp_path / "users"
    users.mkdir()
    (users / prewalk.HINT).write_text(json.dumps([os.fspath(folder)]))
    prewalk.start(users)
    assert prewalk.walk is None


def test_the_hint_is_written_when_it_changes(tmp_path: Path, work_root: Path) -> None:
    folder = make_tree(tmp_path / "tree") / "vllm"
    prewalk.remember(work_root, [folder])
    hint = work_root / prewalk.HINT
    assert json.loads(hint.read_text()) == [os.fspath(folder)]
    os.utime(hint, ns=(0, 0))
    prewalk.remember(work_root, [folder])
    assert hint.stat().st_mtime_ns == 0  # the same folders: left as it is
    prewalk.remember(work_root, [folder, tmp_path])
    assert json.loads(hint.read_text()) == [os.fspath(folder), os.fspath(tmp_path)]


def test_a_work_root_that_takes_no_hint_is_no_error(tmp_path: Path, work_root: Path) -> None:
    (work_root / prewalk.HINT).mkdir()  # where the hint goes: its rename fails
    prewalk.remember(work_root, [tmp_path])
    assert (work_root / prewalk.HINT).is_dir()


def slow_walk(root: str, keep: object) -> str:
    time.sleep(60)
    return ""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_signal_ends_the_walk_as_it_ends_any_process_and_the_command_walks(
    tmp_path: Path, work_root: Path, monkeypatch: pytest.MonkeyPatch, sig: signal.Signals
) -> None:
    """Forked from a process with its own handlers (pytest's KeyboardInterrupt, the command's one line), it has the
    system's: a signal to the group ends it, saying nothing."""
    folder = make_tree(tmp_path / "tree") / "vllm"
    monkeypatch.setattr(prewalk, "tree_digest", slow_walk)
    prewalk.remember(work_root, [folder])
    prewalk.start(work_root)
    assert prewalk.walk is not None
    pid = prewalk.walk[0]
    time.sleep(0.2)
    os.kill(pid, sig)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == sig
    assert prewalk.walked(folder) is None


def test_a_walk_nothing_read_is_ended_and_reaped(
    tmp_path: Path, work_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = make_tree(tmp_path / "tree") / "vllm"
    monkeypatch.setattr(prewalk, "tree_digest", slow_walk)
    prewalk.remember(work_root, [folder])
    prewalk.start(work_root)
    assert prewalk.walk is not None
    pid = prewalk.walk[0]
    prewalk.abandon()
    assert prewalk.walk is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
