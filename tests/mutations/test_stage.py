"""Staging: the site files in a workspace keyed by the fingerprint of every target file; what an earlier run left
there is used only while it is whole."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from warnonce_guard.common import fingerprint
from warnonce_guard.common.errors import BadRecord, GuardError, StagingFailed
from warnonce_guard.mutations import stage
from warnonce_guard.mutations.engine import layout
from warnonce_guard.mutations.workspace import Workspace
from warnonce_guard.rule.sites import discover
from warnonce_guard.rule.target import imported_first, source_tree

from tests.faults import as_nobody, give_to_nobody, no_longer_than, shared_tree
from tests.toy import INTERFACE, add_odd_files, make_tree

SITE_FILE = "vllm/platforms/interface.py"  # the toy's one file with a site


def test_the_sites_an_earlier_run_recorded_are_read_back(tmp_path: Path, ws: Workspace) -> None:
    sites = discover(make_tree(tmp_path / "tree"))
    ws.sites_file.write_text(json.dumps([site.to_json() for site in sites]))
    assert stage.read_sites(ws) == sites


@pytest.mark.parametrize("text", ["[]", "{}", '{"a": 1}', "null", '"sites"'])
def test_a_sites_file_without_a_site_to_mutate_is_not_trusted(ws: Workspace, text: str) -> None:
    ws.sites_file.write_text(text)  # a run never writes one: it stops first with "nothing to check"
    with pytest.raises(BadRecord):
        stage.read_sites(ws)


def test_a_sites_file_of_unguarded_sites_only_is_not_trusted(tmp_path: Path, ws: Workspace) -> None:
    module_level = "try:\n    import vllm._C\nexcept ImportError as e:\n    logger.warning('%r', e)\n"
    sites = discover(make_tree(tmp_path / "tree", INTERFACE + module_level))
    ws.sites_file.write_text(json.dumps([site.to_json() for site in sites if not site.guarded]))
    with pytest.raises(BadRecord, match="no guarded site"):
        stage.read_sites(ws)


def staged(ws: Workspace) -> list[str]:
    return sorted(p.relative_to(ws.dir).as_posix() for p in ws.pristine("vllm").rglob("*") if p.is_file())


def test_only_the_site_files_are_staged_as_copies_with_their_modification_times(tmp_path: Path, ws: Workspace) -> None:
    tree = make_tree(tmp_path / "tree")
    (tree / "vllm" / "third_party" / "include").mkdir(parents=True)
    (tree / "vllm" / "third_party" / "include" / "kernel.h").write_text("/* C */\n")

    assert stage.stage_files(ws, {"vllm": tree / "vllm"}, [SITE_FILE]) == []

    assert staged(ws) == [SITE_FILE]  # the guards read every other file where it is
    copy, original = ws.dir / SITE_FILE, tree / SITE_FILE
    assert not os.path.samefile(copy, original)  # a copy: nothing reaches the target's file through it
    assert copy.stat().st_mtime_ns == original.stat().st_mtime_ns  # mutmut regenerates a copy newer than its mutants


def test_a_staged_copy_is_reused_with_mutmuts_state_while_it_is_the_one_recorded(tmp_path: Path, ws: Workspace) -> None:
    tree = make_tree(tmp_path / "tree")
    stage.stage_files(ws, {"vllm": tree / "vllm"}, [SITE_FILE])
    mutated = layout.mutated(ws, SITE_FILE)
    mutated.parent.mkdir(parents=True)
    mutated.write_text("# mutmut's mutants\n")

    assert stage.stage_files(ws, {"vllm": tree / "vllm"}, [SITE_FILE]) == []

    assert mutated.read_text() == "# mutmut's mutants\n"


def test_a_file_name_that_is_not_utf8_is_fingerprinted_and_the_staged_copy_reused(
    tmp_path: Path, ws: Workspace
) -> None:
    tree = make_tree(tmp_path / "tree")
    odd = os.fsdecode(b"\xffodd.txt")  # a name a Linux file system allows and UTF-8 does not
    (tree / "vllm" / odd).write_bytes(b"x")
    first = stage.fingerprint(source_tree(tree), {"vllm": tree / "vllm"})

    (tree / "vllm" / odd).write_bytes(b"xy")
    assert stage.fingerprint(source_tree(tree), {"vllm": tree / "vllm"}) != first
    assert stage.stage_files(ws, {"vllm": tree / "vllm"}, [SITE_FILE]) == []
    assert stage.stage_files(ws, {"vllm": tree / "vllm"}, [SITE_FILE]) == []  # recorded and matched: not copied again


def test_the_listing_digest_covers_each_files_path_size_and_modification_time_but_no_bytecode(tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "tree") / "vllm"
    logger, stat = folder / "logger.py", (folder / "logger.py").stat()
    before = stage.listing_digest(folder)
    (folder / "platforms" / "__pycache__").mkdir()
    (folder / "platforms" / "__pycache__" / "cpu.cpython-311.pyc").write_bytes(b"bytecode")
    assert stage.listing_digest(folder) == before
    logger.rename(folder / "platforms" / "logger.py")  # moved: the same name, size and time elsewhere
    assert stage.listing_digest(folder) != before
    (folder / "platforms" / "logger.py").rename(logger)
    assert stage.listing_digest(folder) == before
    os.utime(logger, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    assert stage.listing_digest(folder) != before
    with logger.open("ab") as grown:
        grown.write(b"\n")
    os.utime(logger, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert stage.listing_digest(folder) != before


def test_an_edit_in_place_that_keeps_the_size_changes_the_digest(tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "tree") / "vllm"
    before = stage.listing_digest(folder)
    logger = folder / "logger.py"
    stat = logger.stat()
    logger.write_bytes(logger.read_bytes().replace(b"logging", b"LOGGING", 1))
    os.utime(logger, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    assert logger.stat().st_size == stat.st_size and stage.listing_digest(folder) != before


# --- the fingerprint: what keys a workspace ---------------------------------------------------------------


def test_the_fingerprint_is_stable_while_nothing_changes(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    packages = {"vllm": tree / "vllm"}
    first = stage.fingerprint(source_tree(tree), packages)
    assert stage.fingerprint(source_tree(tree), packages) == first
    assert len(first) == 16 and set(first) <= set("0123456789abcdef")  # a directory's name


def test_an_edit_of_a_target_file_gets_a_fresh_workspace(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    packages = {"vllm": tree / "vllm"}
    first = stage.fingerprint(source_tree(tree), packages)
    (tree / "vllm" / "platforms" / "interface.py").write_text(INTERFACE + "\n# changed\n")
    assert stage.fingerprint(source_tree(tree), packages) != first


@pytest.mark.parametrize("name", ["kernels/config.json", "_C.abi3.so", "platforms/__init__.py"])
def test_an_edit_of_any_file_of_the_target_not_only_a_python_one_gets_a_fresh_workspace(
    tmp_path: Path, name: str
) -> None:
    """The guards read the target where it is: any of its files may change what they see."""
    tree = make_tree(tmp_path / "tree")
    path = tree / "vllm" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}")
    packages = {"vllm": tree / "vllm"}
    first = stage.fingerprint(source_tree(tree), packages)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1))  # touched
    assert stage.fingerprint(source_tree(tree), packages) != first


def test_a_symlink_to_a_file_counts_as_the_file_and_one_to_a_folder_is_not_followed(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.json").write_text("{}")
    (tree / "vllm" / "data.json").symlink_to(outside / "data.json")
    (tree / "vllm" / "elsewhere").symlink_to(outside)
    packages = {"vllm": tree / "vllm"}
    first = stage.fingerprint(source_tree(tree), packages)
    (outside / "other.json").write_text("{}")  # inside the folder linked to: not the target's
    assert stage.fingerprint(source_tree(tree), packages) == first
    (outside / "data.json").write_text("{ }")  # the file linked to: read as the target's
    assert stage.fingerprint(source_tree(tree), packages) != first


def test_bytecode_is_no_part_of_the_fingerprint(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    packages = {"vllm": tree / "vllm"}
    first = stage.fingerprint(source_tree(tree), packages)
    (tree / "vllm" / "__pycache__").mkdir()
    (tree / "vllm" / "__pycache__" / "logger.cpython-311.pyc").write_bytes(b"\0")
    assert stage.fingerprint(source_tree(tree), packages) == first


def test_a_platform_and_its_plugin_package_get_a_workspace_of_their_own(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    target, packages = source_tree(tree), {"vllm": tree / "vllm"}
    plugin = tmp_path / "plugin" / "my_plugin"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text("")
    keys = {
        stage.fingerprint(target, packages),
        stage.fingerprint(target, packages, "vllm.platforms.interface:Platform"),
        stage.fingerprint(target, packages | {"my_plugin": plugin}, "my_plugin:Platform"),
    }
    assert len(keys) == 3


def test_a_change_of_this_tools_code_or_of_mutmut_gets_a_fresh_workspace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = make_tree(tmp_path / "tree")
    target, packages = source_tree(tree), {"vllm": tree / "vllm"}
    tool = tmp_path / "tool"
    tool.mkdir()
    (tool / "operators.py").write_text("OPERATORS = {}\n")
    monkeypatch.setattr(fingerprint, "TOOL_DIRS", (tool,))
    first = stage.fingerprint(target, packages)

    (tool / "operators.py").write_text("OPERATORS = {'new': None}\n")
    second = stage.fingerprint(target, packages)
    monkeypatch.setattr(fingerprint.importlib.metadata, "version", lambda name: "3.9.0" if name == "mutmut" else "1.0")
    third = stage.fingerprint(target, packages)

    assert len({first, second, third}) == 3


# --- the staged copy and the run's files --------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["edited", "never recorded", "gone"])
def test_a_copy_that_changed_or_was_never_recorded_is_discarded_with_mutmuts_state_and_made_again(
    tmp_path: Path, ws: Workspace, damage: str
) -> None:
    tree = make_tree(tmp_path / "tree")
    stage.stage_files(ws, {"vllm": tree / "vllm"}, [SITE_FILE])
    mutated = layout.mutated(ws, SITE_FILE)
    mutated.parent.mkdir(parents=True)
    mutated.write_text("# mutmut's mutants of what was staged\n")
    if damage == "edited":
        (ws.dir / SITE_FILE).write_text("# not the target's\n")
    elif damage == "gone":
        (ws.dir / SITE_FILE).unlink()
    else:
        ws.staged_manifest.unlink()  # killed between the copy's rename and its record

    said = stage.stage_files(ws, {"vllm": tree / "vllm"}, [SITE_FILE])

    assert said == [f"discarded {ws.pristine('vllm')} (an incomplete or changed copy); it is made again"]
    assert (ws.dir / SITE_FILE).read_text() == INTERFACE
    assert not mutated.exists()  # made from the damaged copy: mutmut makes it again


def test_a_copy_of_other_files_than_the_sites_is_made_again(tmp_path: Path, ws: Workspace) -> None:
    tree = make_tree(tmp_path / "tree")
    stage.stage_files(ws, {"vllm": tree / "vllm"}, [SITE_FILE, "vllm/logger.py"])
    assert stage.stage_files(ws, {"vllm": tree / "vllm"}, [SITE_FILE]) != []
    assert staged(ws) == [SITE_FILE]


def test_what_is_no_file_to_read_is_left_out_of_the_fingerprint_with_a_note_and_never_staged(
    tmp_path: Path, ws: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    """A FIFO was waited on for ever (copy2 opens it; the fingerprint and listing stat every file); a dangling
    symlink or a loop was exit 12 blaming the work directory, a traceback for the fingerprint."""
    tree = make_tree(tmp_path / "tree")
    odd = add_odd_files(tree)
    with no_longer_than(20):
        stage.fingerprint(source_tree(tree), {"vllm": tree / "vllm"})
        stage.stage_files(ws, {"vllm": tree / "vllm"}, [SITE_FILE])

    assert staged(ws) == [SITE_FILE]
    noted = {record.getMessage() for record in caplog.records}
    skipped = {path: what for path, what in odd.items() if path.name != "folder.py"}  # a folder: walked into
    assert {f"skipped {path}: {what}, not a file to read" for path, what in skipped.items()} <= noted


def test_a_site_file_this_user_may_not_read_is_exit_5_naming_it_not_the_work_directory() -> None:
    """It was exit 12, 'cannot stage the target in <work dir>': the work directory was fine."""
    with shared_tree() as tree:
        secret = tree / SITE_FILE
        secret.chmod(0o600)  # root's
        work = tree.parent / "work"
        work.mkdir()
        give_to_nobody(work)
        stage.stage_files(Workspace(tree.parent / "warm-up"), {"vllm": tree / "vllm"}, [SITE_FILE])  # as root: reads

        def stage_as_user() -> tuple[str, str]:
            try:
                stage.stage_files(Workspace(work / "ws"), {"vllm": tree / "vllm"}, [SITE_FILE])
            except GuardError as err:
                return type(err).__name__, str(err)
            return "staged", ""

        kind, said = as_nobody(stage_as_user)
    assert kind == "SourceDoesNotParse", said
    assert said.startswith(f"{secret}: cannot be read (Permission denied)")


def test_prepare_stages_the_files_with_a_cached_site_and_writes_the_runs_files(tmp_path: Path, ws: Workspace) -> None:
    tree = make_tree(tmp_path / "tree")
    plain = INTERFACE.replace("class Platform", "class CpuPlatform").replace("warning_once", "warning")
    (tree / "vllm" / "platforms" / "cpu.py").write_text(plain)  # a site, not cached: guarded, staged, no operator
    sites = discover(tree)
    assert sorted(site.file for site in sites) == ["vllm/platforms/cpu.py", SITE_FILE]

    stage.prepare(ws, source_tree(tree), sites)

    cpu = "vllm/platforms/cpu.py"
    assert staged(ws) == [cpu, SITE_FILE] and stage.mutated_files(sites) == [cpu, SITE_FILE]
    assert not ws.mutants.exists()  # mutmut writes its own copies there
    assert json.loads(ws.packages_file.read_text()) == {"vllm": str(tree / "vllm")}  # imported from there
    assert sorted(p.name for p in ws.guard_tests.iterdir()) == sorted(stage.GUARD_TEST_FILES)
    assert f"only_mutate = \n    {cpu}\n    {SITE_FILE}\n" in ws.setup_cfg.read_text()
    assert stage.read_sites(ws) == sites


@pytest.mark.parametrize(
    ("interface", "first"),
    [
        ("import os\nimport torch\nimport torch.nn\nfrom vllm.logger import init_logger\nfrom . import x\n", ["torch"]),
        (
            "from numpy import array\nfrom __future__ import annotations\n"
            "try:\n    import optional\nexcept ImportError:\n    pass\n",
            ["numpy"],
        ),
        (INTERFACE, []),  # the toy: only the standard library and itself
        ("def broken(:\n", []),
    ],
)
def test_the_session_imports_first_what_the_platform_interface_imports_from_elsewhere_at_its_top_level(
    tmp_path: Path, interface: str, first: list[str]
) -> None:
    tree = make_tree(tmp_path / "tree", interface)
    assert imported_first(source_tree(tree)) == first


def test_a_tree_without_a_platform_interface_imports_nothing_first(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    (tree / SITE_FILE).unlink()
    assert imported_first(source_tree(tree)) == []


def test_a_workspace_that_cannot_take_the_runs_files_is_a_staging_failure(tmp_path: Path, ws: Workspace) -> None:
    tree = make_tree(tmp_path / "tree")
    ws.guard_tests.write_text("a file where the guard tests' folder goes")
    with pytest.raises(StagingFailed, match=f"cannot stage the target in {ws.dir}"):
        stage.prepare(ws, source_tree(tree), discover(tree))


@pytest.mark.parametrize(("text", "why"), [(None, "missing"), ("[", r"not a list of sites \(JSONDecodeError\)")])
def test_a_missing_or_unreadable_sites_file_is_not_trusted(ws: Workspace, text: str | None, why: str) -> None:
    if text is not None:
        ws.sites_file.write_text(text)
    with pytest.raises(BadRecord, match=why):
        stage.read_sites(ws)
