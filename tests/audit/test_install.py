"""README's install and pre-commit instructions, run as written: each command in a fresh venv, in a clone of this
checkout (the one placeholder, `/path/to/warnonce-guard`, is that clone). No release or tag of warnonce-guard
exists, so none of them may need one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from warnonce_guard.common.errors import ExitCode

from tests import layout
from tests.toy import PLUGIN_LEAK

README = (layout.ROOT / "README.md").read_text(encoding="utf-8")
PLACEHOLDER = "/path/to/warnonce-guard"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.long,
    pytest.mark.skipif(shutil.which("git") is None, reason="a checkout is a git clone"),
]


def section(start: str, end: str) -> str:
    return README[README.index(start) : README.index(end, README.index(start))]


def shown_commands(text: str) -> list[str]:
    """The commands of a README passage: its lines indented by four spaces, without their trailing comment."""
    return [re.sub(r"\s+#\s.*$", "", line[4:]) for line in text.splitlines() if line.startswith("    ") and line[4:]]


INSTALL = shown_commands(section("## Installing it elsewhere", "Everything installs under one name"))
PRE_COMMIT = section("### pre-commit", "## Installing it elsewhere")
HOOK_YAML = PRE_COMMIT.split("```yaml\n", 1)[1].split("```", 1)[0]
(TRY_REPO,) = [c for c in shown_commands(PRE_COMMIT.split("```yaml", 1)[0]) if c.startswith("pre-commit ")]


def test_the_readme_shows_the_commands_this_module_runs() -> None:
    assert [c.split()[:4] for c in INSTALL] == [
        ["python3", "-m", "pip", "install"],
        ["python3", "-m", "pip", "install"],
        ["python3", "-m", "pip", "install"],
        ["python3", "-m", "pip", "install"],
        ["python3", "-m", "pip", "install"],
    ]
    assert PLACEHOLDER in TRY_REPO and PLACEHOLDER in HOOK_YAML  # no release: tests/checkout/test_ci_files.py


def shell(command: str, cwd: Path, bin_dir: Path | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run one command line as a user would, with `bin_dir` (a venv's) first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PIP_REQUIRE_VIRTUALENV")}
    env.update(layout.QUICK_PIP)
    path = [str(bin_dir)] if bin_dir else []
    env["PATH"] = os.pathsep.join([*path, str(Path(sys.executable).parent), env.get("PATH", "")])
    done = subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        pytest.fail(f"`{command}` exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clone of this checkout's last commit: what a user has after `git clone`."""
    clone = tmp_path_factory.mktemp("checkout") / "warnonce-guard"
    subprocess.run(["git", "clone", "-q", str(layout.ROOT), str(clone)], check=True, capture_output=True)
    return clone


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A plugin checkout (a git repository) with one leaking call."""
    root = tmp_path / "plugin"
    (root / "my_plugin").mkdir(parents=True)
    (root / "my_plugin" / "platform.py").write_text(PLUGIN_LEAK)
    for args in (["init", "-q"], ["add", "."]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return root


def audits(bin_dir: Path, project: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return shell(" ".join(["warnonce-guard", "audit", "my_plugin", *extra]), project, bin_dir, check=False)


@pytest.mark.parametrize("line", [0, 1, 2], ids=["checkout", "checkout-with-extra", "git-file"])
def test_each_install_line_works_as_written(checkout: Path, project: Path, tmp_path: Path, line: int) -> None:
    bin_dir = layout.fresh_venv(tmp_path / "venv")
    shell(INSTALL[line], checkout, bin_dir)

    found = audits(bin_dir, project)
    assert found.returncode == ExitCode.CHECK_FAILED and " WOG001 " in found.stdout
    diff = audits(bin_dir, project, "--diff")
    if "[mutation]" in INSTALL[line]:
        assert diff.returncode == ExitCode.CHECK_FAILED and "+        logger.warning_once(" in diff.stdout
        return
    assert diff.returncode == ExitCode.ENVIRONMENT
    # the line the command says to run works too; the other is for a checkout of warnonce-guard
    hint, in_a_checkout = re.findall(r"pip install '[^']+'", diff.stderr)
    assert hint.startswith("pip install 'libcst") and in_a_checkout == "pip install '.[mutation]'"
    shell(hint, project, bin_dir)
    assert audits(bin_dir, project, "--diff").returncode == ExitCode.CHECK_FAILED


def test_the_wheel_lines_work_as_written(checkout: Path, project: Path, tmp_path: Path) -> None:
    bin_dir = layout.fresh_venv(tmp_path / "venv")
    for command in INSTALL[3:]:
        shell(command, checkout, bin_dir)
    assert audits(bin_dir, project, "--fix").returncode == ExitCode.OK
    assert "repr(e)" in (project / "my_plugin" / "platform.py").read_text()


def test_the_pre_commit_lines_work_as_written(
    checkout: Path, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRE_COMMIT_HOME", str(tmp_path / "pre-commit-home"))
    tried = shell(TRY_REPO.replace(PLACEHOLDER, str(checkout)), project, check=False)
    assert tried.returncode == 1 and "my_plugin/platform.py:10:66: WOG001" in tried.stdout, tried.stdout

    config = "repos:\n" + HOOK_YAML.replace(PLACEHOLDER, str(checkout))
    (project / ".pre-commit-config.yaml").write_text(config)
    subprocess.run(["git", "add", "."], cwd=project, check=True)
    hooked = shell("pre-commit run --files my_plugin/platform.py", project, check=False)
    assert hooked.returncode == 1 and "my_plugin/platform.py:10:66: WOG001" in hooked.stdout, hooked.stdout
