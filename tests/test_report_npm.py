"""The pinned npm packages: `npm ci` from requirements/npm into a prefix, and the vendored copies of their files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from records_support import npm_prefix
from warnonce_guard.mutations.report import npm, viewer
from warnonce_guard.mutations.report.errors import NpmInstallFailed, ViewerMissing


def test_versions_are_pinned_exactly_in_manifest_and_lockfile() -> None:
    pins = npm.pinned()
    assert pins == {"mutation-testing-elements": "3.9.0", "mutation-testing-report-schema": "3.8.4"}
    lock = json.loads((npm.REQUIREMENTS / "package-lock.json").read_text(encoding="utf-8"))
    for name, version in pins.items():
        entry = lock["packages"][f"node_modules/{name}"]
        assert entry["version"] == version and entry["integrity"].startswith("sha512-")


def test_the_vendored_files_are_byte_for_byte_the_pinned_packages_files() -> None:
    prefix = npm_prefix()
    assert npm.is_installed(prefix)
    for name, (package, relative) in npm.VENDORED.items():
        assert (viewer.VENDOR / name).read_bytes() == npm.installed_file(prefix, relative).read_bytes(), name
        assert viewer.manifest()[name]["version"] == npm.pinned()[package]


def test_the_vendored_files_match_their_recorded_digests() -> None:
    assert viewer.find_viewer().name == "mutation-test-elements.js"
    assert viewer.find_schema().suffix == ".json"
    assert sorted(viewer.manifest()) == sorted(npm.VENDORED)


def test_install_is_a_no_op_when_the_pins_are_there(monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = npm_prefix()
    monkeypatch.setattr(npm.subprocess, "run", lambda *a, **k: pytest.fail("npm ran again"))
    assert npm.install(prefix) == prefix


def test_a_different_installed_version_is_not_accepted(tmp_path: Path) -> None:
    shutil.copytree(npm_prefix() / "node_modules", tmp_path / "node_modules")
    manifest = tmp_path / "node_modules" / "mutation-testing-elements" / "package.json"
    manifest.write_text(json.dumps({"name": "mutation-testing-elements", "version": "3.8.0"}), encoding="utf-8")
    assert not npm.is_installed(tmp_path)


def test_missing_npm_is_one_line_naming_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(npm.shutil, "which", lambda name: None)
    with pytest.raises(NpmInstallFailed, match="npm is not on PATH"):
        npm.install(tmp_path / "prefix")


def test_a_file_missing_from_the_prefix_names_the_install_command(tmp_path: Path) -> None:
    with pytest.raises(ViewerMissing, match=r"python -m warnonce_guard\.mutations\.report\.npm"):
        npm.installed_file(tmp_path, npm.SCHEMA_JSON)


def test_install_command_uses_the_lockfile() -> None:
    assert npm.install_command(Path("/x"))[:4] == ["npm", "ci", "--prefix", "/x"]
