"""Staging: what an earlier run left in the workspace is used only while it is whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from toy import INTERFACE, make_tree

from guards.sites import discover
from mutations import stage
from mutations.engine.state import BadState
from mutations.workspace import Workspace


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
