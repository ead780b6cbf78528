"""Where a mutation run keeps its state: a work root the user names, one workspace per fingerprint inside it.

    <work root>/                  --work-dir (default .warnonce-work), marked as ours
        .warnonce-guard           the marker (mutations.ownership)
        .warnonce-guard.lock      held by the one run using this root (filelock); a second run is refused
        <fingerprint>/            one Workspace, marked; old ones are pruned, but only marked ones
            <package>/            pristine copy of a staged package (vllm, a plugin's), no compiled modules
            staged.json           manifest of the pristine copies: a copy is used only if it matches
            mutants/              what the guards import: mutmut's mutated site files and state
                                  (mutations.engine.layout), hard links to the rest
            packages.json         the staged package names, vllm first
            guard_tests/          the guard tests, copied from the guards package
            setup.cfg             mutmut's settings for this run
            sites.json            the sites discovered in the pristine copy
            generation.json       written by the session once mutmut has generated every mutant
            identities.json       site and operator of every mutant (mutations.identify)
            attribution/          one file per finished guard session (guards.records)
            attempts.json         mutants whose worker was killed or timed out, and how often (engine.attempts)
            mutmut.log            mutmut's own output
            result.json           the verdicts of the last complete run (a rerun with nothing changed reuses them)

`Workspace` is the only place that knows this layout; every other module asks it for a path.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout
from warnonce_guard.common import ownership
from warnonce_guard.common.errors import GuardError, PathUnusable, StagingFailed, WorkDirBusy
from warnonce_guard.common.notes import note

LOCK_NAME = ".warnonce-guard.lock"
# What the system refuses a user who may not write there (another user's files): the path's fault (exit 10),
# where a full or read-only disk is the disk's (exit 12)
PERMISSION_ERRORS = frozenset({errno.EACCES, errno.EPERM})


def cannot_write(err: OSError, what: str) -> GuardError:
    """The one line for the work directory refusing a write: `what` (e.g. "cannot create X"), why, and the fix."""
    why = err.strerror or str(err)
    if (file := err.filename2 or err.filename) is not None:
        why = f"{why}: {os.fsdecode(file)}"
    if err.errno in PERMISSION_ERRORS:
        return PathUnusable(f"{what}: {why} (another user's files?); pass a --work-dir of your own")
    return StagingFailed(f"{what}: {why}; pass --work-dir on a writable disk")


@dataclass(frozen=True)
class Workspace:
    """One run's directory inside a work root."""

    dir: Path

    def pristine(self, package: str) -> Path:
        return self.dir / package

    @property
    def staged_manifest(self) -> Path:
        return self.dir / "staged.json"

    @property
    def mutants(self) -> Path:
        return self.dir / "mutants"

    @property
    def packages_file(self) -> Path:
        return self.dir / "packages.json"

    @property
    def guard_tests(self) -> Path:
        return self.dir / "guard_tests"

    @property
    def setup_cfg(self) -> Path:
        return self.dir / "setup.cfg"

    @property
    def sites_file(self) -> Path:
        return self.dir / "sites.json"

    @property
    def generation_file(self) -> Path:
        return self.dir / "generation.json"

    @property
    def identities_file(self) -> Path:
        return self.dir / "identities.json"

    @property
    def attribution(self) -> Path:
        return self.dir / "attribution"

    @property
    def attempts_file(self) -> Path:
        return self.dir / "attempts.json"

    @property
    def result_file(self) -> Path:
        return self.dir / "result.json"

    @property
    def log_file(self) -> Path:
        return self.dir / "mutmut.log"

    def create(self) -> None:
        """Make the directory (marked as ours) if it is not there."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            if not ownership.marked(self.dir, ownership.Kind.WORKSPACE):
                ownership.mark(self.dir, ownership.Kind.WORKSPACE)
        except OSError as err:
            raise cannot_write(err, f"cannot create {self.dir}") from None


@dataclass(frozen=True)
class WorkRoot:
    """The `--work-dir` directory: checked by `ownership.check_work_root` before it is claimed."""

    dir: Path
    kind: ownership.Kind = ownership.Kind.WORK_ROOT

    def workspace(self, fingerprint: str) -> Workspace:
        return Workspace(self.dir / fingerprint)

    @contextlib.contextmanager
    def claimed(self) -> Iterator[WorkRoot]:
        """Create and mark the root, and hold its lock for the block; `WorkDirBusy` if another run holds it."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            if not ownership.marked(self.dir, self.kind):
                ownership.mark(self.dir, self.kind)
        except OSError as err:
            raise cannot_write(err, f"cannot create --work-dir {self.dir}") from None
        lock = FileLock(self.dir / LOCK_NAME, timeout=0)
        try:
            lock.acquire()
        except Timeout:
            raise WorkDirBusy(
                f"--work-dir {self.dir}: another warnonce-guard run is using it; wait for it to finish "
                "or pass another --work-dir"
            ) from None
        except OSError as err:  # a lock file another user's run made
            raise cannot_write(err, f"--work-dir {self.dir}: cannot take its lock {LOCK_NAME}") from None
        try:
            yield self
        finally:
            lock.release()

    def prune(self, current: Workspace, keep: int = 3) -> list[Path]:
        """Remove all but the `keep` most recently used workspaces (never `current`, never an unmarked directory);
        one this user may not remove (another user's) is left, with a note. Returns the removed ones."""
        with contextlib.suppress(OSError):  # its mtime only orders the pruning: another user's stays as it is
            os.utime(current.dir)
        ours = []
        for path in self.dir.iterdir():
            with contextlib.suppress(OSError):
                if path != current.dir and ownership.marked(path, ownership.Kind.WORKSPACE):
                    ours.append((path.stat().st_mtime, path))
        stale = [path for _, path in sorted(ours, reverse=True)[max(0, keep - 1) :]]
        removed = []
        for path in stale:
            if (why := remove_marked(path)) is None:
                removed.append(path)
            else:
                note(f"kept the old workspace {path}: {why}; its owner may remove it")
        return removed


def remove_marked(directory: Path) -> str | None:
    """Delete a directory of ours, its marker last: a removal cut short leaves it marked, so it is finished later.

    Returns why it could not be removed whole (another user's files in it), None once it is gone; what could be
    removed is, and the marker stays while anything else does."""
    failed: list[tuple[Path, OSError]] = []
    try:
        for child in directory.iterdir():
            if child.name == ownership.MARKER:
                continue
            try:
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink(missing_ok=True)
            except OSError as err:
                failed.append((child, err))
        if not failed:
            (directory / ownership.MARKER).unlink(missing_ok=True)
            directory.rmdir()
    except OSError as err:
        failed.append((directory, err))
    if not failed:
        return None
    where, err = failed[0]
    return f"{err.strerror or err}: {where}"
