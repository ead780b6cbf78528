"""Which files a run reads, as ruff picks them: excludes, .gitignore, files given by name, and every odd path reported
(an unreadable folder is a finding, a dangling link, a loop or a FIFO a note), never a traceback or a hang."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from warnonce_guard.audit.run import Request, run
from warnonce_guard.cli.main import main
from warnonce_guard.common.errors import NothingToCheck

LEAK = 'try:\n    pass\nexcept Exception as e:\n    logger.warning_once("%s", e)\n'


def write(root: Path, *names: str, text: str = LEAK) -> None:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def audited(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    """The exit code, the files reported (their WOG001 or WOG000 lines), and stderr."""
    code = main(["audit", *argv])
    out, err = capsys.readouterr()
    return code, [line.split(":")[0] for line in out.splitlines()[:-1]], err


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "pkg/a.py", "pkg/sub/b.py", ".venv/lib/v.py", "node_modules/n.py", "build/gen.py", "vendored/x.py")
    return tmp_path


def test_default_excludes_are_not_walked_but_a_file_given_by_name_is_read(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert audited(capsys, ".")[1] == ["pkg/a.py", "pkg/sub/b.py", "vendored/x.py"]
    assert audited(capsys, ".venv/lib/v.py")[1] == [".venv/lib/v.py"]


def test_force_exclude_applies_the_excludes_to_files_given_by_name(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert audited(capsys, "--force-exclude", ".venv/lib/v.py", "pkg/a.py")[1] == ["pkg/a.py"]
    code, files, err = audited(capsys, "--force-exclude", ".venv/lib/v.py")
    assert (code, files) == (0, []) and "excluded" in err  # pre-commit passing only excluded files: nothing to do


def test_configured_excludes_are_relative_to_the_configuration_and_the_command_lines_to_the_current_directory(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "pyproject.toml").write_text('[tool.warnonce-guard]\nextend-exclude = ["vendored", "pkg/sub/*"]\n')
    assert audited(capsys, ".")[1] == ["pkg/a.py"]
    monkeypatch.chdir(project / "pkg")
    assert audited(capsys, ".")[1] == ["a.py"]  # the configuration found from pkg/, its patterns still from the root
    assert audited(capsys, ".", "--extend-exclude", "a.py")[1] == []
    files = audited(capsys, "..", "--exclude", "sub")[1]
    outside = [Path(f).relative_to(project).as_posix() if f.startswith("/") else f for f in files]
    assert outside == [".venv/lib/v.py", "build/gen.py", "node_modules/n.py", "a.py"]  # the defaults replaced


def test_a_git_work_trees_ignored_files_are_not_walked(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / ".gitignore").write_text("vendored/\n*.py\n!pkg/**/*.py\n")
    assert audited(capsys, ".")[1] == ["pkg/a.py", "pkg/sub/b.py", "vendored/x.py"]  # not a git work tree: as ruff
    (project / ".git").mkdir()
    assert audited(capsys, ".")[1] == ["pkg/a.py", "pkg/sub/b.py"]
    (project / "pkg" / ".gitignore").write_text("sub/\n")
    assert audited(capsys, ".")[1] == ["pkg/a.py"]
    assert audited(capsys, "vendored/x.py")[1] == ["vendored/x.py"]  # a file given by name is read
    (project / "pyproject.toml").write_text("[tool.warnonce-guard]\nrespect-gitignore = false\n")
    assert audited(capsys, ".")[1] == ["pkg/a.py", "pkg/sub/b.py", "vendored/x.py"]


def test_odd_entries_are_skipped_with_a_note_and_a_folder_named_py_is_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "pkg/real.py", "pkg/folder.py/inner.py")
    (tmp_path / "pkg" / "dangling.py").symlink_to("nowhere.py")
    (tmp_path / "pkg" / "loop.py").symlink_to("loop.py")
    (tmp_path / "pkg" / "linked").symlink_to(tmp_path / "pkg" / "folder.py")
    (tmp_path / "pkg" / "alias.py").symlink_to(tmp_path / "pkg" / "real.py")  # the same file: read once
    os.mkfifo(tmp_path / "pkg" / "fifo.py")
    code, files, err = audited(capsys, "pkg")
    assert (code, files) == (1, ["pkg/folder.py/inner.py", "pkg/real.py"])
    notes = sorted(line.split(": ", 2)[2] for line in err.splitlines())
    assert notes == [
        "pkg/dangling.py: skipped, a dangling symbolic link",
        "pkg/fifo.py: skipped, not a regular file",
        "pkg/linked: a symbolic link to a folder, not followed",
        "pkg/loop.py: skipped, a symbolic link loop",
    ]
    code, _, err = audited(capsys, "pkg/fifo.py")  # given by name: never opened (it would hang)
    assert code == NothingToCheck.exit_code and "not a regular file" in err


def test_a_dangling_link_or_a_loop_given_by_name_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("loop.py").symlink_to("loop.py")
    Path("dangling.py").symlink_to("nowhere.py")
    for name, why in (("loop.py", "a symbolic link loop"), ("dangling.py", "a dangling symbolic link")):
        code, _, err = audited(capsys, name)
        assert code == 3 and err.count("\n") == 1 and f"{name}: {why}" in err


def test_an_unreadable_folder_or_file_is_a_finding_not_a_pass(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_scandir, real_read = os.scandir, Path.read_bytes

    def scandir(path: os.PathLike[str]) -> object:
        if Path(path).name == "sub":
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    def read_bytes(self: Path) -> bytes:
        if self.name == "a.py":
            raise PermissionError(13, "Permission denied")
        return real_read(self)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    code = main(["audit", "pkg"])
    out = capsys.readouterr().out
    assert code == 1
    assert "pkg/a.py:1:1: WOG000 not checked: cannot read it (Permission denied)" in out
    assert "pkg/sub:1:1: WOG000 not checked: cannot list it (Permission denied)" in out


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every folder")
def test_an_unreadable_folder_really_fails_the_run(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "pkg" / "sub").chmod(0)
    try:
        code, files, _ = audited(capsys, "pkg")
    finally:
        (project / "pkg" / "sub").chmod(0o755)
    assert code == 1 and files == ["pkg/a.py", "pkg/sub"]


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists(), reason="runs the audit as nobody")
def test_an_unreadable_folder_fails_the_run_of_another_user() -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as where:  # pytest's tmp_path is root's alone
        top = Path(where)
        write(top, "pkg/a.py", "pkg/sub/b.py")
        for folder in (top, top / "pkg"):
            folder.chmod(0o755)
        (top / "pkg" / "sub").chmod(0o700)  # root's own: nobody cannot list it
        command = [sys.executable, "-m", "warnonce_guard.cli", "audit", "pkg"]
        done = subprocess.run(
            ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command],
            cwd=top,
            capture_output=True,
            text=True,
            check=False,
        )
    assert done.returncode == 1, done.stderr
    assert "pkg/sub:1:1: WOG000 not checked: cannot list it (Permission denied)" in done.stdout


def test_nothing_to_check_is_a_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "docs/readme.txt")
    with pytest.raises(NothingToCheck):
        run(Request(("docs",)))
    assert main(["audit", "docs"]) == NothingToCheck.exit_code
