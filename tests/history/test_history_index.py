"""The package index: releases, dates, files and hashes from a saved PEP 691 page; which ones a sweep checks."""

from __future__ import annotations

import json

import pytest
from warnonce_guard.common.errors import IndexUnavailable, NoRelease, UsageError
from warnonce_guard.history.index import ACCEPT, fetch_index, parse_index, select

from tests import layout
from tests.history_support import http_server

PAGE = layout.DATA / "vllm-simple-index.json"  # saved from pypi.org/simple/vllm/, trimmed
URL = "https://pypi.org/simple/vllm/"


def page() -> dict:
    return json.loads(PAGE.read_text(encoding="utf-8"))


def releases(data: dict | None = None):
    return {r.version: r for r in parse_index(data or page(), URL)}


def test_every_release_on_the_page_is_listed_oldest_first_with_its_upload_date() -> None:
    listed = parse_index(page(), URL)
    assert [r.version for r in listed] == ["0.2.1", "0.11.0", "0.11.1", "0.15.0", "0.27.0", "0.29.0", "0.30.0"]
    assert listed[-2].date == "2026-09-09"


def test_the_sdist_is_tried_first_and_its_index_hash_is_kept() -> None:
    r = releases()["0.29.0"]
    first = r.candidates()[0]
    assert (first.kind, first.filename) == ("sdist", "vllm-0.29.0.tar.gz")
    assert len(first.sha256) == 64 and first.url.startswith("https://files.pythonhosted.org/")
    assert [d.kind for d in r.candidates()] == ["sdist", "wheel", "wheel"]


def test_a_release_without_an_sdist_falls_back_to_its_smallest_wheel() -> None:
    candidates = releases()["0.15.0"].candidates()
    assert {d.kind for d in candidates} == {"wheel"}
    assert candidates[0].size == min(d.size for d in candidates)


def test_a_release_whose_files_are_all_yanked_is_kept_and_marked_with_the_reason() -> None:
    listed = releases()
    assert listed["0.2.1"].yanked == "A bug in tensor parallelism support."
    assert listed["0.29.0"].yanked is None


def test_relative_file_urls_are_resolved_against_the_page() -> None:
    data = page()
    data["files"] = [dict(f, url=f"../../packages/{f['filename']}") for f in data["files"]]
    dist = parse_index(data, URL)[-1].candidates()[0]
    assert dist.url == "https://pypi.org/packages/vllm-0.30.0.tar.gz"


def test_files_of_other_projects_or_without_a_sha256_are_not_releases() -> None:
    data = page()
    data["versions"] = []
    data["files"] = [
        {"filename": "vllm_extra-1.0.tar.gz", "hashes": {"sha256": "ab" * 32}, "url": "x"},
        {"filename": "vllm-1.0.tar.gz", "hashes": {}, "url": "y"},
    ]
    assert parse_index(data, URL) == []


def test_a_page_that_is_not_pep_691_is_refused() -> None:
    with pytest.raises(IndexUnavailable, match="not a PEP 691"):
        parse_index({"releases": {}}, URL)


def test_a_range_is_inclusive_and_newest_first() -> None:
    chosen = select(parse_index(page(), URL), "0.11.1", "0.29.0").releases
    assert [r.version for r in chosen] == ["0.29.0", "0.27.0", "0.15.0", "0.11.1"]


def test_only_picks_exactly_the_named_releases_newest_first() -> None:
    chosen = select(parse_index(page(), URL), only=["0.27.0", "0.30.0"]).releases
    assert [r.version for r in chosen] == ["0.30.0", "0.27.0"]


def test_a_release_not_on_the_index_is_named() -> None:
    with pytest.raises(NoRelease, match=r"--only: 0\.28\.0 not on the index"):
        select(parse_index(page(), URL), only=["0.27.0", "0.28.0"])


def test_an_empty_range_is_an_error_not_an_empty_table() -> None:
    with pytest.raises(NoRelease, match=r"no release on the index from 0\.31\.0"):
        select(parse_index(page(), URL), "0.31.0")


def test_a_malformed_version_option_is_named() -> None:
    with pytest.raises(UsageError, match="--from latest: not a version"):
        select(parse_index(page(), URL), "latest")


def test_pre_releases_are_left_out_of_a_range_and_said_so_unless_asked_for() -> None:
    data = page()
    rc = dict(data["files"][-1], filename="vllm-0.31.0rc1.tar.gz")
    data["files"].append(rc)
    listed = parse_index(data, URL)
    default = select(listed, "0.30.0")
    assert [r.version for r in default.releases] == ["0.30.0"]
    assert default.prereleases_left_out == ("0.31.0rc1",)
    assert [r.version for r in select(listed, "0.30.0", pre=True).releases] == ["0.31.0rc1", "0.30.0"]
    assert [r.version for r in select(listed, only=["0.31.0rc1"]).releases] == ["0.31.0rc1"]


@pytest.mark.parametrize("data", [[], "page", 1, None])
def test_a_page_that_is_not_an_object_is_refused(data: object) -> None:
    with pytest.raises(IndexUnavailable, match="not a PEP 691"):
        parse_index(data, URL)  # type: ignore[arg-type]


def test_entries_the_index_gets_wrong_are_not_releases_and_the_rest_are_kept() -> None:
    data = page()
    good = data["files"][-1]  # vllm-0.30.0.tar.gz
    odd = [
        "vllm-0.31.0.tar.gz",  # not an object
        dict(good, filename="vllm-0.31.0.tar.gz", hashes=["sha256", "ab" * 32]),
        dict(good, filename="vllm-0.31.0.tar.gz", hashes=None),
        dict(good, filename="vllm-0.31.0.tar.gz", hashes={"sha256": 12345}),
        dict(good, filename="vllm-0.31.0.tar.gz", hashes={"sha256": "not hex"}),
        {k: v for k, v in dict(good, filename="vllm-0.31.0.tar.gz").items() if k != "url"},
        dict(good, filename="vllm-0.31.0.tar.gz", url=None),
        dict(good, filename="vllm-0.31.0.tar.gz", url="http://[::1/x.tar.gz"),
        dict(good, filename=123),
    ]
    data["files"] = [*data["files"], *odd, dict(good, filename="vllm-0.32.0.tar.gz", size="big", **{"upload-time": 5})]
    listed = releases(data)
    assert "0.31.0" not in listed
    assert listed["0.30.0"].files == releases()["0.30.0"].files
    (odd_size,) = listed["0.32.0"].files
    assert (odd_size.size, odd_size.uploaded) == (0, "")


def test_only_on_an_index_without_releases_is_no_release() -> None:
    with pytest.raises(NoRelease, match=r"--only: 0\.29\.0 not on the index; it lists no release"):
        select([], only=["0.29.0"])


def test_an_answer_that_is_not_json_or_is_cut_short_is_index_unavailable() -> None:
    for body, cut_short, said in (
        (b"<html>hi</html>", False, "not a PEP 691 JSON page"),
        (b"{}", True, "IncompleteRead"),
    ):
        with http_server(body, ACCEPT, cut_short) as served, pytest.raises(IndexUnavailable, match=said):
            fetch_index(served.url)
