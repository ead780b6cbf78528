"""The one fingerprint: a short hash of this tool's code and of what else its caller says can change a verdict.

A mutation run keys its workspace with it (the target's files, the engine's settings, the distributions a
verdict depends on: `mutations.stage`); the history keeps verdicts by it (the whole guard environment:
`history.run`). Either way, a change of any of this tool's code (the site rule's above all) changes it.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

# This tool's code, every package of it: found, not imported (the ground imports no layer above it).
TOOL_PACKAGES = ("common", "rule", "caches", "guards", "audit", "strict", "mutations", "history", "upstream", "cli")


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(f"warnonce_guard.{name}")
    assert spec is not None and spec.submodule_search_locations, name  # an installed package of this tool
    return Path(next(iter(spec.submodule_search_locations))).resolve()


TOOL_DIRS = tuple(_package_dir(name) for name in TOOL_PACKAGES)


def distributions(names: Iterable[str] | None = None) -> list[str]:
    """`name==version` of every installed distribution, sorted (of those in `names` that are installed, when given)."""
    if names is None:
        dists = importlib.metadata.distributions()
        return sorted({f"{d.metadata['Name']}=={d.version}" for d in dists if d.metadata["Name"]}, key=str.lower)
    found = []
    for name in names:
        with suppress(importlib.metadata.PackageNotFoundError):
            found.append(f"{name}=={importlib.metadata.version(name)}")
    return found


def tool_fingerprint(parts: Iterable[str], tool: Iterable[Path] | None = None) -> str:
    """16 hex digits over every Python file of this tool's packages (`tool`: `TOOL_DIRS`), path and contents,
    and over `parts`, in order."""
    digest = hashlib.sha256()
    for folder in TOOL_DIRS if tool is None else tool:
        for path in sorted(folder.rglob("*.py")):
            digest.update(path.relative_to(folder.parent).as_posix().encode() + b"\0" + path.read_bytes())
    for part in parts:
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:16]
