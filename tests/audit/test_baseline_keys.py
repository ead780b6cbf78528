"""Baselines that work in pre-commit: keys relative to the project root, so any working directory and any subset of
files gives the same verdict, stale entries counted only for the files checked, and version-1 baselines still read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from warnonce_guard.cli.main import main

LEAK = 'def {name}():\n    try:\n        pass\n    except Exception as e:\n        logger.warning_once("%s", e)\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git work tree with two packages, each with a leak, and a baseline accepting both, written from the root."""
    (tmp_path / ".git").mkdir()
    for package in ("one", "two"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "mod.py").write_text(LEAK.format(name=package))
    monkeypatch.chdir(tmp_path)
    assert main(["audit", ".", "--write-baseline", "accepted.json"]) == 0
    return tmp_path


def audited(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, int], str]:
    code = main(["audit", *argv, "--format", "json"])
    out, err = capsys.readouterr()
    return code, json.loads(out)["counts"] if out else {}, err


def test_keys_are_relative_to_the_project_root(project: Path) -> None:
    keys = [f["key"] for f in json.loads((project / "accepted.json").read_text())["findings"]]
    assert keys == ["one/mod.py::one::warning_once::e#0", "two/mod.py::two::warning_once::e#0"]


@pytest.mark.parametrize(
    ("cwd", "paths"),
    [
        (".", ["."]),
        ("one", ["."]),  # a subfolder
        ("one", [".."]),
        ("two", ["../one/mod.py"]),  # another folder, a file given by name
        (".", ["one/mod.py"]),  # pre-commit: one staged file
        ("/", ["{root}/two"]),  # an absolute path from elsewhere (the root is found from the path)
    ],
)
def test_any_directory_and_any_subset_of_files_give_the_same_verdict(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cwd: str, paths: list[str]
) -> None:
    monkeypatch.chdir(project / cwd)
    baseline = str(project / "accepted.json")
    code, counts, err = audited(capsys, *(p.format(root=project) for p in paths), "--baseline", baseline)
    assert (code, counts["new"], counts["stale"], err) == (0, 0, 0, "")


def test_stale_entries_are_a_count_for_the_files_checked_only(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "one" / "mod.py").write_text(LEAK.format(name="one").replace('"%s", e', '"%s", repr(e)'))
    code, counts, _ = audited(capsys, "two/mod.py", "--baseline", "accepted.json")
    assert (code, counts["stale"]) == (0, 0)  # one/mod.py was not checked: its entry is not judged
    code = main(["audit", "one/mod.py", "--baseline", "accepted.json"])
    out = capsys.readouterr().out
    assert code == 0 and out.count("\n") == 1 and "1 stale baseline entry (of the files checked)" in out
    (project / "two" / "mod.py").unlink()  # gone from a folder walked: its entry is stale
    assert audited(capsys, ".", "--baseline", "accepted.json")[1]["stale"] == 2


def test_a_version_1_baseline_is_read_from_the_current_directory_with_a_note(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    old = {"version": 1, "target": ".", "findings": [{"key": "mod.py::one::warning_once::e#0"}]}  # written in one/
    (project / "one" / "old.json").write_text(json.dumps(old))
    monkeypatch.chdir(project / "one")
    code, counts, err = audited(capsys, ".", "--baseline", "old.json")
    assert (code, counts["accepted"], counts["new"]) == (0, 1, 0)
    assert "version-1 baseline" in err and "rewrite it with --write-baseline old.json" in err
    assert err.count("\n") == 1
