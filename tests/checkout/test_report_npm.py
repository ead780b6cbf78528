"""The pinned npm packages: `npm ci` from requirements/npm into a prefix, and the vendored copies of their files
(the later specs stand in for npm and its prefix, so they run without npm or a network)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from warnonce_guard.common.errors import ExitCode, NpmInstallFailed, ViewerMissing
from warnonce_guard.mutations.report import viewer

from tests.records_support import npm_prefix
from tools import npm


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
    for name, entry in viewer.manifest().items():
        assert hashlib.sha256((viewer.VENDOR / name).read_bytes()).hexdigest() == entry["sha256"], name
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
    with pytest.raises(ViewerMissing, match=r"python -m tools\.npm"):
        npm.installed_file(tmp_path, npm.SCHEMA_JSON)


def test_install_command_uses_the_lockfile() -> None:
    assert npm.install_command(Path("/x"))[:4] == ["npm", "ci", "--prefix", "/x"]


# --- without npm: hand-made prefixes and a stand-in for `npm ci` ------------------------------------------


def installed_pins(prefix: Path) -> Path:
    """A prefix as `npm ci` leaves it: each pinned package at its version, with the files vendor() copies."""
    for name, version in npm.pinned().items():
        package = prefix / "node_modules" / name
        package.mkdir(parents=True, exist_ok=True)
        (package / "package.json").write_text(json.dumps({"name": name, "version": version}), encoding="utf-8")
    for vendored, (_, relative) in npm.VENDORED.items():
        (prefix / relative).parent.mkdir(parents=True, exist_ok=True)
        (prefix / relative).write_text(f"/* {vendored} */\n", encoding="utf-8")
    return prefix


def npm_ci(returncode: int, stderr: str, leaves_pins: bool) -> Callable[..., subprocess.CompletedProcess[str]]:
    """A stand-in for `npm ci`: its exit code and stderr, and whether it leaves the pins installed."""

    def run(command: list[str], **options: object) -> subprocess.CompletedProcess[str]:
        if leaves_pins:
            installed_pins(Path(command[command.index("--prefix") + 1]))
        return subprocess.CompletedProcess(command, returncode, "", stderr)

    return run


@pytest.fixture
def npm_on_path(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setattr(npm.shutil, "which", lambda name: "/usr/bin/npm")
    return monkeypatch


def test_a_failing_npm_ci_is_one_line_naming_the_command_and_npms_last_words(
    tmp_path: Path, npm_on_path: pytest.MonkeyPatch
) -> None:
    npm_on_path.setattr(npm.subprocess, "run", npm_ci(1, "npm ERR! code E404\nnpm ERR! 404 Not Found\n", False))
    prefix = tmp_path / "prefix"
    last_words = r"failed \(exit 1\): npm ERR! 404 Not Found$"
    with pytest.raises(NpmInstallFailed, match=rf"`npm ci --prefix {prefix} .*` {last_words}"):
        npm.install(prefix)
    assert sorted(p.name for p in prefix.iterdir()) == ["package-lock.json", "package.json"]  # the pins it used


def test_an_npm_ci_that_leaves_the_pins_missing_is_a_failure_too(
    tmp_path: Path, npm_on_path: pytest.MonkeyPatch
) -> None:
    npm_on_path.setattr(npm.subprocess, "run", npm_ci(0, "", False))
    with pytest.raises(NpmInstallFailed, match=r"failed \(exit 0\): no output"):
        npm.install(tmp_path / "prefix")


def test_vendor_copies_the_pinned_files_and_records_their_versions_and_digests(
    tmp_path: Path, npm_on_path: pytest.MonkeyPatch
) -> None:
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    npm_on_path.setattr(viewer, "VENDOR", vendor)
    npm_on_path.setattr(viewer, "MANIFEST", vendor / "VENDOR.json")
    npm_on_path.setattr(npm.subprocess, "run", npm_ci(0, "", True))

    assert npm.vendor(tmp_path / "prefix") == vendor

    recorded = json.loads((vendor / "VENDOR.json").read_text(encoding="utf-8"))
    assert sorted(recorded) == sorted(npm.VENDORED)
    for name, (package, _) in npm.VENDORED.items():
        data = (vendor / name).read_bytes()
        assert data == f"/* {name} */\n".encode()
        assert recorded[name] == {
            "package": package, "version": npm.pinned()[package], "sha256": hashlib.sha256(data).hexdigest()
        }  # fmt: skip


def test_the_module_installs_into_the_prefix_it_is_given_and_prints_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    prefix = installed_pins(tmp_path / "prefix")
    monkeypatch.setattr(npm.subprocess, "run", lambda *a, **k: pytest.fail("npm ran with the pins there"))
    assert npm.main([str(prefix)]) == 0
    assert capsys.readouterr().out == f"{prefix.resolve()}\n"


def test_the_module_reports_a_failed_install_as_one_line_and_its_exit_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(npm.shutil, "which", lambda name: None)
    assert npm.main(["--vendor", str(tmp_path / "prefix")]) == ExitCode.ENVIRONMENT
    assert capsys.readouterr().err.startswith("warnonce-guard: error: npm is not on PATH; install Node.js and npm")
