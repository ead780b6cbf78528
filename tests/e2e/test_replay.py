"""Historical replay: against vLLM 0.29.0, the last release before the fix, every site is exposed.

Marked `replay`: `nox -s replay` installs vLLM 0.29.0 and runs `-m replay --vllm-release 0.29.0`; every other
tier deselects these tests (they need that release installed).
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
from pathlib import Path

import pytest
from warnonce_guard.common.errors import ExitCode
from warnonce_guard.guards.detectors import EXCEPTION_RETAINED, OWNER_PINNED, WARNING_REPEATED

from tests import layout
from tests.toy import CLI

LEAK_DETECTORS = (EXCEPTION_RETAINED, OWNER_PINNED, WARNING_REPEATED)

pytestmark = [pytest.mark.slow, pytest.mark.replay]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, check=False, cwd=cwd)


def test_the_replayed_release_is_the_one_installed(vllm_release: str) -> None:
    assert importlib.metadata.version("vllm") == vllm_release


def test_discovery_finds_the_six_sites_all_live(tmp_path: Path) -> None:
    listed = cli("sites", "--json", cwd=tmp_path)
    cached = [s for s in json.loads(listed.stdout)["sites"] if s["cached"]]
    assert len(cached) == 6
    assert {s["form"] for s in cached} == {"live"}


def test_every_guard_fails_naming_its_site_and_the_detectors(tmp_path: Path) -> None:
    run = cli("guards", "-q", "-p", "no:cacheprovider", "--tb=line", cwd=tmp_path)
    assert run.returncode == ExitCode.CHECK_FAILED
    assert re.search(r"\b6 failed\b", run.stdout)
    # a site's id names its branch, which may hold spaces: `...::vllm._C [not (Platform...)]`
    failures = re.findall(r"LeakDetected: (.+?) \(line \d+, warning_once, live\): 3 detector\(s\) fired", run.stdout)
    assert len(set(failures)) == 6, run.stdout[-4000:]
    for detector in LEAK_DETECTORS:
        assert detector in run.stdout


def test_the_mutation_run_reports_six_exposed_sites_and_fails(tmp_path: Path) -> None:
    out = tmp_path / "report"
    run = cli("mutate", "--out", str(out), "--work-dir", str(tmp_path / "work"), cwd=layout.ROOT)
    assert run.returncode == ExitCode.CHECK_FAILED, run.stdout[-3000:] + run.stderr[-3000:]
    assert run.stdout.count(" is exposed: ") == 6
    summary = (out / "summary.md").read_text()
    assert summary.count("exposed") >= 6
    report = json.loads((out / "mutation.json").read_text())
    statuses = [m["status"] for f in report["files"].values() for m in f["mutants"]]
    assert "Killed" not in statuses  # an exposed site is never counted as a killed mutant
