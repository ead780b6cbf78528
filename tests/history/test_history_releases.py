"""The history command on three real releases from the package index: before the fix, and the fix itself.

Slow: downloads three sdists (about 40 MB each) and runs the guards on each in a fresh interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import layout

pytestmark = [pytest.mark.slow, pytest.mark.long, pytest.mark.network]

ROOT = layout.ROOT
RELEASES = "0.27.0,0.29.0,0.30.0"
LEAKS = ["exception retained", "owner pinned", "warning repeated"]


def history(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "warnonce_guard.cli.main", "history", "--only", RELEASES]
    command += ["--work-dir", str(tmp_path / "work"), "--out", str(tmp_path / "out")]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)


def test_releases_before_the_fix_are_exposed_and_the_fix_is_guarded_and_a_rerun_checks_nothing(tmp_path: Path) -> None:
    first = history(tmp_path)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    rows = json.loads((tmp_path / "out" / "history.json").read_text(encoding="utf-8"))["releases"]
    assert [(r["meta"]["version"], r["verdict"]) for r in rows] == [
        ("0.30.0", "guarded"),
        ("0.29.0", "exposed"),
        ("0.27.0", "exposed"),
    ]
    guarded, *exposed = rows
    assert (guarded["sites"], guarded["eager"], guarded["detectors"]) == (6, 6, [])
    for row in exposed:
        assert (row["sites"], row["live"], row["detectors"]) == (6, 6, LEAKS)
        assert row["meta"]["source"] == f"vllm-{row['meta']['version']}.tar.gz"
    table = (tmp_path / "out" / "history.md").read_text(encoding="utf-8")
    row = "| 0.29.0 | 2026-09-09 | 6 | 6 live | 20 | exposed | exception retained, owner pinned, warning repeated |"
    assert row in table  # the live once-calls column: the audit's WOG001 over the release's tree

    again = history(tmp_path)
    assert again.returncode == 0 and "0 checked, 3 from the cache" in again.stdout, again.stdout + again.stderr
