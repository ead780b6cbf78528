"""Issue 16's test project: settings in pyproject.toml, a .venv, an excluded folder, a git-ignored file, a file that
does not parse and a `# noqa: WOG001` line. The audit reads the files ruff would (`ruff check --show-files`), reports
the same findings from the root and from a subfolder, with and without a baseline, `--exit-zero` exits 0, and `--fix`
fixes what it reports there and nothing else, leaving only the file that does not parse."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from warnonce_guard.audit.config import find
from warnonce_guard.audit.paths import python_files
from warnonce_guard.audit.run import Request, walk_for
from warnonce_guard.cli.main import main

RUFF = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
LEAK = 'def {name}():\n    try:\n        pass\n    except Exception as e:\n        logger.warning_once("%s", e){noqa}\n'
SETTINGS = """\
[tool.warnonce-guard]
extend-exclude = ["generated", "pkg/legacy_*.py"]
extend-select = ["WOG1"]

[tool.ruff]
extend-exclude = ["generated", "pkg/legacy_*.py"]
"""
FILES = {
    "pyproject.toml": SETTINGS,
    ".gitignore": "scratch.py\n",
    "scratch.py": LEAK.format(name="scratch", noqa=""),  # ignored by git
    ".venv/lib/python3.11/site-packages/dep/mod.py": LEAK.format(name="dep", noqa=""),  # a default exclude
    "generated/out.py": LEAK.format(name="generated", noqa=""),  # excluded by the settings
    "pkg/__init__.py": "",
    "pkg/legacy_io.py": LEAK.format(name="legacy", noqa=""),  # excluded by a glob
    "pkg/leak.py": LEAK.format(name="leak", noqa=""),
    "pkg/reviewed.py": LEAK.format(name="reviewed", noqa="  # noqa: WOG001"),
    "pkg/sub/broken.py": 'logger.info_once("%s", (x\n',
    "tools/run.py": LEAK.format(name="tool", noqa=""),
}
FINDINGS = [("WOG001", "pkg/leak.py", 5), ("WOG000", "pkg/sub/broken.py", 1), ("WOG001", "tools/run.py", 5)]

pytestmark = [
    pytest.mark.skipif(RUFF is None, reason="needs ruff"),
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    monkeypatch.setenv("HOME", str(tmp_path))  # no global gitignore, for ruff and git alike
    monkeypatch.chdir(root)
    return root


def ruff_files(cwd: Path, root: Path, *paths: str) -> list[str]:
    """The Python files `ruff check --show-files` would check, relative to the project root."""
    listed = subprocess.run(
        [str(RUFF), "check", "--no-cache", "--show-files", *paths],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "HOME": str(root.parent)},
    ).stdout.split()
    return sorted(Path(p).relative_to(root).as_posix() for p in listed if p.endswith(".py"))


def audit_files(cwd: Path, *paths: str) -> list[str]:
    """The files the audit reads for `paths` run in `cwd`, keyed relative to the project root."""
    config = find(list(paths), cwd)
    return [key for _, key in python_files(map(Path, paths), walk_for(Request(paths), config, cwd)).files]


def findings(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[tuple[str, str, int]]]:
    code = main(["audit", *argv, "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    shown = {"WOG000", "WOG001", "WOG100", "WOG101"}
    return code, [(f["code"], f["file"], f["line"]) for f in document["findings"] if f["code"] in shown]


def test_the_audit_reads_what_ruff_would(project: Path) -> None:
    assert audit_files(project, ".") == ruff_files(project, project, ".")
    assert audit_files(project / "pkg", ".") == ruff_files(project / "pkg", project, ".")
    assert audit_files(project / "pkg", "..") == ruff_files(project / "pkg", project, "..")
    assert audit_files(project, ".") == [
        "pkg/__init__.py", "pkg/leak.py", "pkg/reviewed.py", "pkg/sub/broken.py", "tools/run.py"
    ]  # fmt: skip


def test_the_same_findings_from_the_root_and_from_a_subfolder(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert findings(capsys, ".") == (1, FINDINGS)
    monkeypatch.chdir(project / "pkg")
    assert findings(capsys, "..") == (1, FINDINGS)
    assert findings(capsys, ".") == (1, [f for f in FINDINGS if f[1].startswith("pkg/")])
    code = main(["audit", "."])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1 and [line.split(" ")[:2] for line in lines[:-1]] == [
        ["leak.py:5:35:", "WOG001"],  # shown relative to the current directory
        ["sub/broken.py:1:24:", "WOG000"],
    ]


def test_with_a_baseline_from_anywhere_and_exit_zero(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", ".", "--write-baseline", "accepted.json"]) == 0
    capsys.readouterr()
    assert main(["audit", ".", "--baseline", "accepted.json"]) == 0
    capsys.readouterr()
    monkeypatch.chdir(project / "pkg")
    for paths in ([".."], ["."], ["leak.py"], [str(project / "tools" / "run.py")]):
        code = main(["audit", *paths, "--baseline", "../accepted.json"])
        out = capsys.readouterr().out
        assert (code, out.count("\n")) == (0, 1) and "0 stale baseline entries" in out, (paths, out)
    monkeypatch.chdir(project)
    (project / "tools" / "more.py").write_text(LEAK.format(name="more", noqa=""))
    assert findings(capsys, ".", "--baseline", "accepted.json")[0] == 1
    code, found = findings(capsys, ".", "--exit-zero")
    assert code == 0 and ("WOG001", "tools/more.py", 5) in found


def test_fix_leaves_only_what_it_cannot_fix_and_nothing_outside_the_selection_changed(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("libcst")
    before = {name: (project / name).read_text() for name in FILES}
    monkeypatch.chdir(project / "pkg")
    assert main(["audit", "..", "--fix"]) == 1  # the file that does not parse is left: no fix can make it Python
    assert "fixed 2 finding(s) in 2 file(s)" in capsys.readouterr().err
    monkeypatch.chdir(project)
    assert findings(capsys, ".") == (1, [("WOG000", "pkg/sub/broken.py", 1)])
    changed = sorted(name for name, text in before.items() if (project / name).read_text() != text)
    assert changed == ["pkg/leak.py", "tools/run.py"]
    for name in changed:
        fixed = (project / name).read_text()
        assert 'logger.warning_once("%s", str(e))' in fixed
        compile(fixed, name, "exec")
    assert main(["audit", ".", "--diff"]) == 0 and capsys.readouterr().out == ""  # nothing more to fix
