"""Kept verdicts: reused only for the same release files and the same tool fingerprint."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from warnonce_guard.history.cache import SCHEMA, VerdictCache
from warnonce_guard.history.index import Dist, Release
from warnonce_guard.history.records import ReleaseVerdict, SiteOutcome, Verdict

from tests.history_support import INTERFACE_SITE, LEAKS, META

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
    stale = {"schema": SCHEMA, "files": files, "verdict": {"meta": {}}}
    kept.path("9.9.9").write_text(json.dumps(stale), encoding="utf-8")
    assert kept.get(RELEASE) is None
    good = json.loads(json.dumps({"schema": SCHEMA, "files": files, "verdict": VERDICT.to_json()}))
    good["verdict"]["site_outcomes"] = [["not", "an", "object"]]
    for damaged in ("[]", '"text"', "1", "null", json.dumps(good)):
        kept.path("9.9.9").write_text(damaged, encoding="utf-8")
        assert kept.get(RELEASE) is None, damaged


def test_a_verdict_kept_in_the_old_shape_is_checked_again_not_misread(tmp_path: Path) -> None:
    kept = VerdictCache(tmp_path, "fp1")
    missing = replace(VERDICT, verdict=Verdict.NOT_CHECKED, site_outcomes=(SiteOutcome(INTERFACE_SITE, None),))
    kept.put(RELEASE, missing)
    assert kept.get(RELEASE) == missing  # no record from the guard run: read back as such
    data = json.loads(kept.path("9.9.9").read_text(encoding="utf-8"))
    data["schema"] = "warnonce-guard/history-cache/1"  # its outcomes said "missing" where they now say null
    data["verdict"]["site_outcomes"][0]["outcome"] = "missing"
    kept.path("9.9.9").write_text(json.dumps(data), encoding="utf-8")
    assert kept.get(RELEASE) is None
