"""The baseline: accepted findings in a JSON file (their keys), and findings compared with it (a ratchet).

Keys hold paths relative to the project root (version 2), so any working directory and any subset of files give
the same verdict; entries of files the run did not check are neither matched nor stale. A version-1 baseline (paths
relative to the directory it was written in) is still read: its paths are taken from the current directory, with a
note saying how to rewrite it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from warnonce_guard.audit.findings import Finding
from warnonce_guard.common.errors import BadBaseline, PathRefused
from warnonce_guard.common.files import rewrite, write_atomic
from warnonce_guard.common.notes import note
from warnonce_guard.rule.liveness import EXCEPTION

BASELINE_VERSION = 2


@dataclass(frozen=True)
class Comparison:
    """Findings against a baseline: which are new, which accepted, and which baseline keys match nothing."""

    new: tuple[Finding, ...]
    accepted: tuple[Finding, ...]
    stale: tuple[str, ...] = field(default=())

    @property
    def new_exceptions(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.new if f.kind == EXCEPTION)


def key_file(key: str) -> str:
    return key.split("::", 1)[0]


def load_baseline(path: str | Path, rebase: Callable[[str], str] | None = None) -> frozenset[str]:
    """The keys of the accepted findings in a baseline file written by `write_baseline`; a version-1 file's paths
    are passed through `rebase` (a path as written then -> as keyed now), if given."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadBaseline(f"--baseline {path}: no such file; create one with --write-baseline") from None
    except (OSError, UnicodeDecodeError) as err:
        raise BadBaseline(f"--baseline {path}: cannot read it ({err})") from None
    except json.JSONDecodeError as err:
        where = f"line {err.lineno}, column {err.colno}"
        reason = f"{err.msg.removesuffix(' at')} at {where}"
        raise BadBaseline(f"--baseline {path}:{err.lineno}:{err.colno}: not valid JSON ({reason})") from None
    entries = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("key"), str) for e in entries):
        raise BadBaseline(f'--baseline {path}: not a baseline (want {{"findings": [{{"key": ...}}, ...]}})')
    keys = frozenset(e["key"] for e in entries)
    if data.get("version", 1) == 1 and rebase is not None:
        note(
            f"--baseline {path} is a version-1 baseline (paths relative to where it was written): read from the "
            f"current directory; rewrite it with --write-baseline {path} to make it work from anywhere"
        )
        keys = frozenset(f"{rebase(key_file(k))}::{k.split('::', 1)[1]}" if "::" in k else k for k in keys)
    return keys


# The fields of a baseline `write_baseline` writes (a version-1 file has no `version`).
_FIELDS = frozenset({"version", "target", "findings"})


def is_baseline(data: bytes) -> bool:
    """Whether a file's bytes are a baseline this tool wrote (any version), or nothing (empty, or blank)."""
    if not data.strip():
        return True
    try:
        document = json.loads(data)
    except ValueError:
        return False
    return isinstance(document, dict) and set(document) <= _FIELDS and isinstance(document.get("findings"), list)


def _overwritten(path: Path) -> bytes | None:
    """What `--write-baseline` replaces: the bytes of a baseline (or an empty file) there, None for no file; a
    `PathRefused` for anything else (a source file, a folder, a FIFO), which stays as it is."""
    if not os.path.lexists(path) or (path.is_symlink() and not path.exists()):
        return None
    if not path.is_file():
        raise PathRefused(f"--write-baseline {path}: not a file; name a new file, an empty one or a baseline")
    try:
        data = path.read_bytes()
    except OSError as err:
        raise BadBaseline(f"--write-baseline {path}: cannot read it ({err.strerror or err})") from None
    if not is_baseline(data):
        raise PathRefused(
            f"--write-baseline {path}: holds something else than a baseline, left as it is; name a new file, an "
            "empty one or a baseline this tool wrote"
        )
    return data


def check_writable(path: str | Path) -> None:
    """Refuse a `--write-baseline` file that is not new, empty or a baseline, before any work is done."""
    _overwritten(Path(path))


def write_baseline(path: str | Path, findings: Iterable[Finding], target: str) -> None:
    """Accept every finding: write them all (keys sorted, so the file diffs well), to a new file or over a baseline
    (an empty file), in place through its symbolic links (`common.files.rewrite`)."""
    path = Path(path)
    entries = [f.to_json() for f in sorted(findings, key=lambda f: f.key)]
    text = json.dumps({"version": BASELINE_VERSION, "target": target, "findings": entries}, indent=2) + "\n"
    try:
        before = _overwritten(path)
        if before is None:
            write_atomic(Path(os.path.realpath(path)), text)
        else:
            rewrite(path, text.encode("utf-8"), before)
    except OSError as err:
        raise BadBaseline(f"--write-baseline {path}: cannot write it ({err.strerror or err})") from None


def compare(
    findings: Iterable[Finding], accepted_keys: frozenset[str], checked: Callable[[str], bool] = lambda file: True
) -> Comparison:
    """Split findings into new and accepted; list the baseline keys of files `checked` that match no finding (stale)."""
    findings = tuple(findings)
    current = {f.key for f in findings}
    return Comparison(
        new=tuple(f for f in findings if f.key not in accepted_keys),
        accepted=tuple(f for f in findings if f.key in accepted_keys),
        stale=tuple(sorted(k for k in accepted_keys - current if checked(key_file(k)))),
    )
