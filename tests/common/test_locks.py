"""The locks of a work directory and of --out: one concept (`common.locks`); their runs' tests are in
tests/mutations/test_workspace.py, test_report_write.py and tests/history/test_history_run.py."""

from __future__ import annotations

import threading
from pathlib import Path

from warnonce_guard.common import locks
from warnonce_guard.common.errors import WorkDirBusy
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
