"""The HTML report's viewer and the Stryker report schema, shipped as package data (no npm at run time).

`vendor/` holds `mutation-test-elements.js` from mutation-testing-elements and the report JSON schema
from mutation-testing-report-schema, the versions `requirements/npm/package.json` pins, with their
licence (Apache-2.0) and `VENDOR.json`: each file's sha256. `python -m
tools.npm --vendor` refreshes them from those pins; a test compares them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from warnonce_guard.common.errors import ViewerMissing

VENDOR = Path(__file__).resolve().parent / "vendor"
MANIFEST = VENDOR / "VENDOR.json"
VIEWER_JS = VENDOR / "mutation-test-elements.js"
SCHEMA_JSON = VENDOR / "mutation-testing-report-schema.json"


def manifest() -> dict[str, dict[str, str]]:
    """File name -> {"package", "version", "sha256"} for every vendored file."""
    return json.loads(MANIFEST.read_text(encoding="utf-8"))


def find_viewer() -> Path:
    """The viewer bundle the HTML report inlines (checked against its recorded digest)."""
    path, entry = VIEWER_JS, manifest().get(VIEWER_JS.name) if MANIFEST.is_file() else None
    if not path.is_file() or entry is None or hashlib.sha256(path.read_bytes()).hexdigest() != entry["sha256"]:
        raise ViewerMissing(
            f"{path} is missing or not the file this release shipped; reinstall warnonce-guard "
            "(or run `python -m tools.npm --vendor` in a checkout)"
        )
    return path
