"""Guard sessions: written whole or not at all, read back only when they validate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from warnonce_guard.common import protocol
from warnonce_guard.guards.detectors import OWNER_PINNED
from warnonce_guard.guards.sessions import (
    GuardRecord,
    GuardSession,
    Phase,
    RecordKind,
    baseline_sessions,
    mutant_session_path,
    read_session,
    session_phase,
    write_session,
)

MUTANT = "vllm.platforms.interface.xǁPlatformǁimport_kernels__mutmut_1"
LEAK = GuardRecord("guard_tests/t.py::test[a]", "site-a", "call", RecordKind.LEAK, (OWNER_PINNED,), "a: 1 fired")


def test_a_mutant_session_round_trips_through_its_file(tmp_path: Path) -> None:
    session = GuardSession("run1", Phase.MUTANT, MUTANT, 1, (LEAK,))
    path = write_session(tmp_path, session)

    assert path == mutant_session_path(tmp_path, MUTANT)
    assert read_session(path) == session
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


def test_baseline_sessions_are_kept_apart_per_run(tmp_path: Path) -> None:
    for run in ("run1", "run1", "run2"):
        write_session(tmp_path, GuardSession(run, Phase.BASELINE, "", 0, ()))
    write_session(tmp_path, GuardSession("run1", Phase.BASELINE, "stats", 1, (LEAK,)))

    assert sorted(s.mutant for s in baseline_sessions(tmp_path, "run1")) == ["", "", "stats"]
    assert len(list(baseline_sessions(tmp_path, "run2"))) == 1


def test_the_engines_protocol_tells_baseline_runs_mutants_and_its_own_checks_apart() -> None:
    told = {
        protocol.MUTANT_VARIABLE: "MUTANT_UNDER_TEST",
        protocol.BASELINE_PHASES: ",stats",
        protocol.MUTANT_MARK: "__mutmut_",
    }
    running = ("", "stats", MUTANT, "fail", "list_all_tests")
    assert [session_phase(protocol.settings(told | {"MUTANT_UNDER_TEST": v})) for v in running] == [
        Phase.BASELINE,
        Phase.BASELINE,
        Phase.MUTANT,
        None,
        None,
    ]


@pytest.mark.parametrize(
    "text",
    [
        "",
        '{"run": "r", "phase": "mutant", "mutant": "m", "exit_status": 1, "records": [',
        '{"run": "r", "phase": "mutant", "mutant": "m", "exit_status": 2, "records": []}',  # an interrupted session
        '{"run": "r", "phase": "mutant", "mutant": "m", "exit_status": true, "records": []}',
        '{"run": "r", "phase": "mutant", "mutant": "m", "exit_status": 1, "records": [{"test": "t"}]}',
        '{"run": "r", "phase": "mutant", "mutant": "m", "exit_status": 1, "records": [{"test": "t", "site": null, '
        '"phase": "call", "kind": "exploded", "detectors": [], "message": ""}]}',
        "[]",
    ],
    ids=["empty", "truncated", "interrupted", "bool-status", "partial-record", "unknown-kind", "not-an-object"],
)
def test_a_session_file_that_does_not_validate_reads_as_absent(tmp_path: Path, text: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(text)
    assert read_session(path) is None


def test_a_valid_record_with_every_kind_is_accepted(tmp_path: Path) -> None:
    records = tuple(GuardRecord("t", None, "call", kind) for kind in RecordKind)
    path = write_session(tmp_path, GuardSession("r", Phase.MUTANT, MUTANT, 1, records))
    assert path is not None
    assert tuple(r.kind for r in read_session(path).records) == tuple(RecordKind)  # type: ignore[union-attr]
    assert json.loads(path.read_text())["records"][1]["kind"] == "leak"


def test_a_guard_that_drove_its_site_again_leaves_a_record_per_drive_after_its_own() -> None:
    from types import SimpleNamespace

    from warnonce_guard.guards.conftest import guard_records
    from warnonce_guard.guards.outcome import GuardFailure
    from warnonce_guard.guards.sessions import AGAIN

    failure = GuardFailure("a: 1 fired")
    failure.detectors, failure.again = (OWNER_PINNED,), (RecordKind.LEAK, RecordKind.PASSED)
    item = SimpleNamespace(nodeid=LEAK.test, callspec=None, stash={})
    assert guard_records(item, "call", failure) == [  # type: ignore[arg-type]
        GuardRecord(LEAK.test, None, "call", RecordKind.LEAK, (OWNER_PINNED,), "a: 1 fired"),
        GuardRecord(LEAK.test, None, AGAIN, RecordKind.LEAK),
        GuardRecord(LEAK.test, None, AGAIN, RecordKind.PASSED),
    ]
    assert guard_records(item, "call", None) == [GuardRecord(LEAK.test, None, "call", RecordKind.PASSED)]  # type: ignore[arg-type]
