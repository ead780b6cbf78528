"""The work root: one run at a time (a lock), and pruning that removes only workspaces it made."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from warnonce_guard.common.errors import PathUnusable, StagingFailed, WorkDirBusy
from warnonce_guard.common.files import MARKER, Kind, mark, marked
from warnonce_guard.common.notes import LOGGER
from warnonce_guard.mutations.workspace import WorkRoot

from tests.faults import as_nobody, give_to_nobody, shared_folder


def test_a_second_claim_of_the_same_root_is_refused_while_the_first_holds_it(tmp_path: Path) -> None:
    root = WorkRoot(tmp_path / "work")
    with root.claimed():
        holder = (
            "import sys; from pathlib import Path; from warnonce_guard.mutations.workspace import WorkRoot\n"
            "with WorkRoot(Path(sys.argv[1])).claimed(): pass\n"
        )
        other = subprocess.run([sys.executable, "-c", holder, str(root.dir)], capture_output=True, text=True)
        assert "WorkDirBusy" in other.stderr and "another warnonce-guard run is using it" in other.stderr
    with root.claimed():  # released: claimable again
        assert marked(root.dir, Kind.WORK_ROOT)


def test_the_lock_of_a_killed_holder_is_released(tmp_path: Path) -> None:
    root = WorkRoot(tmp_path / "work")
    holder = (
        "import sys, time; from pathlib import Path; from warnonce_guard.mutations.workspace import WorkRoot\n"
        "with WorkRoot(Path(sys.argv[1])).claimed():\n    print('held', flush=True); time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", holder, str(root.dir)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    with pytest.raises(WorkDirBusy), root.claimed():
        pass
    proc.kill()
    proc.wait()
    with root.claimed():
        pass


def test_pruning_keeps_the_current_and_newest_and_never_touches_unmarked_directories(tmp_path: Path) -> None:
    root = WorkRoot(tmp_path / "work")
    root.dir.mkdir()
    ours = []
    for i in range(5):
        path = root.dir / f"old{i}"
        path.mkdir()
        mark(path, Kind.WORKSPACE)
        (path / "state").write_text("x")
        os.utime(path, (1000 + i, 1000 + i))
        ours.append(path)
    users = [root.dir / f"p{i}" for i in range(3)]
    for path in users:
        path.mkdir()
        (path / "keep.txt").write_text("precious")
        os.utime(path, (1, 1))
    current = root.workspace("current")
    current.create()

    removed = root.prune(current, keep=3)

    assert sorted(removed) == sorted(ours[:3])
    assert sorted(p.name for p in root.dir.iterdir()) == ["current", "old3", "old4", "p0", "p1", "p2"]
    assert all((p / "keep.txt").read_text() == "precious" for p in users)


def test_a_work_directory_that_cannot_be_made_is_a_staging_failure_naming_it(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("a file where a directory must go")
    root = WorkRoot(tmp_path / "file" / "work")
    with pytest.raises(StagingFailed, match=f"cannot create --work-dir {root.dir}: "), root.claimed():
        pass
    ws = root.workspace("0123456789abcdef")
    with pytest.raises(StagingFailed, match=f"cannot create {ws.dir}: .*; pass --work-dir on a writable disk"):
        ws.create()


# --- another user's files (run as the unprivileged user nobody, in a forked child) --------------------------


def test_a_lock_another_users_run_made_is_one_line_for_this_user_exit_10() -> None:
    """A work directory of the user's that root ran in first: filelock's PermissionError was exit 70."""
    with shared_folder() as shared:
        root = WorkRoot(shared / "work")
        root.dir.mkdir()
        give_to_nobody(root.dir)  # the user's own directory
        with root.claimed():  # root's run: its marker and lock file are root's
            pass

        def claim() -> tuple[str, str]:
            try:
                with root.claimed():
                    return "claimed", ""
            except PathUnusable as err:
                return type(err).__name__, str(err)

        kind, said = as_nobody(claim)
    assert kind == "PathUnusable" and said.startswith(f"--work-dir {root.dir}: cannot take its lock "), said
    assert "Permission denied" in said and "\n" not in said


def test_pruning_leaves_another_users_workspaces_with_a_note_and_never_fails() -> None:
    """Root-owned workspaces in a user's work directory: pruning raised PermissionError (exit 70) on every run."""
    with shared_folder() as shared:
        root = WorkRoot(shared / "work")
        root.dir.mkdir()
        give_to_nobody(root.dir)
        olds = []
        for i in range(4):  # the oldest two are pruned: one root's, one the user's
            ws = root.dir / f"old{i}"
            (ws / "vllm").mkdir(parents=True)
            (ws / "vllm" / "x.py").write_text("x")
            mark(ws, Kind.WORKSPACE)
            if i == 1:
                give_to_nobody(ws, ws / "vllm", ws / "vllm" / "x.py", ws / MARKER)
            os.utime(ws, (1000 + i, 1000 + i))
            olds.append(ws)
        current = root.workspace("current")
        current.create()
        give_to_nobody(current.dir, current.dir / MARKER)

        def prune() -> tuple[list[Path], list[str]]:
            noted: list[str] = []
            handler = logging.Handler()
            handler.emit = lambda record: noted.append(record.getMessage())  # type: ignore[method-assign]
            LOGGER.addHandler(handler)
            return root.prune(current), noted

        removed, noted = as_nobody(prune)
        assert removed == [olds[1]] and not olds[1].exists()
        assert olds[0].exists() and marked(olds[0], Kind.WORKSPACE)  # root's: kept whole, still marked
        assert len(noted) == 1 and noted[0] == (
            f"kept the old workspace {olds[0]}: Permission denied: {olds[0] / 'vllm'}; its owner may remove it"
        )
