"""The locks of a work directory and of --out: one concept (`common.locks`); their runs' tests are in
tests/mutations/test_workspace.py, test_report_write.py and tests/history/test_history_run.py."""

from __future__ import annotations

import os
import signal
import stat
import threading
import time
from pathlib import Path

import pytest
from warnonce_guard.common import locks
from warnonce_guard.common.errors import GuardError, PathUnusable, WorkDirBusy
from warnonce_guard.common.files import Kind, marked


def test_a_lock_is_taken_again_by_its_holders_thread_and_refused_to_any_other(tmp_path: Path) -> None:
    refused: list[str] = []

    def other() -> None:
        try:
            with locks.work_dir(tmp_path / "work"):
                pass
        except WorkDirBusy as err:
            refused.append(str(err))

    with locks.work_dir(tmp_path / "work"), locks.work_dir(tmp_path / "work"):  # nested: the holder's own claim
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert refused == [
        f"--work-dir {tmp_path / 'work'}: another warnonce-guard run is using it; wait for it to finish or pass "
        "another --work-dir"
    ]
    with locks.work_dir(tmp_path / "work"):  # released once the outer block ended
        assert marked(tmp_path / "work", Kind.WORK_ROOT)


def refused(err: OSError) -> GuardError:
    return PathUnusable(f"refused: {err.strerror}")


def test_a_lock_file_is_made_as_the_umask_says_for_a_groups_shared_folder(tmp_path: Path) -> None:
    """filelock made it 0o666 less the umask; 0o644 refused the group's other members their runs."""
    before = os.umask(0o002)
    try:
        with locks.exclusive(tmp_path / "x.lock", "busy", refused):
            pass
    finally:
        os.umask(before)
    assert stat.S_IMODE((tmp_path / "x.lock").stat().st_mode) == 0o664


def test_a_child_that_inherited_the_lock_does_not_keep_it_past_the_block(tmp_path: Path) -> None:
    with locks.exclusive(tmp_path / "x.lock", "busy", refused):
        child = os.fork()
        if child == 0:  # holds the descriptor, as a process forked meanwhile would
            time.sleep(30)
            os._exit(0)
    try:
        with locks.exclusive(tmp_path / "x.lock", "busy", refused):
            pass  # taken at once: released, not only closed in this process
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)


def test_a_symlink_planted_where_the_lock_goes_is_refused_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "users-file"
    target.write_text("theirs")
    (tmp_path / "x.lock").symlink_to(target)
    refusal = pytest.raises(PathUnusable, match="refused: Too many levels of symbolic links")
    with refusal, locks.exclusive(tmp_path / "x.lock", "busy", refused):
        pass
    assert target.read_text() == "theirs"
