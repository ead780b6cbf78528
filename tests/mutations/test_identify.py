"""Naming mutmut's mutants (`mutations.identify`): each is the discovered site whose call starts where the mutant's
changed call starts; what no site explains is kept and marked; identities.json is trusted only while it validates."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, replace
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata.position_provider import PositionProvidingCodegenState
from warnonce_guard.common.errors import BadRecord, ExitCode, Interrupted, MutantsUnaccounted
from warnonce_guard.mutations.engine import naming
from warnonce_guard.mutations.engine.naming import changed_call
from warnonce_guard.mutations.identify import MutantIdentity, NamedMutant, attribute, read_identities, write_identities
from warnonce_guard.mutations.operators import anchors_of
from warnonce_guard.mutations.workspace import Workspace
from warnonce_guard.rule.site_row import Site
from warnonce_guard.rule.sites import sites_in_source

from tests.toy import INTERFACE

pytestmark = pytest.mark.usefixtures("module_mutmut_config")  # mutmut's generator reads a config

FILE = "vllm/platforms/interface.py"
MODULE = "vllm.platforms.interface"


def identify_file(source: str, file: str, sites: list[Site]) -> list[MutantIdentity]:
    """Every mutant mutmut makes of one site file, generated and named here, as `write_identities` does for a file
    the session's generator left undescribed."""
    return attribute(file, naming.made_here(file, source, ["vllm"], anchors_of(sites)), sites)


def test_every_mutant_of_a_site_is_named_with_its_site_operator_and_exact_text() -> None:
    (site,) = sites_in_source(INTERFACE, FILE, MODULE)
    identities = identify_file(INTERFACE, FILE, [site])

    assert sorted(i.operator for i in identities) == ["eager-repr-revert", "live-arg", "once-dropped"]
    assert {i.site for i in identities} == {site} and not any(i.unattributed for i in identities)
    call = 'logger.warning_once("Failed to import from vllm._C: %s", repr(e))'
    assert {i.original for i in identities} == {call}
    by_operator = {i.operator: i.replacement for i in identities}
    assert by_operator["live-arg"] == 'logger.warning_once("Failed to import from vllm._C: %s", e)'
    assert [i.mutant_id for i in identities] == [f"{MODULE}.xǁPlatformǁimport_kernels__mutmut_{n}" for n in (1, 2, 3)]


@pytest.mark.parametrize("at_token", [40, 200])
def test_a_signal_while_mutants_are_named_stays_the_interrupt_it_is(
    at_token: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libcst records positions in `finally` blocks that turned the interrupt into a KeyError (exit 70, megabytes
    of traceback, for SIGINT/SIGTERM in the 0.3 s vLLM's naming takes)."""
    (site,) = sites_in_source(INTERFACE, FILE, MODULE)
    tokens = []
    add_token = PositionProvidingCodegenState.add_token

    def signalled(state: PositionProvidingCodegenState, value: str) -> None:  # where the handler would raise
        tokens.append(value)
        if len(tokens) == at_token:
            raise Interrupted(ExitCode.TERMINATED)
        add_token(state, value)

    monkeypatch.setattr(PositionProvidingCodegenState, "add_token", signalled)
    with pytest.raises(Interrupted) as stopped:
        identify_file(INTERFACE, FILE, [site])
    assert stopped.value.exit_code == ExitCode.TERMINATED


def test_a_mutant_whose_call_no_discovered_site_starts_at_is_kept_marked_and_shown_where_it_is() -> None:
    (site,) = sites_in_source(INTERFACE, FILE, MODULE)
    stale = replace(site, column=site.column + 4)  # the same try, but the record's call is elsewhere

    identities = identify_file(INTERFACE, FILE, [stale])

    assert identities and all(i.unattributed.endswith("changes a call no discovered site has") for i in identities)
    stand_in = identities[0].site
    assert (stand_in.line, stand_in.column) == (site.line, site.column)  # the call's own position
    assert stand_in.kernel_module == f"unattributed@{site.line}" and stand_in.file == FILE
    named = identities[0].named()
    assert named.orphan_site == stand_in and named.unattributed == identities[0].unattributed


def test_a_call_laid_out_unusually_is_still_shown_exactly_as_written() -> None:
    source = INTERFACE.replace(
        'logger.warning_once("Failed to import from vllm._C: %s", repr(e))',
        'logger.warning_once(\n  "Failed to import from vllm._C: %s",\n                repr(e))',  # less than its block
    )
    (site,) = sites_in_source(source, FILE, MODULE)

    by_operator = {i.operator: i for i in identify_file(source, FILE, [site])}

    live = by_operator["live-arg"]
    assert live.original == 'logger.warning_once(\n  "Failed to import from vllm._C: %s",\n                repr(e))'
    assert live.replacement == 'logger.warning_once(\n  "Failed to import from vllm._C: %s",\n                e)'


def test_a_mutant_that_changes_no_logger_call_is_unaccounted(monkeypatch: pytest.MonkeyPatch) -> None:
    (site,) = sites_in_source(INTERFACE, FILE, MODULE)
    module = cst.parse_module(INTERFACE)
    stray = naming.Generated(f"{MODULE}.x_f__mutmut_1", "f", cst.Name("a"), cst.Name("b"))
    monkeypatch.setattr(naming, "generate", lambda *args: (module, [stray]))
    with pytest.raises(MutantsUnaccounted, match="changes no logger call; mutmut and the operators differ"):
        identify_file(INTERFACE, FILE, [site])


def test_a_change_of_node_kind_before_any_logger_call_is_no_changed_call() -> None:
    assert changed_call(cst.parse_expression("f(x)"), cst.parse_expression("x")) is None


# --- identities.json --------------------------------------------------------------------------------------


def test_named_mutants_read_back_as_written(ws: Workspace) -> None:
    named = [NamedMutant("m__mutmut_1", "s", "live-arg", "repr(e)", "e")]
    ws.identities_file.write_text(json.dumps([asdict(n) for n in named]))
    assert read_identities(ws) == named


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (None, "missing"),
        ("[", "not valid JSON"),
        ('{"mutant_id": "m"}', "not a list of named mutants"),
        ('[{"mutant_id": "m"}]', "not a named mutant"),
        (
            '[{"mutant_id": "m", "site_id": "s", "operator": 1, "original": "a", "replacement": "b",'
            ' "unattributed": "", "orphan": null}]',
            "a named mutant's field has the wrong type",
        ),
        (
            '[{"mutant_id": "m", "site_id": "s", "operator": "o", "original": "a", "replacement": "b",'
            ' "unattributed": "", "orphan": []}]',
            "a named mutant's field has the wrong type",
        ),
    ],
    ids=["missing", "truncated", "object", "fields-missing", "operator-not-text", "orphan-not-a-site"],
)
def test_identities_that_do_not_validate_are_not_trusted(ws: Workspace, text: str | None, why: str) -> None:
    if text is not None:
        ws.identities_file.write_text(text)
    with pytest.raises(BadRecord, match=why):
        read_identities(ws)


# --- the generator's descriptions (made/) ------------------------------------------------------------------


def _staged(ws: Workspace) -> list[Site]:
    """The toy interface staged in `ws` with mutmut's settings beside it; its one site."""
    (ws.dir / FILE).parent.mkdir(parents=True)
    (ws.dir / FILE).write_text(INTERFACE, encoding="utf-8")
    (ws.dir / "setup.cfg").write_text("[mutmut]\nsource_paths = vllm\n", encoding="utf-8")
    return sites_in_source(INTERFACE, FILE, MODULE)


def test_the_mutants_are_named_from_the_generators_descriptions_without_generating_again(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    sites = _staged(ws)
    made = naming.made_here(FILE, INTERFACE, ["vllm"], anchors_of(sites))
    naming.write_made(ws.made(FILE), INTERFACE, [replace(m, replacement=f"as described: {m.operator}") for m in made])
    monkeypatch.setattr(naming, "made_here", lambda *args: pytest.fail("generated again"))

    named = write_identities(ws, sites, ["vllm"])

    assert sorted(n.replacement for n in named) == sorted(f"as described: {m.operator}" for m in made)
    assert [n.mutant_id for n in named] == [m.mutant_id for m in made] and {n.site_id for n in named} == {sites[0].id}
    assert read_identities(ws) == named


@pytest.mark.parametrize(
    "description",
    [
        None,
        "[",
        '[{"mutant_id": "m"}]',
        '{"sha256": "0", "mutants": []}',
        '{"sha256": "%s", "mutants": [{"mutant_id": "m"}]}',
        '{"sha256": "%s", "mutants": [{"mutant_id": 1, "qualname": "q"}]}',
    ],
    ids=["missing", "truncated", "a-list", "another-source", "fields-missing", "wrong-types"],
)
def test_a_file_the_generator_left_undescribed_is_described_here(ws: Workspace, description: str | None) -> None:
    sites = _staged(ws)
    if description is not None:
        ws.made(FILE).parent.mkdir(parents=True)
        digest = hashlib.sha256(INTERFACE.encode()).hexdigest()
        ws.made(FILE).write_text(description.replace("%s", digest), encoding="utf-8")

    named = write_identities(ws, sites, ["vllm"])

    assert named == [i.named() for i in identify_file(INTERFACE, FILE, sites)]
    assert sorted(n.operator for n in named) == ["eager-repr-revert", "live-arg", "once-dropped"]


def test_a_description_reads_back_as_written_and_rejects_a_wrong_type_or_another_source(tmp_path: Path) -> None:
    (site,) = sites_in_source(INTERFACE, FILE, MODULE)
    made = naming.made_here(FILE, INTERFACE, ["vllm"], anchors_of([site]))
    naming.write_made(tmp_path / "made.json", INTERFACE, made)
    assert naming.read_made(tmp_path / "made.json", INTERFACE) == made
    with pytest.raises(BadRecord, match="made from another source"):
        naming.read_made(tmp_path / "made.json", INTERFACE + "\n")
    data = json.loads((tmp_path / "made.json").read_text())
    data["mutants"][0]["line"] = str(data["mutants"][0]["line"])
    (tmp_path / "made.json").write_text(json.dumps(data))
    with pytest.raises(BadRecord, match="wrong type"):
        naming.read_made(tmp_path / "made.json", INTERFACE)
