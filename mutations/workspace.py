"""Where a mutation run keeps its state: a work root the user names, one workspace per fingerprint inside it.

`Workspace` is the only place that knows the layout (docs/ARCHITECTURE.md, Work directories); every other module
asks it for a path.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from warnonce_guard.common.files import Kind, cannot_write, mark, marked, remove_ours
from warnonce_guard.common.notes import note


class _Inside:
    """A path in the workspace's directory, by name: `Workspace.sites_file` is `<workspace>/sites.json`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, ws: Workspace, owner: type | None = None) -> Path:
        return ws.dir / self.name


@dataclass(frozen=True)
class Workspace:
    """One run's directory inside a work root."""

    dir: Path

    staged_manifest = _Inside("staged.json")
    mutants = _Inside("mutants")
    packages_file = _Inside("packages.json")
    guard_tests = _Inside("guard_tests")
    suite_file = _Inside("suite.json")
    suite_baseline = _Inside("suite-baseline.json")
    setup_cfg = _Inside("setup.cfg")
    sites_file = _Inside("sites.json")
    guarded_sites_file = _Inside("sites-guarded.json")  # the sites whose guards test the mutants, when some leak
    generation_file = _Inside("generation.json")
    identities_file = _Inside("identities.json")
    attribution = _Inside("attribution")
    attempts_file = _Inside("attempts.json")
    confirmations_file = _Inside("confirmations.json")
    result_file = _Inside("result.json")
    log_file = _Inside("mutmut.log")

    def pristine(self, package: str) -> Path:
        return self.dir / package

    def made(self, file: str) -> Path:
        return self.dir / "made" / f"{file}.json"

    def create(self) -> None:
        """Make the directory (marked as ours) if it is not there."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            if not marked(self.dir, Kind.WORKSPACE):
                mark(self.dir, Kind.WORKSPACE)
        except OSError as err:
            raise cannot_write(err, f"cannot create {self.dir}") from None


@dataclass(frozen=True)
class WorkRoot:
    """The `--work-dir` directory: checked by `ownership.check_work_root` before it is claimed."""

    dir: Path

    def workspace(self, fingerprint: str) -> Workspace:
        return Workspace(self.dir / fingerprint)

    @contextlib.contextmanager
    def claimed(self) -> Iterator[WorkRoot]:
        """Create and mark the root, and hold its lock for the block (`locks.work_dir`)."""
        from warnonce_guard.common import locks  # the command's, never the session's (its critical path)

        with locks.work_dir(self.dir):
            yield self

    def prune(self, current: Workspace, keep: int = 3) -> list[Path]:
        """Remove all but the `keep` most recently used workspaces (never `current`, never an unmarked directory);
        one this user may not remove (another user's) is left, with a note. Returns the removed ones."""
        with contextlib.suppress(OSError):  # its mtime only orders the pruning: another user's stays as it is
            os.utime(current.dir)
        ours = []
        for path in self.dir.iterdir():
            with contextlib.suppress(OSError):
                if path != current.dir and marked(path, Kind.WORKSPACE):
                    ours.append((path.stat().st_mtime, path))
        stale = [path for _, path in sorted(ours, reverse=True)[max(0, keep - 1) :]]
        removed = []
        for path in stale:
            if (why := remove_ours(path)) is None:
                removed.append(path)
            else:
                note(f"kept the old workspace {path}: {why}; its owner may remove it")
        return removed
