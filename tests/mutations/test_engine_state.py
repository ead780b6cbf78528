"""mutmut's state in a workspace: validated against the generation manifest, discarded when it does not match."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from warnonce_guard.common.errors import BadRecord
from warnonce_guard.mutations.engine import layout, seam, state
from warnonce_guard.mutations.engine.status import DEFAULT_STATUS, EXIT_CODE_STATUS
from warnonce_guard.mutations.workspace import Workspace

from tests.records_support import generated, meta_document

FILE = "vllm/platforms/interface.py"
M1, M2 = "vllm.platforms.interface.xǁPǁf__mutmut_1", "vllm.platforms.interface.xǁPǁf__mutmut_2"


@pytest.fixture
def ws(ws: Workspace) -> Workspace:
    """A workspace as a finished generation leaves it: pristine file, mutmut's copy, .meta, manifest."""
    return generated(ws, FILE, {M1: 1, M2: None})


def test_a_complete_generation_validates_and_keeps_everything(ws: Workspace) -> None:
    assert state.validate(ws, [FILE]) == []
    assert state.read_exit_codes(ws, [FILE]) == ({M1: 1, M2: None}, {M1: 0.5})


@pytest.mark.parametrize("text", ["", '{"exit_code_by_key": {', "[]", '{"exit_code_by_key": {}}'])
def test_a_truncated_or_foreign_meta_is_discarded_with_its_mutants(ws: Workspace, text: str) -> None:
    layout.meta(ws, FILE).write_text(text)
    (discarded,) = state.validate(ws, [FILE])
    assert discarded.path == layout.meta(ws, FILE)
    assert not layout.meta(ws, FILE).exists() and not layout.mutated(ws, FILE).exists()
    assert not ws.generation_file.exists()


def test_a_deleted_meta_is_discarded_and_made_again(ws: Workspace) -> None:
    layout.meta(ws, FILE).unlink()
    (discarded,) = state.validate(ws, [FILE])
    assert "missing" in discarded.reason and not layout.mutated(ws, FILE).exists()


def test_a_mutants_file_that_changed_since_generation_is_discarded(ws: Workspace) -> None:
    layout.mutated(ws, FILE).write_text("# mut")  # truncated while mutmut wrote it
    (discarded,) = state.validate(ws, [FILE])
    assert discarded.path == layout.mutated(ws, FILE) and "differs" in discarded.reason


def test_without_a_finished_generation_nothing_of_mutmut_is_trusted(ws: Workspace) -> None:
    ws.generation_file.unlink()
    (discarded,) = state.validate(ws, [FILE])
    assert "did not finish" in discarded.reason


def test_a_corrupt_stats_file_is_discarded(ws: Workspace) -> None:
    layout.stats(ws).write_text('{"tests_by_mangled_function_name": {')
    (discarded,) = state.validate(ws, [FILE])
    assert discarded.path == layout.stats(ws) and not layout.stats(ws).exists()


def test_reset_clears_only_the_named_exit_codes_atomically(ws: Workspace) -> None:
    assert state.reset(ws, [FILE], {M1: "interrupted"}) == 1
    assert state.read_exit_codes(ws, [FILE]) == ({M1: None, M2: None}, {})
    assert sorted(p.name for p in layout.meta(ws, FILE).parent.iterdir()) == ["interface.py", "interface.py.meta"]


def test_meta_saves_are_atomic_in_the_session(
    ws: Workspace, mutmut_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # mutmut_config first: its directory is restored after monkeypatch's
    import mutmut.__main__ as mutmut_main  # importing it reads a mutmut config: mutmut_config's
    from mutmut.mutation.data import SourceFileMutationData

    monkeypatch.setattr(SourceFileMutationData, "save", SourceFileMutationData.save)
    for name in ("Pool", "create_mutants"):
        monkeypatch.setattr(mutmut_main, name, getattr(mutmut_main, name))
    monkeypatch.chdir(ws.dir)
    seam.patched_main(mutmut_main.Pool, lambda create: create)
    data = SourceFileMutationData(path=FILE)
    data.load()
    data.exit_code_by_key[M2] = 0
    data.save()
    assert state.read_exit_codes(ws, [FILE])[0] == {M1: 1, M2: 0}


def test_the_exit_code_table_is_mutmuts_own() -> None:
    from mutmut.stats import status_by_exit_code

    assert {code: str(status) for code, status in EXIT_CODE_STATUS.items()} == dict(status_by_exit_code.items())
    assert status_by_exit_code.default_factory() == str(DEFAULT_STATUS)


@pytest.mark.parametrize("text", ["[]", "null", '"run1"', '{"run": 1, "files": {}}', '{"run": "run1", "files": []}'])
def test_a_generation_manifest_of_another_shape_is_not_trusted_and_does_not_crash(ws: Workspace, text: str) -> None:
    ws.generation_file.write_text(text)
    with pytest.raises(BadRecord, match="not a generation manifest"):
        state.read_generation(ws)
    (discarded,) = state.validate(ws, [FILE])
    assert "did not finish" in discarded.reason and not ws.generation_file.exists()


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        "null",
        "{}",
        '{"tests_by_mangled_function_name": {}}',
        '{"tests_by_mangled_function_name": [], "duration_by_test": {}, "stats_time": 1.0}',
        '{"tests_by_mangled_function_name": {}, "duration_by_test": {}, "stats_time": 1.0, "from_another_mutmut": 1}',
    ],
    ids=["list", "null", "empty-object", "missing-keys", "wrong-type", "unknown-key"],
)
def test_a_stats_file_mutmut_cannot_load_is_discarded(ws: Workspace, text: str) -> None:
    layout.stats(ws).write_text(text)  # mutmut's load_stats would crash on it in every later session
    (discarded,) = state.validate(ws, [FILE])
    assert discarded.path == layout.stats(ws) and not layout.stats(ws).exists()


def test_the_stats_keys_are_the_ones_mutmut_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mutmut.configuration import reset_config
    from mutmut.stats import save_stats

    (tmp_path / "mutants").mkdir()
    (tmp_path / "setup.cfg").write_text("[mutmut]\nsource_paths = x\n")
    monkeypatch.chdir(tmp_path)
    reset_config()
    try:
        save_stats()
    finally:
        reset_config()
    written = json.loads((tmp_path / "mutants" / "mutmut-stats.json").read_text())
    assert set(written) == state.STATS_KEYS
    state.parse_stats(written)


@pytest.mark.parametrize(
    ("codes", "durations", "why"),
    [
        ({M1: "1"}, {}, "exit_code_by_key is not a map of mutant names to exit codes"),
        ({M1: True}, {}, "exit_code_by_key is not a map of mutant names to exit codes"),
        ({M1: 1}, {M1: "0.5"}, "durations_by_key is not a map of mutant names to seconds"),
    ],
    ids=["code-as-text", "code-as-bool", "duration-as-text"],
)
def test_a_meta_whose_codes_or_durations_are_of_another_type_is_discarded(
    ws: Workspace, codes: dict[str, object], durations: dict[str, object], why: str
) -> None:
    document = meta_document({}) | {"exit_code_by_key": codes, "durations_by_key": durations}
    layout.meta(ws, FILE).write_text(json.dumps(document))
    (discarded,) = state.validate(ws, [FILE])
    assert (discarded.path, discarded.reason) == (layout.meta(ws, FILE), why)


def test_a_meta_that_is_not_utf8_is_discarded(ws: Workspace) -> None:
    layout.meta(ws, FILE).write_bytes(b"\xff\xfe{}")
    (discarded,) = state.validate(ws, [FILE])
    assert discarded.reason == "not UTF-8 text"


def test_a_meta_without_its_mutants_file_is_discarded(ws: Workspace) -> None:
    layout.mutated(ws, FILE).unlink()
    (discarded,) = state.validate(ws, [FILE])
    assert (discarded.path, discarded.reason) == (layout.meta(ws, FILE), "its mutants file is missing")
    assert not layout.meta(ws, FILE).exists()


def test_a_meta_naming_other_mutants_than_were_generated_is_discarded(ws: Workspace) -> None:
    layout.meta(ws, FILE).write_text(json.dumps(meta_document({M1: 1})))  # M2 lost
    (discarded,) = state.validate(ws, [FILE])
    assert discarded.reason == "its mutants differ from what mutmut generated"


def test_a_generation_manifest_with_a_bad_entry_is_not_trusted(ws: Workspace) -> None:
    ws.generation_file.write_text(json.dumps({"run": "run1", "files": {FILE: {"sha256": 1, "mutants": []}}}))
    with pytest.raises(BadRecord, match=f"bad entry for {FILE}"):
        state.read_generation(ws)


def test_a_site_file_mutmut_never_generated_has_nothing_to_discard(ws: Workspace) -> None:
    other = "vllm/platforms/cpu.py"
    assert state.validate(ws, [FILE, other]) == []
