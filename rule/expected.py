"""The sites a target is expected to have: `sites --write FILE` records them, `--expect-sites FILE` compares a run's
discovery with them, so that a site discovery no longer finds fails the run instead of taking its guard with it.

A site is recorded by what survives a release's line shifts (`Site.id`: file, function, kernel module, occurrence,
and the platform class it is driven through); its line and form are kept for the reader, never compared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from warnonce_guard.common.errors import BadSitesRecord, ExpectedSitesMissing, PathRefused, PathUnusable
from warnonce_guard.common.files import destination, regular_file, write_atomic
from warnonce_guard.rule.sites import Site

KIND = "warnonce-guard expected sites"
VERSION = 1
RECORD_HELP = "record them again with `warnonce-guard sites --write FILE` once the change is reviewed"


@dataclass(frozen=True)
class Expected:
    """One recorded site: its identity, and where it was when recorded."""

    id: str  # Site.id, and ` via module:Class` for a site driven through a platform class
    line: int
    form: str


def key(site: Site) -> str:
    """What identifies a site across runs and releases."""
    return f"{site.id} via {site.driver}" if site.driver else site.id


def render(sites: list[Site], source: str) -> str:
    """The record of a target's cached sites (the guarded ones), as `--write` writes it; `source` says what was
    discovered (`vLLM 0.33.0 (g4ba787ec9)`), never where: a record is committed and read on other machines."""
    rows = [{"id": key(s), "line": s.line, "form": s.form} for s in sorted(sites, key=key) if s.cached]
    record = {"kind": KIND, "version": VERSION, "recorded_from": source, "sites": rows}
    # ASCII: a file name's undecodable byte (`\udcff`) is written as its escape, which reads back the same
    return json.dumps(record, indent=2) + "\n"


def _is_record(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and data.get("kind") == KIND


def write_target(path: Path) -> Path:
    """The file `--write` writes (a symlink's target): a new file or an earlier record, refused before any work
    otherwise (a file of the user's is never replaced)."""
    target = destination(path)
    shown = f"{path} (-> {target})" if target != path else str(path)
    if regular_file(target, "--write") and not _is_record(target):
        raise PathRefused(f"--write {shown}: not an earlier sites record; pass a new path or move it away")
    if not target.parent.is_dir():
        raise PathUnusable(f"--write {shown}: {target.parent} is not a directory; pass a path in an existing one")
    return target


def write(target: Path, sites: list[Site], source: str) -> None:
    try:
        write_atomic(target, render(sites, source))
    except OSError as err:
        raise PathUnusable(f"--write {target}: cannot write it ({err.strerror or err})") from None


def read(path: Path) -> list[Expected]:
    """The sites an `--expect-sites` FILE records; `BadSitesRecord` naming what is wrong with it."""
    if not regular_file(destination(path), "--expect-sites"):
        raise PathUnusable(f"--expect-sites {path}: no such file; record one with `warnonce-guard sites --write FILE`")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise PathUnusable(f"--expect-sites {path}: cannot read it ({err})") from None
    except ValueError as err:
        raise BadSitesRecord(f"--expect-sites {path}: not JSON ({err}); pass a file `sites --write` wrote") from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise BadSitesRecord(f"--expect-sites {path}: not a sites record; pass a file `sites --write` wrote")
    if data.get("version") != VERSION:
        raise BadSitesRecord(
            f"--expect-sites {path}: a record of version {data.get('version')!r}, not {VERSION}; write it again"
        )
    rows = data.get("sites")
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise BadSitesRecord(f"--expect-sites {path}: {_ROWS}; write it again with `sites --write`")
    try:
        return [Expected(str(row["id"]), int(row["line"]), str(row["form"])) for row in rows]
    except KeyError as err:
        raise BadSitesRecord(
            f"--expect-sites {path}: a site without {err}; write it again with `sites --write`"
        ) from None
    except (TypeError, ValueError):
        raise BadSitesRecord(f"--expect-sites {path}: {_ROWS}; write it again with `sites --write`") from None


_ROWS = "its `sites` is not a list of sites {id, line, form} (line a number)"


@dataclass(frozen=True)
class Comparison:
    """What a run found against what was recorded."""

    missing: tuple[Expected, ...]  # recorded, not found: a guard gone
    new: tuple[Site, ...]  # found, not recorded: guarded, to be recorded

    def new_line(self, path: Path) -> str | None:
        """One line naming the sites found that the record lacks (they are guarded all the same), or None."""
        if not self.new:
            return None
        shown = ", ".join(f"{key(s)} (line {s.line}, {s.form})" for s in self.new)
        return f"{path}: {len(self.new)} site(s) found that it does not record: {shown}; {RECORD_HELP}"

    def check(self, path: Path) -> None:
        """`ExpectedSitesMissing` (exit 1) naming every recorded site this run did not find."""
        if self.missing:
            shown = ", ".join(f"{e.id} (line {e.line} when recorded)" for e in self.missing)
            raise ExpectedSitesMissing(
                f"{len(self.missing)} expected site(s) of {path} not found, so not guarded: {shown}; if the "
                f"site is gone on purpose, {RECORD_HELP}"
            )


def compare(expected: list[Expected], sites: list[Site]) -> Comparison:
    found = {key(s): s for s in sites if s.cached}
    recorded = {e.id for e in expected}
    missing = tuple(e for e in expected if e.id not in found)
    return Comparison(missing, tuple(s for k, s in sorted(found.items()) if k not in recorded))
