"""What a worker's exit code says about the mutant (`outcome`), and the ledger of attempts that did not finish.

A worker killed from outside or past its time limit is tested again; `REPEATS` such attempts in a row make the
verdict (docs/reference.md, A worker that dies). The ledger is the workspace's `attempts.json`.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path

from warnonce_guard.common.errors import BadRecord
from warnonce_guard.common.files import write_atomic
from warnonce_guard.mutations.engine import state
from warnonce_guard.mutations.engine.status import EngineStatus, engine_status

REPEATS = 2  # abnormal attempts in a row before one counts as the mutant's verdict
VERSION = 1


class Outcome(StrEnum):
    """What one worker's exit code says."""

    OWN = "own"  # what the mutant did: a verdict (killed, survived, crashed on its own, no tests, ...)
    STOPPED = "stopped"  # stopped by a stop signal: not an attempt
    KILLED = "killed"  # killed by a signal it did not raise itself: an abnormal attempt
    TIMEOUT = "timeout"  # past mutmut's time limit: an abnormal attempt
    # pytest's "interrupted" (2) from its own tests (KeyboardInterrupt, pytest.exit, a collection error), never from a
    # stop, which stops the session before it reads the worker's status: an abnormal attempt (one may be a fluke)
    INTERRUPTED = "interrupted"


STOP_SIGNALS = frozenset({signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM})
# Signals a process raises on itself by what it runs: a crash of the mutant's own doing.
SELF_RAISED = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT, signal.SIGSYS})
STOPPED_CODES = frozenset({-int(s) for s in STOP_SIGNALS} | {128 + int(s) for s in STOP_SIGNALS})


def outcome(code: int | None) -> Outcome | None:
    """What a worker's exit code says (None: no code yet)."""
    if code is None:
        return None
    status = engine_status(code)
    if code in STOPPED_CODES:
        return Outcome.STOPPED
    if status is EngineStatus.INTERRUPTED:
        return Outcome.INTERRUPTED
    if status is EngineStatus.TIMEOUT:
        return Outcome.TIMEOUT
    signum = -code if code < 0 else code - 128 if 128 < code < 128 + 65 else None  # a shell says 128 + N
    if signum is not None and signum not in {int(s) for s in SELF_RAISED}:
        return Outcome.KILLED
    return Outcome.OWN


def abnormal(code: int | None) -> bool:
    """An attempt that counts towards `REPEATS` (killed from outside, past the time limit, interrupted by its tests)."""
    return outcome(code) in (Outcome.KILLED, Outcome.TIMEOUT, Outcome.INTERRUPTED)


def describe(code: int) -> str:
    """The exit code in words: `SIGKILL`, `SIGXCPU`, `exit code 36`."""
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def read(path: Path) -> dict[str, tuple[int, ...]]:
    """The ledger at `path` (empty when there is none); `BadRecord` unless it is, per mutant name, a non-empty list
    of abnormal exit codes."""
    if not path.exists():
        return {}
    data = state.load_json(path)
    if not isinstance(data, dict) or set(data) != {"version", "mutants"} or data["version"] != VERSION:
        raise BadRecord("not an attempts ledger")
    mutants = data["mutants"]
    if not isinstance(mutants, dict):
        raise BadRecord("not an attempts ledger")
    out = {}
    for name, codes in mutants.items():
        if not isinstance(codes, list) or not codes or not all(type(c) is int and abnormal(c) for c in codes):
            raise BadRecord(f"bad attempts for {name}")
        out[name] = tuple(codes)
    return out


def write(path: Path, ledger: Mapping[str, tuple[int, ...]]) -> None:
    document = {"version": VERSION, "mutants": {name: list(codes) for name, codes in sorted(ledger.items()) if codes}}
    write_atomic(path, json.dumps(document, indent=1))
