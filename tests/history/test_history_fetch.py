"""Fetching a release: verified against the index's sha256 before use, only `vllm/` extracted, whole or not at all."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from warnonce_guard.common.files import MARKER
from warnonce_guard.history.fetch import FetchFailed, fetch_release

from tests.history_support import http_server, release, sdist_bytes, served, tree_files, vllm_tree, wheel_bytes


@pytest.fixture
def files(tmp_path: Path) -> dict[str, bytes]:
    """A release's files: its vllm/ package (with a compiled module) and what else an sdist holds."""
    found = tree_files(vllm_tree(tmp_path / "src"))
    found["vllm/_C.abi3.so"] = b"\x7fELF compiled kernels"
    found["csrc/ops.cu"] = b"__global__ void k() {}"
    return found


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".*") if p.name != MARKER) if folder.exists() else []


def test_the_sdist_is_downloaded_verified_and_only_its_python_tree_extracted(tmp_path: Path, files) -> None:
    data = sdist_bytes(files)
    sdist = served(tmp_path / "index", "vllm-9.9.9.tar.gz", data)
    work = tmp_path / "work"
    fetched = fetch_release(release("9.9.9", sdist), work)
    assert fetched.dist == sdist and fetched.tree == work / "trees" / "9.9.9"
    extracted = tree_files(fetched.tree)
    assert "vllm/platforms/interface.py" in extracted and extracted["vllm/logger.py"] == files["vllm/logger.py"]
    assert "vllm/_C.abi3.so" not in extracted and not any(name.startswith("csrc/") for name in extracted)
    assert (work / "downloads" / "vllm-9.9.9.tar.gz").read_bytes() == data
    assert leftovers(work) == []


def test_a_download_that_does_not_match_the_index_hash_is_refused_and_removed(tmp_path: Path, files) -> None:
    sdist = served(tmp_path / "index", "vllm-9.9.9.tar.gz", sdist_bytes(files), sha256="0" * 64)
    work = tmp_path / "work"
    with pytest.raises(FetchFailed, match="sha256 mismatch: the index says 0000000000000000"):
        fetch_release(release("9.9.9", sdist), work)
    assert not (work / "downloads" / "vllm-9.9.9.tar.gz").exists()
    assert not (work / "trees" / "9.9.9").exists()
    assert leftovers(work) == []


def test_a_release_without_a_usable_sdist_falls_back_to_a_wheel_and_says_why(tmp_path: Path, files) -> None:
    bad = served(tmp_path / "index", "vllm-9.9.9.tar.gz", sdist_bytes(files), sha256="1" * 64)
    wheel = served(tmp_path / "index", "vllm-9.9.9-cp38-abi3-linux_x86_64.whl", wheel_bytes(files))
    fetched = fetch_release(release("9.9.9", wheel, bad), tmp_path / "work")
    assert fetched.dist == wheel
    assert len(fetched.failures) == 1 and fetched.failures[0].startswith("vllm-9.9.9.tar.gz: sha256 mismatch")
    assert "vllm/platforms/interface.py" in tree_files(fetched.tree)
    assert "vllm/_C.abi3.so" not in tree_files(fetched.tree)


def test_when_every_file_fails_each_is_named(tmp_path: Path) -> None:
    missing = served(tmp_path / "index", "vllm-9.9.9.tar.gz", b"x")
    os.unlink(tmp_path / "index" / "vllm-9.9.9.tar.gz")
    with pytest.raises(FetchFailed, match=r"vllm-9\.9\.9\.tar\.gz: download failed .*rerun to retry"):
        fetch_release(release("9.9.9", missing), tmp_path / "work")
    with pytest.raises(FetchFailed, match="no sdist or wheel on the index"):
        fetch_release(release("9.9.9"), tmp_path / "work")


def test_an_archive_without_a_vllm_package_is_not_a_release_tree(tmp_path: Path) -> None:
    sdist = served(tmp_path / "index", "vllm-9.9.9.tar.gz", sdist_bytes({"README.md": b"hi"}))
    with pytest.raises(FetchFailed, match="holds no vllm/ package"):
        fetch_release(release("9.9.9", sdist), tmp_path / "work")
    assert not (tmp_path / "work" / "trees" / "9.9.9").exists()
    assert leftovers(tmp_path / "work") == []


def test_a_member_that_climbs_out_of_the_tree_is_not_written(tmp_path: Path, files) -> None:
    hostile = dict(files)
    hostile["vllm/../../../escaped.py"] = b"print('out')"
    sdist = served(tmp_path / "index", "vllm-9.9.9.tar.gz", sdist_bytes(hostile))
    fetch_release(release("9.9.9", sdist), tmp_path / "work")
    assert not list(tmp_path.rglob("escaped.py"))


def test_a_fetched_tree_is_reused_without_downloading_again(tmp_path: Path, files) -> None:
    sdist = served(tmp_path / "index", "vllm-9.9.9.tar.gz", sdist_bytes(files))
    fetch_release(release("9.9.9", sdist), tmp_path / "work")
    (tmp_path / "index" / "vllm-9.9.9.tar.gz").unlink()  # the index is gone: a download would fail
    assert fetch_release(release("9.9.9", sdist), tmp_path / "work").dist == sdist


def test_a_kept_archive_that_no_longer_matches_is_fetched_again(tmp_path: Path, files) -> None:
    data = sdist_bytes(files)  # once: gzip stamps the time into its header
    sdist = served(tmp_path / "index", "vllm-9.9.9.tar.gz", data)
    work = tmp_path / "work"
    fetch_release(release("9.9.9", sdist), work)
    (work / "downloads" / "vllm-9.9.9.tar.gz").write_bytes(b"bit rot")
    (work / "trees" / "9.9.9" / MARKER).write_text('{"sha256": "other"}', encoding="utf-8")  # needs the archive
    fetch_release(release("9.9.9", sdist), work)
    assert (work / "downloads" / "vllm-9.9.9.tar.gz").read_bytes() == data  # downloaded again
    assert leftovers(work) == []


def test_a_tree_this_tool_did_not_make_is_never_replaced(tmp_path: Path, files) -> None:
    sdist = served(tmp_path / "index", "vllm-9.9.9.tar.gz", sdist_bytes(files))
    theirs = vllm_tree(tmp_path / "work" / "trees" / "9.9.9", call=None)  # no marker: someone else's
    before = tree_files(theirs)
    with pytest.raises(FetchFailed, match="exists and was not made by warnonce-guard history"):
        fetch_release(release("9.9.9", sdist), tmp_path / "work")
    assert tree_files(theirs) == before
    assert leftovers(tmp_path / "work") == []


def test_a_download_cut_short_or_a_url_that_does_not_parse_is_a_failed_fetch(tmp_path: Path, files) -> None:
    data = sdist_bytes(files)
    sdist = served(tmp_path / "index", "vllm-9.9.9.tar.gz", data)
    with (
        http_server(data, cut_short=True) as cut_short,
        pytest.raises(FetchFailed, match=r"download failed \(IncompleteRead"),
    ):
        fetch_release(release("9.9.9", dataclasses.replace(sdist, url=cut_short.url)), tmp_path / "work")
    bad = dataclasses.replace(sdist, url="http://127.0.0.1:port/vllm-9.9.9.tar.gz")
    with pytest.raises(FetchFailed, match="download failed"):
        fetch_release(release("9.9.9", bad), tmp_path / "work")
    assert leftovers(tmp_path / "work") == []


def test_a_kept_tree_that_no_longer_holds_what_its_archive_holds_is_extracted_again(tmp_path: Path, files) -> None:
    sdist = served(tmp_path / "index", "vllm-9.9.9.tar.gz", sdist_bytes(files))
    work = tmp_path / "work"
    tree = fetch_release(release("9.9.9", sdist), work).tree
    pristine = tree_files(tree)
    (tree / "vllm" / "__pycache__").mkdir()
    (tree / "vllm" / "__pycache__" / "logger.cpython-311.pyc").write_bytes(b"bytecode")  # not the release's
    assert fetch_release(release("9.9.9", sdist), work).tree == tree
    assert (tree / "vllm" / "__pycache__").is_dir()  # still the kept tree
    edits = (
        lambda: (tree / "vllm" / "platforms" / "interface.py").write_text("# edited by hand\n", encoding="utf-8"),
        lambda: (tree / "vllm" / "logger.py").unlink(),
        lambda: (tree / "vllm" / "extra.py").write_text("x = 1\n", encoding="utf-8"),
    )
    (tmp_path / "index" / "vllm-9.9.9.tar.gz").unlink()  # the kept archive still matches: no download, none could
    for edit in edits:
        edit()
        again = fetch_release(release("9.9.9", sdist), work)
        assert {k: v for k, v in tree_files(again.tree).items() if "__pycache__" not in k} == pristine
    assert leftovers(work) == []
