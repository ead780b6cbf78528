"""The pre-commit hook, as a maintainer adds it: `pre-commit try-repo` on a leaking file, then on the fix."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import layout
from tests.toy import PLUGIN_LEAK

ROOT = layout.ROOT
FIXED = PLUGIN_LEAK.replace('%r", e)', '%s", repr(e))')

pytestmark = [
    pytest.mark.slow,
    pytest.mark.long,
    pytest.mark.skipif(shutil.which("git") is None, reason="pre-commit needs git"),
]


def test_the_hook_is_declared_for_python_files_and_runs_the_audit() -> None:
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert (hook["id"], hook["entry"], hook["language"], hook["types"]) == (
        "warnonce-audit",
        "warnonce-guard audit --force-exclude",
        "python",
        ["python"],
    )


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def try_repo(project: Path, file: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), **layout.QUICK_PIP)
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "warnonce-audit", "--files", file],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_try_repo_fails_on_a_leak_and_passes_on_its_fix(tmp_path: Path) -> None:
    project = tmp_path / "plugin"
    (project / "my_plugin").mkdir(parents=True)
    source = project / "my_plugin" / "platform.py"
    source.write_text(PLUGIN_LEAK)
    git("init", "-q", cwd=project)
    git("add", ".", cwd=project)

    leaking = try_repo(project, "my_plugin/platform.py", tmp_path / "pre-commit-home")
    assert leaking.returncode == 1, leaking.stdout + leaking.stderr
    assert "my_plugin/platform.py:10:66: WOG001 logger.warning_once(...) passes `e`" in leaking.stdout

    source.write_text(FIXED)
    git("add", ".", cwd=project)
    fixed = try_repo(project, "my_plugin/platform.py", tmp_path / "pre-commit-home")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "Passed" in fixed.stdout


def test_try_repo_leaves_a_file_the_settings_exclude_alone_as_ruffs_hook_does(tmp_path: Path) -> None:
    project = tmp_path / "plugin"
    (project / "vendored").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.warnonce-guard]\nextend-exclude = ["vendored"]\n')
    (project / "vendored" / "platform.py").write_text(PLUGIN_LEAK)  # pre-commit passes it: the hook must not check it
    git("init", "-q", cwd=project)
    git("add", ".", cwd=project)

    run = try_repo(project, "vendored/platform.py", tmp_path / "pre-commit-home")
    assert run.returncode == 0 and "Passed" in run.stdout, run.stdout + run.stderr
    assert "WOG001" not in run.stdout

    (project / "pyproject.toml").write_text("[tool.warnonce-guard]\n")  # the same file, no longer excluded: checked
    git("add", ".", cwd=project)
    assert try_repo(project, "vendored/platform.py", tmp_path / "pre-commit-home").returncode == 1
