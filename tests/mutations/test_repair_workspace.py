"""Before a session, the run discards what an earlier run left that does not check out
(mutations.fresh.repair_workspace): mutmut state that does not validate, names of other mutants, and exit codes no
finished guard record backs."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest
from warnonce_guard.common.errors import EngineFailed
from warnonce_guard.guards.sessions import GuardSession, Phase, mutant_session_path, read_session, write_session
from warnonce_guard.mutations.engine import layout, running, state
from warnonce_guard.mutations.fresh import repair_workspace
from warnonce_guard.mutations.identify import NamedMutant
from warnonce_guard.mutations.workspace import Workspace

from tests.records_support import generated, meta_document

FILE = "vllm/platforms/interface.py"
M1, M2 = "vllm.platforms.interface.xǁPǁf__mutmut_1", "vllm.platforms.interface.xǁPǁf__mutmut_2"


def named(mutant: str) -> dict[str, object]:
    return asdict(NamedMutant(mutant, "s", "live-arg", "a", "b"))


@pytest.fixture
def ws(ws: Workspace) -> Workspace:
    """A workspace after a finished generation of two untested mutants, both named."""
    generated(ws, FILE, {M1: None, M2: None})
    ws.identities_file.write_text(json.dumps([named(M1), named(M2)]))
    return ws


def test_names_of_the_mutants_mutmut_made_are_kept(ws: Workspace) -> None:
    said: list[str] = []
    repair_workspace(ws, [FILE], said.append)
    assert said == [] and ws.identities_file.exists()


@pytest.mark.parametrize("kept", [[], [M1], [M1, M2, "vllm.other__mutmut_1"]], ids=["none", "fewer", "more"])
def test_names_of_other_mutants_than_mutmut_made_are_named_again(ws: Workspace, kept: list[str]) -> None:
    ws.identities_file.write_text(json.dumps([named(m) for m in kept]))  # else: MutantsUnaccounted on every later run
    said: list[str] = []
    repair_workspace(ws, [FILE], said.append)
    assert not ws.identities_file.exists()
    assert said == [f"discarded {ws.identities_file} (its mutants are not the ones mutmut generated); "
                    "the mutants are named again"]  # fmt: skip


def test_names_without_a_finished_generation_are_named_again(ws: Workspace) -> None:
    for path in (ws.generation_file, layout.meta(ws, FILE), layout.mutated(ws, FILE)):
        path.unlink()  # mutmut's state gone (a user cleaned mutants/): nothing to check the names against
    said: list[str] = []
    repair_workspace(ws, [FILE], said.append)
    assert not ws.identities_file.exists() and "no finished generation" in said[0]


def left_by_a_session(ws: Workspace, codes: dict[str, int | None], sessions: dict[str, int]) -> None:
    """mutmut's exit codes as an earlier session left them, and the guard sessions (by exit status) it finished."""
    layout.meta(ws, FILE).write_text(json.dumps(meta_document(codes)))
    for mutant, status in sessions.items():
        write_session(ws.attribution, GuardSession("run1", Phase.MUTANT, mutant, status, ()))


def test_an_exit_code_without_a_finished_guard_record_is_cleared_so_mutmut_tests_it_again(ws: Workspace) -> None:
    left_by_a_session(ws, {M1: 1, M2: 1}, {M1: 1})  # M2's session was killed before it wrote its record
    said: list[str] = []
    repair_workspace(ws, [FILE], said.append)
    assert state.read_exit_codes(ws, [FILE])[0] == {M1: 1, M2: None}
    assert said == ["1 mutant result(s) had no finished guard record behind them (an interrupted run): testing again"]


def test_an_exit_code_its_guard_record_contradicts_is_cleared_with_the_record(ws: Workspace) -> None:
    left_by_a_session(ws, {M1: 1, M2: 0}, {M1: 1, M2: 1})  # Ctrl-C: mutmut stored 0 for a mutant whose guards failed
    repair_workspace(ws, [FILE], lambda line: None)
    assert state.read_exit_codes(ws, [FILE])[0] == {M1: 1, M2: None}
    assert read_session(mutant_session_path(ws.attribution, M1)) is not None
    assert not mutant_session_path(ws.attribution, M2).exists()  # the retest must leave a record of its own


def test_a_guard_record_of_an_untested_mutant_is_removed(ws: Workspace) -> None:
    left_by_a_session(ws, {M1: None, M2: 1}, {M1: 1, M2: 1})  # M1's record from a run whose exit code was lost
    repair_workspace(ws, [FILE], lambda line: None)
    assert not mutant_session_path(ws.attribution, M1).exists()
    assert mutant_session_path(ws.attribution, M2).exists()


def test_mutmut_state_that_does_not_validate_is_discarded_and_said(ws: Workspace) -> None:
    layout.meta(ws, FILE).write_text('{"exit_code_by_key": {')  # truncated
    said: list[str] = []
    repair_workspace(ws, [FILE], said.append)
    assert said[0].startswith(f"discarded {layout.meta(ws, FILE)} (not valid JSON") and said[0].endswith("made again")
    assert not layout.meta(ws, FILE).exists() and not ws.identities_file.exists()


def test_state_that_changes_after_validation_is_an_engine_failure_naming_the_directory(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state, "validate", lambda ws, files: [])  # the .meta broke after it was checked
    layout.meta(ws, FILE).write_text("")
    with pytest.raises(EngineFailed, match=f"remove {ws.dir} and run again"):
        repair_workspace(ws, [FILE], lambda line: None)


def test_what_an_earlier_session_was_running_is_forgotten_for_each_session_that_runs_again(ws: Workspace) -> None:
    """A marker names the test a session was running when it ended unfinished (`engine.running`): one left by an
    earlier run must not name a test for the session that tests its mutant again, or for the unmutated code."""
    left_by_a_session(ws, {M1: 1, M2: 2}, {M1: 1})  # M2's session was interrupted (2): no finished record
    for mutant in (M1, M2, ""):
        running.starting(ws.attribution, mutant, f"t.py::test_{mutant[-1:]}")
    repair_workspace(ws, [FILE], lambda line: None)
    assert set(running.last_tests(ws.attribution)) == {M1}  # its verdict stands, and names what it ran
