"""Staging: what an earlier run left in the workspace is used only while it is whole."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from toy import INTERFACE, make_tree
from warnonce_guard.guards.sites import discover
from warnonce_guard.mutations import stage
from warnonce_guard.mutations.engine import layout
from warnonce_guard.mutations.engine.state import BadState
from warnonce_guard.mutations.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    ws = Workspace(tmp_path / "ws")
    ws.dir.mkdir()
    return ws


def test_the_sites_an_earlier_run_recorded_are_read_back(tmp_path: Path, ws: Workspace) -> None:
    sites = discover(make_tree(tmp_path / "tree"))
    ws.sites_file.write_text(json.dumps([site.to_json() for site in sites]))
    assert stage.read_sites(ws) == sites


@pytest.mark.parametrize("text", ["[]", "{}", '{"a": 1}', "null", '"sites"'])
def test_a_sites_file_without_a_site_to_mutate_is_not_trusted(ws: Workspace, text: str) -> None:
    ws.sites_file.write_text(text)  # a run never writes one: it stops first with "nothing to check"
    with pytest.raises(BadState):
        stage.read_sites(ws)


def test_a_sites_file_of_uncached_sites_only_is_not_trusted(tmp_path: Path, ws: Workspace) -> None:
    sites = discover(make_tree(tmp_path / "tree", INTERFACE.replace("warning_once", "warning")))
    assert sites and not any(site.cached for site in sites)
    ws.sites_file.write_text(json.dumps([site.to_json() for site in sites]))
    with pytest.raises(BadState, match="no \\*_once site"):
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
