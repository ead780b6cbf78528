"""Staging: a pristine copy of the target in a workspace keyed by its fingerprint; what an earlier run left there
is used only while it is whole."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from faults import as_nobody, give_to_nobody, no_longer_than, shared_tree
from toy import INTERFACE, LOGGER_SOURCE, add_odd_files, make_tree
from warnonce_guard.common import fingerprint
from warnonce_guard.common.errors import BadRecord, GuardError, StagingFailed
from warnonce_guard.mutations import stage
from warnonce_guard.mutations.engine import layout
from warnonce_guard.mutations.workspace import Workspace
from warnonce_guard.rule.sites import discover
from warnonce_guard.rule.target import source_tree

COPIED = ["__init__.py", "_version.py", "logger.py", "platforms", "platforms/__init__.py", "platforms/interface.py"]


def test_the_sites_an_earlier_run_recorded_are_read_back(tmp_path: Path, ws: Workspace) -> None:
    sites = discover(make_tree(tmp_path / "tree"))
    ws.sites_file.write_text(json.dumps([site.to_json() for site in sites]))
    assert stage.read_sites(ws) == sites


@pytest.mark.parametrize("text", ["[]", "{}", '{"a": 1}', "null", '"sites"'])
def test_a_sites_file_without_a_site_to_mutate_is_not_trusted(ws: Workspace, text: str) -> None:
    ws.sites_file.write_text(text)  # a run never writes one: it stops first with "nothing to check"
    with pytest.raises(BadRecord):
        stage.read_sites(ws)


def test_a_sites_file_of_uncached_sites_only_is_not_trusted(tmp_path: Path, ws: Workspace) -> None:
    sites = discover(make_tree(tmp_path / "tree", INTERFACE.replace("warning_once", "warning")))
    assert sites and not any(site.cached for site in sites)
    ws.sites_file.write_text(json.dumps([site.to_json() for site in sites]))
    with pytest.raises(BadRecord, match="no \\*_once site"):
        stage.read_sites(ws)


def test_a_link_that_went_missing_under_mutants_is_made_again(tmp_path: Path, ws: Workspace) -> None:
    tree = make_tree(tmp_path / "tree")
    stage.copy_packages(ws, {"vllm": tree / "vllm"})
    linked = ws.mutants / "vllm" / "logger.py"
    assert os.path.samefile(linked, ws.pristine("vllm") / "logger.py")
    linked.unlink()  # the guards would import a vllm without its logger: the site "unreached", run after run

    stage.copy_packages(ws, {"vllm": tree / "vllm"})

    assert os.path.samefile(linked, ws.pristine("vllm") / "logger.py")


def test_mutmuts_own_copy_of_a_site_file_is_kept(tmp_path: Path, ws: Workspace) -> None:
    tree = make_tree(tmp_path / "tree")
    stage.copy_packages(ws, {"vllm": tree / "vllm"})
    mutated = layout.mutated(ws, "vllm/platforms/interface.py")
    mutated.unlink()
    mutated.write_text("# mutmut's mutants\n")

    stage.copy_packages(ws, {"vllm": tree / "vllm"})

    assert mutated.read_text() == "# mutmut's mutants\n"


def test_a_file_name_that_is_not_utf8_is_staged_and_its_copy_reused(tmp_path: Path, ws: Workspace) -> None:
    tree = make_tree(tmp_path / "tree")
    odd = os.fsdecode(b"\xffodd.txt")  # a name a Linux file system allows and UTF-8 does not
    (tree / "vllm" / odd).write_bytes(b"x")

    assert stage.copy_packages(ws, {"vllm": tree / "vllm"}) == []
    assert stage.copy_packages(ws, {"vllm": tree / "vllm"}) == []  # recorded and matched: not copied again
    assert (ws.pristine("vllm") / odd).read_bytes() == b"x"


def test_the_listing_digest_covers_path_size_and_modification_time(tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "tree") / "vllm"
    expected = hashlib.sha256()
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            st = os.stat(path)
            expected.update(f"{os.path.relpath(path, folder)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    assert stage.listing_digest(folder) == expected.hexdigest()


def test_an_edit_in_place_that_keeps_the_size_changes_the_digest(tmp_path: Path) -> None:
    folder = make_tree(tmp_path / "tree") / "vllm"
    before = stage.listing_digest(folder)
    logger = folder / "logger.py"
    stat = logger.stat()
    logger.write_bytes(logger.read_bytes().replace(b"logging", b"LOGGING", 1))
    os.utime(logger, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1))
    assert logger.stat().st_size == stat.st_size and stage.listing_digest(folder) != before


def test_staging_copies_the_targets_files_so_a_workspace_never_reaches_them(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    ws = Workspace(tmp_path / "ws")
    stage.copy_packages(ws, {"vllm": tree / "vllm"})
    staged = ws.pristine("vllm") / "logger.py"
    assert not os.path.samefile(staged, tree / "vllm" / "logger.py")
    assert staged.stat().st_mtime_ns == (tree / "vllm" / "logger.py").stat().st_mtime_ns  # .pyc files stay valid


def test_a_header_only_folder_is_not_staged(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    (tree / "vllm" / "third_party" / "include").mkdir(parents=True)
    (tree / "vllm" / "third_party" / "include" / "kernel.h").write_text("/* C */\n")
    ws = Workspace(tmp_path / "ws")
    stage.copy_packages(ws, {"vllm": tree / "vllm"})
    assert not (ws.pristine("vllm") / "third_party").exists()


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


# --- the pristine copy and the run's files -----------------------------------------------------------------


@pytest.mark.parametrize("damage", ["edited", "never recorded"])
def test_a_copy_that_changed_or_was_never_recorded_is_discarded_and_made_again(
    tmp_path: Path, ws: Workspace, damage: str
) -> None:
    tree = make_tree(tmp_path / "tree")
    stage.copy_packages(ws, {"vllm": tree / "vllm"})
    if damage == "edited":
        (ws.pristine("vllm") / "logger.py").write_text("# not the target's\n")
    else:
        ws.staged_manifest.unlink()  # killed between the copy's rename and its record

    said = stage.copy_packages(ws, {"vllm": tree / "vllm"})

    assert said == [f"discarded {ws.pristine('vllm')} (an incomplete or changed copy); it is made again"]
    assert (ws.pristine("vllm") / "logger.py").read_text() == LOGGER_SOURCE
    assert os.path.samefile(ws.mutants / "vllm" / "logger.py", ws.pristine("vllm") / "logger.py")


def test_what_is_no_file_to_read_is_left_out_of_the_copy_and_the_fingerprint_with_a_note(
    tmp_path: Path, ws: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    """A FIFO was waited on for ever (copy2 opens it; the fingerprint and listing stat every file); a dangling
    symlink or a loop was exit 12 blaming the work directory, a traceback for the fingerprint."""
    tree = make_tree(tmp_path / "tree")
    odd = add_odd_files(tree)
    with no_longer_than(20):
        stage.fingerprint(source_tree(tree), {"vllm": tree / "vllm"})
        stage.copy_packages(ws, {"vllm": tree / "vllm"})

    copied = sorted(p.relative_to(ws.pristine("vllm")).as_posix() for p in ws.pristine("vllm").rglob("*"))
    assert copied == sorted([*COPIED, "folder.py", "folder.py/inside.txt"])  # a directory is copied as one
    noted = {record.getMessage() for record in caplog.records}
    skipped = {path: what for path, what in odd.items() if path.name != "folder.py"}  # staging copies it
    assert {f"skipped {path}: {what}, not a file to read" for path, what in skipped.items()} <= noted


def test_a_target_file_this_user_may_not_read_is_exit_5_naming_it_not_the_work_directory() -> None:
    """It was exit 12, 'cannot stage the target in <work dir>': the work directory was fine."""
    with shared_tree() as tree:
        secret = tree / "vllm" / "notes.txt"  # not even a Python file: staging copies every file
        secret.write_text("root's")
        secret.chmod(0o600)
        work = tree.parent / "work"
        work.mkdir()
        give_to_nobody(work)
        stage.copy_packages(Workspace(tree.parent / "warm-up"), {"vllm": tree / "vllm"})  # as root: it reads

        def stage_as_user() -> tuple[str, str]:
            try:
                stage.copy_packages(Workspace(work / "ws"), {"vllm": tree / "vllm"})
            except GuardError as err:
                return type(err).__name__, str(err)
            return "staged", ""

        kind, said = as_nobody(stage_as_user)
    assert kind == "SourceDoesNotParse", said
    assert said.startswith(f"{secret}: cannot be read (Permission denied)")


def test_prepare_leaves_the_site_files_to_mutmut_and_writes_the_runs_files(tmp_path: Path, ws: Workspace) -> None:
    tree = make_tree(tmp_path / "tree")
    sites = discover(tree)

    stage.prepare(ws, source_tree(tree), sites)

    site_file = sites[0].file
    assert not layout.mutated(ws, site_file).exists()  # mutmut writes its own copy: never through a link
    assert os.path.samefile(ws.mutants / "vllm" / "logger.py", ws.pristine("vllm") / "logger.py")
    assert json.loads(ws.packages_file.read_text()) == ["vllm"]
    assert sorted(p.name for p in ws.guard_tests.iterdir()) == sorted(stage.GUARD_TEST_FILES)
    assert f"only_mutate = \n    {site_file}\n" in ws.setup_cfg.read_text()
    assert stage.read_sites(ws) == sites


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
