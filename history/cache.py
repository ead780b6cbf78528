"""Verdicts kept per release and tool fingerprint, so an unchanged rerun fetches and re-checks nothing.

`<work dir>/results/<fingerprint>/<version>.json` holds a finished verdict and the sha256 of every file the
index listed for the release when it was checked. The fingerprint (`common.fingerprint`) covers everything that
can change a verdict: this tool's code, the Python version and every distribution installed in the guard
environment (so adding a module to the environment re-checks a release it kept from a verdict).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from warnonce_guard.common.files import write_atomic
from warnonce_guard.history.index import Release
from warnonce_guard.history.records import ReleaseVerdict

# 2: a site's outcome is the guards' RecordKind, null when the guard run left no record (1 said "missing")
SCHEMA = "warnonce-guard/history-cache/2"


def _hashes(release: Release) -> list[str]:
    return sorted(f.sha256 for f in release.files)


class VerdictCache:
    def __init__(self, work_dir: Path, fingerprint: str):
        self.dir = work_dir / "results" / fingerprint
        self.fingerprint = fingerprint

    def path(self, version: str) -> Path:
        return self.dir / f"{version}.json"

    def get(self, release: Release) -> ReleaseVerdict | None:
        """The kept verdict, when the release's files on the index are still the ones it was checked from.

        Date and yank status come from the index as it is now.
        """
        try:
            data = json.loads(self.path(release.version).read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("schema") != SCHEMA or data.get("files") != _hashes(release):
                return None
            kept = ReleaseVerdict.from_json(data["verdict"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        return replace(kept, meta=replace(kept.meta, date=release.date, yanked=release.yanked))

    def put(self, release: Release, verdict: ReleaseVerdict) -> bool:
        """Keep a finished verdict (written whole: temp file + rename); a passing failure is not kept."""
        if verdict.retry:
            return False
        data = {
            "schema": SCHEMA,
            "fingerprint": self.fingerprint,
            "files": _hashes(release),
            "verdict": verdict.to_json(),
        }
        self.dir.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path(release.version), json.dumps(data, indent=1))
        return True
