"""A run's verdicts from what its session left (`mutations.fresh.collect_result`), on a hand-made workspace:
mutmut's exit codes, the guards' finished session records and the named mutants, joined one verdict per mutant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from warnonce_guard.common.errors import EngineFailed, MutantsUnaccounted
from warnonce_guard.guards.detectors import OWNER_PINNED
from warnonce_guard.guards.sessions import GuardSession, Phase, write_session
from warnonce_guard.mutations.engine import confirm, layout
from warnonce_guard.mutations.fresh import collect_result
from warnonce_guard.mutations.identify import NamedMutant
from warnonce_guard.mutations.operators import OPERATORS
from warnonce_guard.mutations.records import FLAKY, GUARDED, KILLED, NOT_RUN, SURVIVED, UNREACHED, Location, RunResult
from warnonce_guard.mutations.workspace import Workspace
from warnonce_guard.rule.sites import sites_in_source
from warnonce_guard.rule.target import Target

from tests.records_support import guard_test, leaked, meta_document, passed
from tests.toy import INTERFACE

FILE = "vllm/platforms/interface.py"
(SITE,) = sites_in_source(INTERFACE, FILE, "vllm.platforms.interface")
KILLED_ONE, SURVIVOR, UNTESTED = (f"vllm.platforms.interface.xǁPlatformǁimport_kernels__mutmut_{i}" for i in (1, 2, 3))
RUN = "run1"


def named(mutant: str, operator: str) -> NamedMutant:
    return NamedMutant(mutant, SITE.id, operator, "repr(e)", "e")


NAMED = [named(KILLED_ONE, "live-arg"), named(SURVIVOR, "once-dropped"), named(UNTESTED, "eager-repr-revert")]


@pytest.fixture
def ws(ws: Workspace) -> Workspace:
    """After a session: the pristine site file, a `.meta` (one killed, one survived, one untested), the guards'
    baseline session of this run, and a finished guard session for each tested mutant."""
    (ws.dir / FILE).parent.mkdir(parents=True)
    (ws.dir / FILE).write_text(INTERFACE, encoding="utf-8")
    layout.meta(ws, FILE).parent.mkdir(parents=True)
    document = meta_document({KILLED_ONE: 1, SURVIVOR: 0, UNTESTED: None}, duration_s=1.5)
    layout.meta(ws, FILE).write_text(json.dumps(document), encoding="utf-8")
    write_session(ws.attribution, GuardSession(RUN, Phase.BASELINE, "", 0, (passed(SITE),)))
    write_session(ws.attribution, GuardSession(RUN, Phase.MUTANT, KILLED_ONE, 1, (leaked(SITE, OWNER_PINNED),)))
    write_session(ws.attribution, GuardSession(RUN, Phase.MUTANT, SURVIVOR, 0, (passed(SITE), passed(SITE))))
    confirm.write(ws.confirmations_file, confirm.Ledger({KILLED_ONE: confirm.Check(RUN, (guard_test(SITE),))}))
    return ws


TARGET = Target(Path("/src"), "source tree", "9.9.9", "gtoy")


def collect(ws: Workspace, names: list[NamedMutant] = NAMED) -> RunResult:
    return collect_result(ws, TARGET, RUN, [SITE], names, started=0.0)


def test_one_verdict_per_named_mutant_from_its_exit_code_and_its_guard_record(ws: Workspace) -> None:
    result = collect(ws)

    by_id = {m.mutant_id: m for m in result.mutants}
    assert [by_id[m].status for m in (KILLED_ONE, SURVIVOR, UNTESTED)] == [KILLED, SURVIVED, NOT_RUN]
    killed = by_id[KILLED_ONE]
    assert (killed.killed_by, killed.detectors, killed.operator) == (guard_test(SITE), (OWNER_PINNED,), "live-arg")
    assert killed.duration_s == 1.5 and by_id[UNTESTED].duration_s is None
    assert by_id[SURVIVOR].covered_by == (guard_test(SITE),)  # each guard once, however many records it left
    assert killed.location == Location(SITE.line, SITE.column + 1, SITE.end_line, SITE.end_column + 1)


def test_a_kill_counts_once_confirmed_and_never_when_a_rerun_did_otherwise(ws: Workspace) -> None:
    confirm.write(ws.confirmations_file, confirm.Ledger())
    (waiting,) = [m for m in collect(ws).mutants if m.mutant_id == KILLED_ONE]
    assert (waiting.status, waiting.killed_by) == (NOT_RUN, None)  # confirmed by the next run's session
    assert "not confirmed yet" in waiting.reason

    other = confirm.Check("an earlier run", (guard_test(SITE),))  # the check of a session tested again since
    confirm.write(ws.confirmations_file, confirm.Ledger({KILLED_ONE: other}))
    assert [m.status for m in collect(ws).mutants if m.mutant_id == KILLED_ONE] == [NOT_RUN]

    shaky = confirm.Check(RUN, (guard_test(SITE),), {guard_test(SITE): "passed when re-run on it"})
    confirm.write(ws.confirmations_file, confirm.Ledger({KILLED_ONE: shaky}))
    result = collect(ws)
    (flaky,) = [m for m in result.mutants if m.mutant_id == KILLED_ONE]
    assert flaky.status is FLAKY and flaky.killed_by == guard_test(SITE)
    assert flaky.reason == f"not counted: the kill did not hold, {guard_test(SITE)} passed when re-run on it"
    assert result.flaky == {guard_test(SITE): "passed when re-run on it"} and result.score == 0.0


def test_the_result_carries_the_sources_the_operators_and_each_sites_baseline(ws: Workspace) -> None:
    result = collect(ws)

    assert result.sources == {FILE: INTERFACE}
    assert [op.name for op in result.operators] == list(OPERATORS)
    assert [(b.site, b.status, b.guard) for b in result.baselines] == [(SITE, GUARDED, guard_test(SITE))]
    assert (result.vllm_version, result.vllm_commit, result.target) == ("9.9.9", "gtoy", "source tree at /src/vllm")


def test_baseline_sessions_of_another_run_are_not_this_runs_baseline(ws: Workspace) -> None:
    for path in (ws.attribution / "baseline").iterdir():
        path.rename(path.with_name(path.name.replace(RUN, "run0")))
    assert [b.status for b in collect(ws).baselines] == [UNREACHED]


def test_a_mutant_mutmut_made_that_naming_does_not_know_is_unaccounted(ws: Workspace) -> None:
    with pytest.raises(MutantsUnaccounted, match=rf"only mutmut \['{UNTESTED}'\], only ours \[\]"):
        collect(ws, names=NAMED[:2])


def test_a_named_mutant_mutmut_did_not_make_is_unaccounted(ws: Workspace) -> None:
    extra = named("vllm.platforms.interface.x_other__mutmut_1", "live-arg")
    with pytest.raises(MutantsUnaccounted, match=r"only mutmut \[\], only ours \['vllm\.platforms\.interface\.x_other"):
        collect(ws, names=[*NAMED, extra])


def test_a_meta_that_does_not_validate_is_an_engine_failure_asking_for_another_run(ws: Workspace) -> None:
    layout.meta(ws, FILE).write_text('{"exit_code_by_key": {', encoding="utf-8")  # truncated
    with pytest.raises(EngineFailed, match=r"interface\.py\.meta: not valid JSON.*; run again \(the workspace is"):
        collect(ws)
