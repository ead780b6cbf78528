"""The sites a target is expected to have: `sites --write FILE` records them, `--expect-sites FILE` compares a run's
discovery with them, so that a site discovery no longer finds fails the run instead of taking its guard with it.

A site is recorded by what survives a release's line shifts (`Site.id`: file, function, kernel module, branch, and
the platform class it is driven through). A recorded site not found fails the run; a new one, a moved line, a changed
form or call are notes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from warnonce_guard.common import locks
from warnonce_guard.common.errors import (
    BadSitesRecord,
    ExpectedSitesMissing,
    GuardError,
    PathRefused,
    PathUnusable,
    StagingFailed,
)
from warnonce_guard.common.files import PERMISSION_ERRORS, destination, regular_file, write_atomic
from warnonce_guard.rule.site_row import Site

KIND = "warnonce-guard expected sites"
VERSION = 2  # 1 named sites by occurrence (`#0`), not by branch
_FIELDS = frozenset({"id", "line", "form", "call", "anchor"})
_TOP = frozenset({"kind", "version", "recorded_from", "sites"})
RECORD_HELP = "record them again with `warnonce-guard sites --write FILE` once the change is reviewed"


@dataclass(frozen=True)
class Expected:
    """One recorded site: its identity, and where it was when recorded."""

    id: str  # Site.id, and ` via module:Class` for a site driven through a platform class
    line: int
    form: str
    call: str  # the recognised call (`warning_once`), or "not recognised"
    anchor: str = ""  # digest of the site's `try` (`Site.anchor`): tells apart rows of one identity (`#2`); "" unknown


def call_of(site: Site) -> str:
    return site.log_method or "not recognised"


def key(site: Site) -> str:
    """What identifies a site across runs and releases."""
    return f"{site.id} via {site.driver}" if site.driver else site.id


def render(sites: list[Site], source: str) -> str:
    """The record of a target's guarded sites, as `--write` writes it; `source` says what was discovered
    (`vLLM 0.33.0 (g4ba787ec9)`), never where: a record is committed and read on other machines."""
    guarded = sorted((s for s in sites if s.guarded), key=key)
    rows = [{"id": key(s), "line": s.line, "form": s.form, "call": call_of(s), "anchor": s.anchor} for s in guarded]
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


@contextlib.contextmanager
def writing(target: Path) -> Iterator[None]:
    """Hold the lock of the record `target` for the block: a second `--write` of it meanwhile is refused at once
    (`WorkDirBusy`, exit 4). The lock file is in the temporary folder, never beside the user's record."""
    digest = hashlib.sha256(os.fsencode(os.path.realpath(target))).hexdigest()[:16]
    lock = Path(tempfile.gettempdir()) / f"warnonce-guard-sites-{digest}.lock"
    busy = f"--write {target}: another warnonce-guard run is writing it; wait for it to finish, then run again"

    def refused(err: OSError) -> GuardError:  # another user's lock of the same record, or the temporary folder's
        why = f"--write {target}: cannot take its lock {lock} ({err.strerror or err})"
        if err.errno in PERMISSION_ERRORS:
            return PathUnusable(f"{why}; pass a path of your own")
        return StagingFailed(f"{why}; set TMPDIR to a writable folder")

    with locks.exclusive(lock, busy, refused):
        yield


def write(target: Path, sites: list[Site], source: str) -> None:
    """Write the record whole; a disk that refuses (full, read-only) is the environment's (exit 4), a permission the
    path's (3)."""
    try:
        write_atomic(target, render(sites, source))
    except OSError as err:
        why = f"--write {target}: cannot write it ({err.strerror or err})"
        if err.errno in PERMISSION_ERRORS:
            raise PathUnusable(f"{why}; pass a path you may write") from None
        raise StagingFailed(f"{why}; free space on its disk or pass a path on another one") from None


def read(path: Path) -> list[Expected]:
    """The sites an `--expect-sites` FILE records; `BadSitesRecord` naming what is wrong with it."""
    if not regular_file(destination(path), "--expect-sites", "read"):
        raise PathUnusable(f"--expect-sites {path}: no such file; record one with `warnonce-guard sites --write FILE`")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise PathUnusable(f"--expect-sites {path}: cannot read it ({err})") from None
    except ValueError as err:
        raise BadSitesRecord(f"--expect-sites {path}: not JSON ({err}); pass a file `sites --write` wrote") from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise BadSitesRecord(f"--expect-sites {path}: not a sites record; pass a file `sites --write` wrote")
    if unknown := sorted(set(data) - _TOP):
        raise BadSitesRecord(
            f"--expect-sites {path}: unknown entry {unknown[0]!r}; write it again with `sites --write`"
        )
    if data.get("version") != VERSION:
        raise BadSitesRecord(
            f"--expect-sites {path}: a record of version {data.get('version')!r}, not {VERSION}; write it again"
        )
    rows = data.get("sites")
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise BadSitesRecord(f"--expect-sites {path}: {_ROWS}; write it again with `sites --write`")
    try:
        found = [
            Expected(str(row["id"]), int(row["line"]), str(row["form"]), str(row["call"]), str(row.get("anchor", "")))
            for row in rows
        ]
    except KeyError as err:
        raise BadSitesRecord(
            f"--expect-sites {path}: a site without {err}; write it again with `sites --write`"
        ) from None
    except (TypeError, ValueError):
        raise BadSitesRecord(f"--expect-sites {path}: {_ROWS}; write it again with `sites --write`") from None
    if extra := sorted({name for row in rows for name in row} - _FIELDS):
        raise BadSitesRecord(f"--expect-sites {path}: a site with an unknown entry {extra[0]!r}; {_AGAIN}")
    ids = [e.id for e in found]
    if twice := next((i for i in ids if ids.count(i) > 1), None):
        raise BadSitesRecord(f"--expect-sites {path}: the site {twice} is recorded twice; {_AGAIN}")
    return found


_ROWS = "its `sites` is not a list of sites {id, line, form, call} (line a number)"
_AGAIN = "write it again with `sites --write`"


@dataclass(frozen=True)
class Comparison:
    """What a run found against what was recorded."""

    missing: tuple[Expected, ...]  # recorded, not found: a guard gone
    new: tuple[Site, ...]  # found, not recorded: guarded, to be recorded
    changed: tuple[tuple[Expected, Site], ...] = ()  # found on another line, or with another form or call

    def new_line(self, path: Path) -> str | None:
        """One line naming the sites found that the record lacks (they are guarded all the same), or None."""
        if not self.new:
            return None
        shown = ", ".join(f"{key(s)} (line {s.line}, {s.form}, {call_of(s)})" for s in self.new)
        return f"{path}: {len(self.new)} site(s) found that it does not record: {shown}; {RECORD_HELP}"

    def notes(self, path: Path) -> list[str]:
        """One line for the new sites, one per site that moved or changed its form or call (all guarded)."""
        out = [line] if (line := self.new_line(path)) is not None else []
        for was, now in self.changed:
            what = [f"line {was.line} -> {now.line}"] if was.line != now.line else []
            what += [f"form {was.form} -> {now.form}"] if was.form != now.form else []
            what += [f"call {was.call} -> {call_of(now)}"] if was.call != call_of(now) else []
            what += [f"now {key(now)}"] if was.id != key(now) else []
            out.append(f"{path}: {was.id}: {', '.join(what)}")
        return out

    def check(self, path: Path) -> None:
        """`ExpectedSitesMissing` (exit 1) naming every recorded site this run did not find."""
        if self.missing:
            shown = ", ".join(f"{e.id} (line {e.line} when recorded)" for e in self.missing)
            raise ExpectedSitesMissing(
                f"{len(self.missing)} expected site(s) of {path} not found, so not guarded: {shown}; if the "
                f"site is gone on purpose, {RECORD_HELP}"
            )


def compare(expected: list[Expected], sites: list[Site]) -> Comparison:
    found = {key(s): s for s in sites if s.guarded}
    paired = _paired(expected, found)
    missing = tuple(e for e in expected if e.id not in paired)
    changed = tuple(
        (e, s)
        for e in expected
        if (s := paired.get(e.id)) is not None
        and (e.id, e.line, e.form, e.call) != (key(s), s.line, s.form, call_of(s))
    )
    taken = {key(s) for s in paired.values()}
    return Comparison(missing, tuple(s for k, s in sorted(found.items()) if k not in taken), changed)


_POSITION = re.compile(r"#\d+(?= via |$)")


def _paired(expected: list[Expected], found: dict[str, Site]) -> dict[str, Site]:
    """Each recorded site's found site: rows of one identity told apart only by position (`#2`) pair by the digest
    of their `try` first (the one left after another went keeps its digest, not its number), the rest by identity."""
    paired: dict[str, Site] = {}
    for e in expected:
        group = _POSITION.sub("", e.id)
        same = [s for k, s in found.items() if _POSITION.sub("", k) == group and s not in paired.values()]
        if e.anchor and (by_digest := [s for s in same if s.anchor == e.anchor]):
            paired[e.id] = by_digest[0]
    for e in expected:
        if e.id not in paired and (s := found.get(e.id)) is not None and s not in paired.values():
            paired[e.id] = s
    return paired
