"""Kept verdicts: reused only for the same release files and the same tool fingerprint."""

from __future__ import annotations

import configparser
import json
from dataclasses import replace
from pathlib import Path

import layout
import pytest
from history_support import LEAKS, META
from warnonce_guard.history import cache as caching
from warnonce_guard.history.cache import VerdictCache, tool_fingerprint
from warnonce_guard.history.index import Dist, Release
from warnonce_guard.history.records import ReleaseVerdict, Verdict
from warnonce_guard.mutations import stage

DIST = Dist("vllm-9.9.9.tar.gz", "sdist", "file:///x", "ab" * 32, 10, "2026-01-02T10:00:00Z", None)
RELEASE = Release("9.9.9", (DIST,))
VERDICT = ReleaseVerdict(META, Verdict.EXPOSED, sites=1, live=1, detectors=LEAKS, duration_s=3.0)


def test_a_kept_verdict_is_read_back_as_it_was(tmp_path: Path) -> None:
    kept = VerdictCache(tmp_path, "fp1")
    assert kept.put(RELEASE, VERDICT)
    assert kept.get(RELEASE) == VERDICT


def test_date_and_yank_status_come_from_the_index_as_it_is_now(tmp_path: Path) -> None:
    kept = VerdictCache(tmp_path, "fp1")
    kept.put(RELEASE, VERDICT)
    yanked = Release("9.9.9", (replace(DIST, yanked="broken"),))
    assert kept.get(yanked).meta.yanked == "broken"  # same files (same hashes), so still a hit


def test_a_passing_failure_is_not_kept(tmp_path: Path) -> None:
    kept = VerdictCache(tmp_path, "fp1")
    failed = ReleaseVerdict(META, Verdict.NOT_CHECKED, reason="fetch failed: timed out", retry=True)
    assert not kept.put(RELEASE, failed)
    assert kept.get(RELEASE) is None


def test_another_fingerprint_or_other_files_on_the_index_miss(tmp_path: Path) -> None:
    VerdictCache(tmp_path, "fp1").put(RELEASE, VERDICT)
    assert VerdictCache(tmp_path, "fp2").get(RELEASE) is None
    wheel_added = Release("9.9.9", (DIST, replace(DIST, filename="vllm-9.9.9-py3-none-any.whl", sha256="cd" * 32)))
    assert VerdictCache(tmp_path, "fp1").get(wheel_added) is None


def test_a_damaged_cache_file_is_a_miss_not_a_crash(tmp_path: Path) -> None:
    kept = VerdictCache(tmp_path, "fp1")
    kept.put(RELEASE, VERDICT)
    kept.path("9.9.9").write_text('{"schema": "warnonce-guard/history-cache/1", "files": [', encoding="utf-8")
    assert kept.get(RELEASE) is None
    files = sorted(f.sha256 for f in RELEASE.files)
    stale = {"schema": caching.SCHEMA, "files": files, "verdict": {"meta": {}}}
    kept.path("9.9.9").write_text(json.dumps(stale), encoding="utf-8")
    assert kept.get(RELEASE) is None
    good = json.loads(json.dumps({"schema": caching.SCHEMA, "files": files, "verdict": VERDICT.to_json()}))
    good["verdict"]["site_outcomes"] = [["not", "an", "object"]]
    for damaged in ("[]", '"text"', "1", "null", json.dumps(good)):
        kept.path("9.9.9").write_text(damaged, encoding="utf-8")
        assert kept.get(RELEASE) is None, damaged


@pytest.fixture
def tool(tmp_path: Path) -> tuple[Path, ...]:
    folders = (tmp_path / "guards", tmp_path / "mutations")
    for folder in folders:
        folder.mkdir()
        (folder / "code.py").write_text("x = 1\n", encoding="utf-8")
    return folders


def test_the_fingerprint_covers_every_package_the_project_installs() -> None:
    config = configparser.ConfigParser()
    config.read(layout.ROOT / "setup.cfg")
    installed = {line.split("=")[0].strip() for line in config["options"]["package_dir"].split("\n") if line.strip()}
    assert {f"warnonce_guard.{name}" for name in stage.TOOL_PACKAGES} == installed


def test_the_fingerprint_covers_the_installed_tool_code() -> None:
    assert [folder.name for folder in caching.TOOL_DIRS] == list(stage.TOOL_PACKAGES)
    assert all((folder / "__init__.py").is_file() for folder in caching.TOOL_DIRS)


def test_the_fingerprint_changes_with_the_tool_code(tool: tuple[Path, ...]) -> None:
    before = tool_fingerprint(tool)
    assert tool_fingerprint(tool) == before
    (tool[0] / "code.py").write_text("x = 2\n", encoding="utf-8")
    assert tool_fingerprint(tool) != before


def test_the_fingerprint_changes_with_the_guard_environment(
    tool: tuple[Path, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = tool_fingerprint(tool)
    monkeypatch.setattr(caching, "environment", lambda: ["python==3.11.7", "cloudpickle==3.1.2"])
    assert tool_fingerprint(tool) != before
