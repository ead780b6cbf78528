"""Before a session, the run discards what an earlier run left that does not check out (mutations.run.heal)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest
from warnonce_guard.mutations.engine import layout, state
from warnonce_guard.mutations.identify import NamedMutant
from warnonce_guard.mutations.run import heal
from warnonce_guard.mutations.workspace import Workspace

FILE = "vllm/platforms/interface.py"
M1, M2 = "vllm.platforms.interface.xǁPǁf__mutmut_1", "vllm.platforms.interface.xǁPǁf__mutmut_2"


def named(mutant: str) -> dict[str, object]:
    return asdict(NamedMutant(mutant, "s", "live-arg", "a", "b"))


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """A workspace after a finished generation of two untested mutants, both named."""
    ws = Workspace(tmp_path / "ws")
    (ws.dir / FILE).parent.mkdir(parents=True)
    (ws.dir / FILE).write_text("def f(): pass\n")
    layout.mutated(ws, FILE).parent.mkdir(parents=True)
    layout.mutated(ws, FILE).write_text("# mutants\n")
    document = {
        "exit_code_by_key": {M1: None, M2: None},
        "hash_by_function_name": {},
        "type_check_error_by_key": {},
        "durations_by_key": {},
        "estimated_durations_by_key": {},
    }
    layout.meta(ws, FILE).write_text(json.dumps(document))
    state.write_generation(ws, "run1", [FILE])
    ws.identities_file.write_text(json.dumps([named(M1), named(M2)]))
    return ws


def test_names_of_the_mutants_mutmut_made_are_kept(ws: Workspace) -> None:
    said: list[str] = []
    heal(ws, [FILE], said.append)
    assert said == [] and ws.identities_file.exists()


@pytest.mark.parametrize("kept", [[], [M1], [M1, M2, "vllm.other__mutmut_1"]], ids=["none", "fewer", "more"])
def test_names_of_other_mutants_than_mutmut_made_are_named_again(ws: Workspace, kept: list[str]) -> None:
    ws.identities_file.write_text(json.dumps([named(m) for m in kept]))  # else: exit 14 on every later run
    said: list[str] = []
    heal(ws, [FILE], said.append)
    assert not ws.identities_file.exists()
    assert said == [f"discarded {ws.identities_file} (its mutants are not the ones mutmut generated); "
                    "the mutants are named again"]  # fmt: skip


def test_names_without_a_finished_generation_are_named_again(ws: Workspace) -> None:
    for path in (ws.generation_file, layout.meta(ws, FILE), layout.mutated(ws, FILE)):
        path.unlink()  # mutmut's state gone (a user cleaned mutants/): nothing to check the names against
    said: list[str] = []
    heal(ws, [FILE], said.append)
    assert not ws.identities_file.exists() and "no finished generation" in said[0]
