"""What a guard session leaves for the mutation run: one `GuardSession` file per finished pytest session.

Written atomically, and only when every guard ran; one that does not validate is treated as absent. Layout under
the workspace's `attribution/`: docs/ARCHITECTURE.md, Work directories.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from warnonce_guard.common import protocol
from warnonce_guard.common.files import write_atomic

FINISHED_STATUSES = frozenset({0, 1})  # pytest: every test ran; all passed (0) or some failed (1)
# The exit status of a finished session whose record could not be written (a full disk, a read-only or
# damaged attribution folder): not a verdict, and not one of pytest's or mutmut's codes (sysexits' CANTCREAT).
UNWRITTEN_STATUS = 73


class Phase(StrEnum):
    """What a guard session ran against."""

    BASELINE = "baseline"  # the unmutated code
    MUTANT = "mutant"  # one mutant


def session_phase(told: protocol.Settings) -> Phase | None:
    """What a session runs, as the engine's session told it (`protocol.MUTANT_VARIABLE` names the variable holding
    it): the unmutated code (a value of `BASELINE_PHASES`), a mutant (a name holding `MUTANT_MARK`), or neither
    (the engine's own checks, whose sessions are not recorded)."""
    if told.mutant in told.baseline_phases:
        return Phase.BASELINE
    return Phase.MUTANT if told.mutant_mark and told.mutant_mark in told.mutant else None


class RecordKind(StrEnum):
    """How one guard ended."""

    PASSED = "passed"  # no detector fired
    LEAK = "leak"  # detectors fired (they are listed)
    UNREACHED = "unreached"  # the guard could not bring execution to its site
    ERROR = "error"  # the guard itself raised something else (its message says what)
    FAILED = "failed"  # a test of a suite (`mutate --tests`) failed: its first line says how
    TIMEOUT = "timeout"  # it ran past `mutate --timeout` (pytest-timeout stopped it): no verdict on the mutant
    # The guard passed on a target whose *_once cache renders first, and the same drive with vLLM's stock cache
    # leaked (those detectors are listed): the site passes a live object, and the cache keeps it harmless.
    NEUTRALIZED = "neutralized"


# How pytest-timeout fails a test it stopped (its signal method, as `mutate --timeout` loads it): `Failed: Timeout >5s`.
TIMEOUT_PREFIX = "Timeout >"


def ran_out_of_time(error: BaseException | None) -> bool:
    """Whether a test's failure is pytest-timeout's stop (`mutate --timeout`)."""
    return type(error).__name__ == "Failed" and str(error).startswith(TIMEOUT_PREFIX)


AGAIN = "again"  # the phase of the records of a failed guard's drives after it (`guards.outcome.drive_again`)


@dataclass(frozen=True)
class GuardRecord:
    """One guard's outcome in one session phase (setup, call or teardown)."""

    test: str  # the guard's pytest node id
    site: str | None  # the id of the site it guards
    phase: str
    kind: RecordKind
    detectors: tuple[str, ...] = ()  # what fired, for LEAK
    message: str = ""  # the first line of the failure

    @property
    def failed(self) -> bool:
        return self.kind not in (RecordKind.PASSED, RecordKind.NEUTRALIZED)

    @classmethod
    def from_json(cls, data: Any) -> GuardRecord:
        if not isinstance(data, dict):
            raise ValueError("a record is not an object")
        detectors = data["detectors"]
        if not isinstance(detectors, list) or not all(isinstance(d, str) for d in detectors):
            raise ValueError("detectors is not a list of strings")
        site = data["site"]
        fields = (data["test"], data["phase"], data["message"])
        if not all(isinstance(f, str) for f in fields) or not (site is None or isinstance(site, str)):
            raise ValueError("a record field has the wrong type")
        return cls(data["test"], site, data["phase"], RecordKind(data["kind"]), tuple(detectors), data["message"])


@dataclass(frozen=True)
class GuardSession:
    """Every guard outcome of one finished pytest session, and its exit status."""

    run: str  # the mutation run's id (`protocol.RUN_ID`)
    phase: Phase
    mutant: str  # the engine's name for what ran: a mutant's name, or its value for the unmutated code
    exit_status: int
    records: tuple[GuardRecord, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # its enums are strings, and its tuples JSON's lists

    @classmethod
    def from_json(cls, data: Any) -> GuardSession:
        if not isinstance(data, dict):
            raise ValueError("not an object")
        run, mutant, status, records = data["run"], data["mutant"], data["exit_status"], data["records"]
        if not isinstance(run, str) or not isinstance(mutant, str) or type(status) is not int:
            raise ValueError("run, mutant or exit_status has the wrong type")
        if status not in FINISHED_STATUSES or not isinstance(records, list):
            raise ValueError("not a finished session")
        return cls(run, Phase(data["phase"]), mutant, status, tuple(GuardRecord.from_json(r) for r in records))


def session_path(folder: Path, session: GuardSession) -> Path:
    """Where a session's file goes: one per mutant (the newest replaces the last), several per baseline run."""
    if session.phase is Phase.BASELINE:
        return folder / "baseline" / f"{session.run or 'norun'}-{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
    return mutant_session_path(folder, session.mutant)


def write_session(folder: Path, session: GuardSession, path: Path | None = None) -> Path:
    """Write the session's file atomically (at `path`, else where `session_path` says): whole or not at all."""
    path = path or session_path(folder, session)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(session.to_json()))
    return path


def record_finished(told: protocol.Settings, exit_status: int, records: Sequence[GuardRecord]) -> bool:
    """Write a finished session's records where the engine told it to (nothing for a session cut short, one not
    told to record, or one of the engine's own checks; a re-run of a kill's tests to its own file, `record_to`);
    False when the disk or folder refused the record."""
    phase = session_phase(told)
    if not told.attribution or int(exit_status) not in FINISHED_STATUSES or phase is None:
        return True
    finished = GuardSession(told.run_id, phase, told.mutant, int(exit_status), tuple(records))
    try:
        write_session(Path(told.attribution), finished, Path(told.record_to) if told.record_to else None)
    except OSError:
        return False
    return True


def read_session(path: Path) -> GuardSession | None:
    """The session in one file, or None when it is unreadable or does not validate."""
    try:
        return GuardSession.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def unwritable(folder: Path) -> str | None:
    """Why sessions cannot write their records under `folder` (a probe written and removed in each of its
    folders), or None when they can: a full disk, a read-only or immutable folder, a file in a folder's place."""
    for sub in (folder, folder / "mutants", folder / "baseline"):
        if sub.exists() and not sub.is_dir():
            return f"{sub} is not a directory"
        try:
            sub.mkdir(exist_ok=True)
            probe = sub / ".write-probe"
            write_atomic(probe, "{}")
            probe.unlink()
        except OSError as err:
            return f"{sub}: {err.strerror or err}"
    return None


def mutant_session_path(folder: Path, mutant: str) -> Path:
    return folder / "mutants" / f"{mutant}.json"


def baseline_sessions(folder: Path, run: str) -> Iterator[GuardSession]:
    """The valid baseline sessions of one run."""
    for path in sorted((folder / "baseline").glob(f"{run}-*.json")):
        session = read_session(path)
        if session is not None and session.run == run:
            yield session
