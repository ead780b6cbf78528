"""The target's walk done ahead (mutations.engine.prewalk): the fingerprint it gives is the one the command makes."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from warnonce_guard.common.files import Kind, mark
from warnonce_guard.mutations import stage
from warnonce_guard.mutations.engine import launch, prewalk
from warnonce_guard.rule.target import source_tree

from tests.faults import processes_mentioning
from tests.records_support import FakeSession
from tests.toy import add_odd_files, make_tree


@pytest.fixture(autouse=True)
def no_walk_left() -> Iterator[None]:
    yield
    prewalk.abandon()


@pytest.fixture
def work_root(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    mark(root, Kind.WORK_ROOT)
    return root


def walked_ahead(work_root: Path, folder: Path) -> str | None:
    """What the fingerprint takes for `folder` from a walk forked for `work_root` as the last run there left it."""
    prewalk.remember(work_root, [folder])
    assert prewalk.start(work_root) and prewalk.walk is not None
    return prewalk.walked(folder)


def test_the_walk_ahead_is_the_commands_own_walk_taken_once(tmp_path: Path, work_root: Path) -> None:
    folder = make_tree(tmp_path / "tree") / "vllm"
    here = prewalk.tree_digest(os.fspath(folder), stage._counted)
    assert walked_ahead(work_root, folder) == here
    assert prewalk.walked(folder) is None  # once: a second fingerprint (has the target changed?) walks again
    assert stage.listing_digest(folder) == here


def test_the_fingerprint_is_the_same_with_the_walk_ahead_or_without_it(tmp_path: Path, work_root: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    packages = {"vllm": tree / "vllm"}
    without = stage.fingerprint(source_tree(tree), packages)
    prewalk.remember(work_root, [tree / "vllm"])
    prewalk.start(work_root)
    assert prewalk.walk is not None
    assert stage.fingerprint(source_tree(tree), packages) == without
    assert prewalk.walk is None and prewalk.walked(tree / "vllm") is None  # read, reaped, and the rest forgotten


def test_a_change_after_the_walk_ahead_is_a_change_of_the_next_fingerprint(tmp_path: Path, work_root: Path) -> None:
    """The run's last fingerprint (has the target changed under it?) walks again: it does not take the walk ahead."""
    tree = make_tree(tmp_path / "tree")
    packages = {"vllm": tree / "vllm"}
    prewalk.remember(work_root, [tree / "vllm"])
    assert prewalk.start(work_root)
    first = stage.fingerprint(source_tree(tree), packages)
    (tree / "vllm" / "platforms" / "interface.py").write_text("# changed\n")
    assert stage.fingerprint(source_tree(tree), packages) != first


def test_a_folder_holding_anything_but_folders_and_files_is_left_to_the_command(
    tmp_path: Path, work_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A symlink, a FIFO: the command walks it, and says what it skipped (the forked walk could not)."""
    tree = make_tree(tmp_path / "tree")
    odd = add_odd_files(tree)
    assert walked_ahead(work_root, tree / "vllm") is None
    stage.listing_digest(tree / "vllm")
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


def test_the_fingerprint_waits_for_the_folders_it_needs_and_forgets_the_others(
    tmp_path: Path, work_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hint may name a folder this run does not fingerprint (a plugin of the last run's, a huge or hung one), after
    the ones it does (the fingerprint's order): its walk is not waited for, and what it said is forgotten once the
    fingerprint took what it needed."""
    folder, old = (make_tree(tmp_path / name) / "vllm" for name in ("tree", "old"))
    real = prewalk.tree_digest
    monkeypatch.setattr(
        prewalk, "tree_digest", lambda root, keep: slow_walk(root, keep) if root == str(old) else real(root, keep)
    )
    prewalk.remember(work_root, [folder, old])
    prewalk.start(work_root)
    started = time.monotonic()
    assert stage.fingerprint(source_tree(folder.parent), {"vllm": folder})
    assert time.monotonic() - started < 30 and prewalk.walk is None  # not the old folder's 60 s: ended and reaped


def test_what_the_walk_said_of_a_folder_the_fingerprint_did_not_take_is_forgotten(
    tmp_path: Path, work_root: Path
) -> None:
    folder, other = (make_tree(tmp_path / name) / "vllm" for name in ("tree", "other"))
    prewalk.remember(work_root, [other, folder])
    prewalk.start(work_root)
    before = prewalk.tree_digest(str(other), stage._counted)
    assert prewalk.walked(folder) is not None  # `other` was said first, and kept
    prewalk.abandon()  # as the fingerprint does once it has its folders
    (other / "platforms" / "interface.py").write_text("# changed\n")
    assert stage.listing_digest(other) != before


@pytest.mark.parametrize("hint", ["not json", '{"a": 1}', "[1]", "[" * 100_000, None])
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


def slow_walk_started(monkeypatch: pytest.MonkeyPatch, work_root: Path, folder: Path) -> int:
    """The pid of a walk ahead of `folder` that takes a minute."""
    monkeypatch.setattr(prewalk, "tree_digest", slow_walk)
    prewalk.remember(work_root, [folder])
    prewalk.start(work_root)
    assert prewalk.walk is not None
    return prewalk.walk[0]


@pytest.fixture
def handlers_that_exit_7() -> Iterator[None]:
    """Handlers like the command's (`cli.__main__`: one line, and exit): a signal that runs one exits with 7."""
    previous = {sig: signal.signal(sig, lambda signum, frame: os._exit(7)) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in previous.items():
        signal.signal(sig, handler)


@pytest.mark.usefixtures("handlers_that_exit_7")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_signal_ends_the_walk_as_it_ends_any_process_and_the_command_walks(
    tmp_path: Path, work_root: Path, monkeypatch: pytest.MonkeyPatch, sig: signal.Signals
) -> None:
    """Forked from a process with handlers of its own, it has the system's: a signal to the group ends it, saying
    nothing, and the command walks the folder itself."""
    folder = make_tree(tmp_path / "tree") / "vllm"
    pid = slow_walk_started(monkeypatch, work_root, folder)
    time.sleep(0.2)
    os.kill(pid, sig)
    ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # how it ended, left for the command to reap
    assert ended is not None and ended.si_code == os.CLD_KILLED and ended.si_status == sig
    assert prewalk.walked(folder) is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped


def test_the_walk_holds_no_file_of_its_parents(
    tmp_path: Path, work_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command's output (a caller reads it to its end), its session's pipes: closed in the walk, so nobody waits
    for it."""
    folder = make_tree(tmp_path / "tree") / "vllm"
    monkeypatch.setattr(prewalk, "tree_digest", slow_walk)
    caller_reads, output = os.pipe()
    try:
        prewalk.remember(work_root, [folder])
        prewalk.start(work_root)
        os.close(output)
        output = -1
        ready, _, _ = select.select([caller_reads], [], [], 10)
        assert ready and os.read(caller_reads, 1) == b""  # end of file: no process holds it
    finally:
        os.close(caller_reads)
        if output >= 0:
            os.close(output)


ORPHANED = """
import os, sys, time
from pathlib import Path
from warnonce_guard.mutations.engine import launch, prewalk
prewalk.tree_digest = lambda root, keep: time.sleep(60)
prewalk.start(Path(sys.argv[1]))
print(prewalk.walk[0], flush=True)
time.sleep(0.5)  # the walk is past its start (a parent gone by then: it ends at once), and in its folder
os._exit(0)  # {marker}
"""


def test_the_walk_ends_with_the_command(tmp_path: Path, work_root: Path) -> None:
    """A command that ends at once (a second signal: `Stops.exit_now`) takes its walk with it."""
    folder = make_tree(tmp_path / "tree") / "vllm"
    prewalk.remember(work_root, [folder])
    marker = f"orphaned-walk-{os.getpid()}-{time.monotonic_ns()}"
    code = ORPHANED.format(marker=marker)
    done = subprocess.run([sys.executable, "-c", code, str(work_root)], capture_output=True, text=True, timeout=60)
    walker = int(done.stdout)
    deadline = time.monotonic() + 10
    while processes_mentioning(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_mentioning(marker) == [], walker


def test_the_command_walks_ahead_instead_of_starting_its_session_where_the_last_runs_verdicts_stood(
    work_root: Path, fake_session: FakeSession
) -> None:
    folder = work_root.parent
    prewalk.remember(work_root, [folder])
    launch.start_early(["--work-dir", str(work_root)])
    assert prewalk.walk is not None and prewalk.walk[2] == [os.fspath(folder)]
    assert launch.early is None and fake_session.started == []
    pid = prewalk.walk[0]
    launch.stop_early()  # the command refused its arguments
    assert prewalk.walk is None and launch.rerun_likely is None
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_a_walk_for_another_work_root_than_the_parser_reads_is_ended_and_the_session_started(
    work_root: Path, fake_session: FakeSession
) -> None:
    prewalk.remember(work_root, [work_root.parent])
    launch.start_early(["--work-dir", str(work_root)])
    assert prewalk.walk is not None
    with launch.session_started(work_root.parent / "elsewhere") as session:
        assert session is not None and prewalk.walk is None
    assert fake_session.started == [work_root.parent / "elsewhere"] and launch.rerun_likely is None


def test_the_command_starts_its_session_where_no_run_left_its_verdicts_standing(
    work_root: Path, fake_session: FakeSession
) -> None:
    prewalk.remember(work_root, [work_root.parent])
    prewalk.forget(work_root)  # a run that tested afresh, and ended before its verdicts stood
    launch.start_early(["--work-dir", str(work_root)])
    assert prewalk.walk is None and fake_session.started == [work_root]
    launch.stop_early()
    prewalk.forget(work_root)  # nothing to forget: no error


def test_a_walk_nothing_read_is_ended_and_reaped(
    tmp_path: Path, work_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = make_tree(tmp_path / "tree") / "vllm"
    pid = slow_walk_started(monkeypatch, work_root, folder)
    started = time.monotonic()
    prewalk.abandon()
    assert prewalk.walk is None and time.monotonic() - started < 30  # killed, not waited for (60 s)
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
