"""Fault injection: every bad path and option of `mutate`, refused before any work with one line and its exit code.

The user's whole area (the current directory, holding the vLLM tree and whatever the case puts there)
is hashed before and after: a refused run creates, changes and removes nothing, not even a work
directory. Each case runs in-process (fast tier) and once more through the real command line (slow).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from warnonce_guard.cli.main import main
from warnonce_guard.common.errors import ExitCode
from warnonce_guard.common.files import Kind, mark

from tests.faults import (
    ROOT,
    CleanRun,
    as_nobody,
    cli_args,
    fill_leaving,
    give_to_nobody,
    hash_tree,
    one_line_error,
    read_verdicts,
    run,
    shared_tree,
    size_kb,
    small_disk,
    survivors,
)
from tests.toy import CLI, make_tree


@dataclass(frozen=True)
class Area:
    """The user's files: `home` is the current directory, `tree` the --vllm-src inside it."""

    home: Path
    tree: Path
    viewer: Path
    read_only: Path | None  # for the cases that need it: a directory on a read-only filesystem, with a report


def home_like(folder: Path) -> Path:
    """A directory shaped like a user's home."""
    for name, text in {".bashrc": "export PATH", ".ssh/id_ed25519": "secret", "Documents/cv.md": "me"}.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def users_dir(folder: Path, *names: str) -> Path:
    folder.mkdir()
    for name in names:
        (folder / name).mkdir()
        (folder / name / "keep.txt").write_text(f"{name}: precious")
    return folder


@dataclass(frozen=True)
class Case:
    """Options after `mutate --vllm-src TREE` (made by `setup`), the exit code and words of the one line."""

    setup: Callable[[Area], list[str]]
    code: ExitCode
    says: str
    cwd: Callable[[Area], Path] = lambda area: area.home


def with_viewer(area: Area, *options: str) -> list[str]:
    return [*options, "--viewer-js", str(area.viewer)]


def symlink(link: Path, to: Path) -> Path:
    link.symlink_to(to)
    return link


def _earlier_report(folder: Path) -> Path:
    folder.mkdir()
    (folder / "index.html").write_text("<html>")
    mark(folder, Kind.REPORT)
    return folder


CASES = {
    "out-is-an-existing-file": Case(
        lambda a: with_viewer(a, "--out", str(_file(a.home / "report.html"))), ExitCode.BAD_INPUT, "a file is there"
    ),
    "out-holds-the-users-keep.txt": Case(
        lambda a: with_viewer(a, "--out", str(users_dir(a.home / "mine", "sub"))),
        ExitCode.BAD_INPUT,
        "did not create",
    ),
    "out-is-the-vllm-src-root": Case(
        lambda a: with_viewer(a, "--out", str(a.tree)), ExitCode.BAD_INPUT, "is the target"
    ),
    "out-is-dot": Case(lambda a: with_viewer(a, "--out", "."), ExitCode.BAD_INPUT, "current directory"),
    "out-is-dot-in-an-empty-directory": Case(
        lambda a: with_viewer(a, "--out", "."),
        ExitCode.BAD_INPUT,
        "current directory",
        cwd=lambda a: users_dir(a.home / "empty"),
    ),
    "out-is-the-current-directory-inside-the-tree": Case(
        lambda a: with_viewer(a, "--out", ".", "--work-dir", str(a.home / "w")),
        ExitCode.BAD_INPUT,
        "current directory",
        cwd=lambda a: a.tree / "docs",
    ),
    "out-is-inside-the-package": Case(
        lambda a: with_viewer(a, "--out", str(a.tree / "vllm" / "report")), ExitCode.BAD_INPUT, "target package"
    ),
    "out-through-a-symlink-into-the-package": Case(
        lambda a: with_viewer(a, "--out", str(symlink(a.home / "link", a.tree / "vllm") / "report")),
        ExitCode.BAD_INPUT,
        "target package",
    ),
    "out-is-a-symlink-to-the-users-dir": Case(
        lambda a: with_viewer(a, "--out", str(symlink(a.home / "shortcut", users_dir(a.home / "mine", "sub")))),
        ExitCode.BAD_INPUT,
        "a file is there",
    ),
    "out-is-home-like": Case(
        lambda a: with_viewer(a, "--out", str(home_like(a.home / "fakehome"))), ExitCode.BAD_INPUT, "did not create"
    ),
    "out-is-the-work-dir": Case(
        lambda a: with_viewer(a, "--out", "w", "--work-dir", "w"),
        ExitCode.BAD_INPUT,
        "is the work directory (--work-dir)",
    ),
    "out-on-a-read-only-filesystem": Case(
        lambda a: with_viewer(a, "--out", str(a.read_only / "report")), ExitCode.BAD_INPUT, "not writable"
    ),
    "out-is-an-earlier-report-on-a-read-only-filesystem": Case(
        lambda a: with_viewer(a, "--out", str(a.read_only / "earlier")), ExitCode.BAD_INPUT, "not writable"
    ),
    "work-dir-holds-the-users-p1-p5": Case(
        lambda a: with_viewer(a, "--work-dir", str(users_dir(a.home / "work", "p1", "p2", "p3", "p4", "p5"))),
        ExitCode.BAD_INPUT,
        "did not create",
    ),
    "work-dir-is-home-like": Case(
        lambda a: with_viewer(a, "--work-dir", str(home_like(a.home / "fakehome"))),
        ExitCode.BAD_INPUT,
        "did not create",
    ),
    "work-dir-is-the-vllm-src-root": Case(
        lambda a: with_viewer(a, "--work-dir", str(a.tree)), ExitCode.BAD_INPUT, "is the target"
    ),
    "work-dir-is-inside-the-package": Case(
        lambda a: with_viewer(a, "--work-dir", str(a.tree / "vllm" / "w")), ExitCode.BAD_INPUT, "target package"
    ),
    "work-dir-through-a-symlink-into-the-package": Case(
        lambda a: with_viewer(a, "--work-dir", str(symlink(a.home / "link", a.tree / "vllm") / "w")),
        ExitCode.BAD_INPUT,
        "target package",
    ),
    "work-dir-is-an-existing-file": Case(
        lambda a: with_viewer(a, "--work-dir", str(_file(a.home / "notes.txt"))),
        ExitCode.BAD_INPUT,
        "a file is there",
    ),
    "work-dir-is-an-earlier-report": Case(
        lambda a: with_viewer(a, "--work-dir", str(_earlier_report(a.home / "old-report"))),
        ExitCode.BAD_INPUT,
        "did not create",
    ),
    "work-dir-on-a-read-only-filesystem": Case(
        lambda a: with_viewer(a, "--work-dir", str(a.read_only / "work")), ExitCode.BAD_INPUT, "not writable"
    ),
    "viewer-js-missing": Case(
        lambda a: ["--viewer-js", str(a.home / "missing.js")], ExitCode.BAD_INPUT, "no such file"
    ),
    "viewer-js-is-a-directory": Case(
        lambda a: ["--viewer-js", str(users_dir(a.home / "js"))], ExitCode.BAD_INPUT, "no such file"
    ),
    "viewer-js-is-not-utf8-text": Case(
        lambda a: ["--viewer-js", str(_file(a.home / "bundle.js", b"\x89PNG\r\n\x1a\n\x00\xff"))],
        ExitCode.BAD_INPUT,
        "not UTF-8 text",
    ),
    **{
        f"fail-under-{label}": Case(
            lambda a, value=value: with_viewer(a, "--fail-under", value), ExitCode.USAGE, "--fail-under"
        )
        for label, value in {"nan": "nan", "-1": "-1", "101": "101", "abc": "abc", "inf": "inf", "empty": ""}.items()
    },
    "vllm-src-missing": Case(
        lambda a: with_viewer(a, "--vllm-src", str(a.home / "nowhere")), ExitCode.BAD_INPUT, "no such directory"
    ),
    "vllm-src-is-not-a-vllm-tree": Case(
        lambda a: with_viewer(a, "--vllm-src", str(home_like(a.home / "fakehome"))), ExitCode.BAD_INPUT, "vLLM"
    ),
    "unknown-option": Case(lambda a: with_viewer(a, "--outdir", "r"), ExitCode.USAGE, "unrecognized arguments"),
    "abbreviated-option": Case(lambda a: with_viewer(a, "--work", "w"), ExitCode.USAGE, "unrecognized arguments"),
    # an unset variable in CI (`--out "$OUT"`): never the default in its place
    **{
        f"{option.removeprefix('--')}-is-{label}": Case(
            lambda a, option=option, value=value: with_viewer(a, option, value),
            ExitCode.USAGE,
            f"argument {option}: a{'n empty' if not value else ' blank'} value",
        )
        for option in ("--vllm-src", "--platform", "--out", "--work-dir")
        for label, value in {"empty": "", "blank": " "}.items()
    },
    # refused up front as a read-only parent is, not once the whole run is over and the report is to be swapped in
    **{
        f"{option}-is-an-{flagged}-{what}": Case(
            lambda a, option=option, letter=letter, make=make: with_viewer(
                a, f"--{option}", str(chattr(make(a.home / option), f"+{letter}"))
            ),
            ExitCode.BAD_INPUT,
            f"{option}: {flagged} (chattr +{letter}): no run can fill or replace it",
        )
        for option, what, make in (
            ("out", "empty-directory", users_dir),
            ("out", "earlier-report", _earlier_report),
            ("work-dir", "empty-directory", users_dir),
        )
        for flagged, letter in (("immutable", "i"), ("append-only", "a"))
    },
    "viewer-js-is-empty": Case(lambda a: ["--viewer-js", ""], ExitCode.USAGE, "argument --viewer-js: an empty value"),
}


def _file(path: Path, content: bytes = b"precious") -> Path:
    path.write_bytes(content)
    return path


CHATTR = shutil.which("chattr")


def chattr(folder: Path, flag: str) -> Path:
    """`chattr +i` or `+a` on `folder` (the `area` fixture takes the flags off again); the test is skipped where the
    filesystem or the user cannot set them."""
    if CHATTR is None or subprocess.run([CHATTR, flag, str(folder)], capture_output=True).returncode:
        pytest.skip(f"chattr {flag} is not possible here (it needs root and a filesystem with inode flags)")
    return folder


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A directory on a read-only filesystem (a read-only tmpfs for root, a 0555 directory otherwise)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    if os.geteuid() != 0:
        _earlier_report(folder / "earlier")
        for path in (folder / "earlier", folder):
            path.chmod(0o555)
        yield folder
        for path in (folder, folder / "earlier"):
            path.chmod(0o755)
        return
    mount = shutil.which("mount")
    if mount is None or subprocess.run([mount, "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)]).returncode:
        pytest.skip("root, and no tmpfs can be mounted here: no read-only filesystem to test on")
    try:
        _earlier_report(folder / "earlier")
        subprocess.run([mount, "-o", "remount,ro", str(folder)], check=True)
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.fixture
def area(name: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Area]:
    """The user's files for case `name`, with the current directory where the case wants it."""
    home = tmp_path / "home"
    tree = make_tree(home / "tree")
    (tree / "docs").mkdir()
    viewer = _file(home / "viewer.js", b"/* stand-in viewer */")
    read_only = request.getfixturevalue("read_only") if "read-only" in name else None
    made = Area(home, tree, viewer, read_only)
    monkeypatch.chdir(CASES[name].cwd(made))
    yield made
    if CHATTR is not None and ("immutable" in name or "append-only" in name):  # else pytest cannot remove them
        subprocess.run([CHATTR, "-R", "-i", "-a", str(home)], capture_output=True)


def refused(area: Area, case: Case, call: Callable[[list[str]], tuple[int, str]]) -> str:
    """Run the case; assert its exit code, its one line, and that the user's area is exactly as it was."""
    options = case.setup(area)
    mine = [area.home, *([area.read_only] if area.read_only else [])]
    before = hash_tree(*mine)
    code, stderr = call(["mutate", "--vllm-src", str(area.tree), *options])
    assert code == case.code, stderr
    assert case.says in one_line_error(stderr)
    assert hash_tree(*mine) == before  # nothing created, changed or removed
    return f"exit {code}: {stderr.strip()}"


@pytest.mark.parametrize("name", CASES)
def test_bad_input_is_refused_before_any_work(name: str, area: Area, capsys: pytest.CaptureFixture[str]) -> None:
    def in_process(argv: list[str]) -> tuple[int, str]:
        try:
            code = main(argv)
        except SystemExit as stop:  # argparse's errors
            code = int(stop.code or 0)
        return code, capsys.readouterr().err

    refused(area, CASES[name], in_process)


@pytest.mark.slow
@pytest.mark.parametrize("name", CASES)
def test_bad_input_is_refused_by_the_command_line(
    name: str, area: Area, record_property: Callable[[str, object], None]
) -> None:
    def command_line(argv: list[str]) -> tuple[int, str]:
        env = dict(os.environ, PYTHONPATH=str(ROOT))  # the current directory is the user's, not this checkout
        done = subprocess.run([*CLI, *argv], capture_output=True, text=True, env=env)
        # the session `mutate` starts before its parser reads the arguments (in the work root they name) was stopped
        # and reaped by the command, not left to find its parent gone once its own imports are done
        assert survivors(area.home.parent, within_s=0) == []
        return done.returncode, done.stderr

    record_property("outcome", refused(area, CASES[name], command_line))


@pytest.mark.slow
def test_an_earlier_work_dir_prunes_only_its_own_workspaces_and_keeps_the_users_dirs(
    untouched_user_tree: Path, small_viewer: Path, clean_run: CleanRun, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    subprocess.run(["cp", "-a", str(clean_run.work), str(work)], check=True)  # an earlier work directory
    users = [users_dir(work / f"p{i}", "sub") for i in range(1, 6)]  # put there by the user since
    old = []
    for i in range(4):  # four older runs' workspaces: the oldest two go (three are kept, this run's included)
        ws = work / f"old{i}"
        (ws / "vllm").mkdir(parents=True)
        mark(ws, Kind.WORKSPACE)
        os.utime(ws, (1000 + i, 1000 + i))
        old.append(ws)
    for path in users:
        os.utime(path, (1, 1))  # older than every workspace: age alone must not get them pruned
    before = hash_tree(*users)

    done = run(cli_args(untouched_user_tree, tmp_path / "report", work, small_viewer), cwd=tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert read_verdicts(tmp_path / "report") == clean_run.verdicts
    assert hash_tree(*users) == before
    assert [ws.exists() for ws in old] == [False, False, True, True]


@pytest.mark.slow
@pytest.mark.long
def test_a_work_directory_on_a_full_disk_is_one_line_and_exit_12_whatever_write_the_disk_refuses(
    untouched_user_tree: Path,
    small_viewer: Path,
    clean_run: CleanRun,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    """A real small tmpfs filled to leave from nothing to more than a run needs: with 88 KB free, a write that
    names no file was a traceback and exit 70. The mutmut session's own full disk is its part of the run (13)."""
    needs = size_kb(clean_run.work)
    outcomes = {}
    with small_disk(tmp_path / "disk", needs + 512) as disk:
        for free_kb in range(0, needs + 48, 8):
            fill_leaving(disk, free_kb)
            out = tmp_path / f"report-{free_kb}"
            done = run(cli_args(untouched_user_tree, out, disk / "work", small_viewer), cwd=tmp_path)
            outcomes[free_kb] = (done.returncode, done.stderr.strip())
            assert "Traceback" not in done.stderr and done.returncode != ExitCode.INTERNAL_ERROR, done.stderr
            if done.returncode == ExitCode.ENVIRONMENT:
                line = one_line_error(done.stderr)
                assert str(disk / "work") in line and "No space left on device" in line, line
                assert not out.exists()
    record_property("outcome", "; ".join(f"{kb} KB free: exit {code}" for kb, (code, _) in outcomes.items()))
    codes = [code for code, _ in outcomes.values()]
    assert codes[0] == ExitCode.ENVIRONMENT and codes[-1] == ExitCode.OK, outcomes  # not vacuous


# --- another user's files in the work directory (the run as the unprivileged user nobody) -------------------


def main_as_nobody(argv: list[str]) -> tuple[int, str]:
    """`main(argv)` in a forked child as the user nobody: its exit code and stderr."""

    def command() -> tuple[int, str]:
        import io
        import sys

        sys.stderr = io.StringIO()
        try:
            code = main(argv)
        except SystemExit as stop:
            code = int(stop.code or 0)
        return code, sys.stderr.getvalue()

    return as_nobody(command)


@pytest.mark.usefixtures("fake_session")
def test_a_work_directory_root_ran_in_first_is_one_line_and_exit_10_for_its_user() -> None:
    """The user's work directory, used once by root: its lock is root's, and filelock's PermissionError was 70."""
    with shared_tree() as tree:
        viewer = tree.parent / "viewer.js"
        viewer.write_text("/* stand-in */")
        mine = tree.parent / "mine"
        mine.mkdir()
        give_to_nobody(mine)
        work = mine / "work"
        work.mkdir()
        give_to_nobody(work)
        argv = ["mutate", "--vllm-src", str(tree), "--viewer-js", str(viewer), "--work-dir", str(work)]
        assert main([*argv, "--out", str(tree.parent / "roots-report")]) == ExitCode.OK  # root's run

        code, said = main_as_nobody([*argv, "--out", str(mine / "report")])
    assert code == ExitCode.BAD_INPUT, said
    assert f"--work-dir {work}: cannot take its lock .warnonce-guard.lock: Permission denied" in one_line_error(said)
    assert not (mine / "report").exists()


@pytest.mark.usefixtures("fake_session")
def test_old_workspaces_of_another_user_are_left_with_one_note_and_the_run_goes_on() -> None:
    """Root's workspaces in a user's work directory: pruning raised PermissionError, exit 70, on every run."""
    with shared_tree() as tree:
        viewer = tree.parent / "viewer.js"
        viewer.write_text("/* stand-in */")
        mine = tree.parent / "mine"
        mine.mkdir()
        give_to_nobody(mine)
        argv = ["mutate", "--vllm-src", str(tree), "--viewer-js", str(viewer), "--work-dir", str(mine / "work")]
        assert main([*argv, "--out", str(tree.parent / "roots-report")]) == ExitCode.OK  # as root: warm-up
        shutil.rmtree(mine / "work")
        assert main_as_nobody([*argv, "--out", str(mine / "report")])[0] == ExitCode.OK  # the user's first run
        roots = []
        for i in range(3):  # three older workspaces of root's: the oldest is pruned, then kept with a note
            ws = mine / "work" / f"roots-{i}"
            (ws / "vllm").mkdir(parents=True)
            (ws / "vllm" / "x.py").write_text("root's")
            mark(ws, Kind.WORKSPACE)
            os.utime(ws, (1000 + i, 1000 + i))
            roots.append(ws)

        for _ in range(2):  # on every run
            code, said = main_as_nobody([*argv, "--out", str(mine / "report")])
            assert code == ExitCode.OK, said
            assert said.splitlines() == [
                f"warnonce-guard: note: kept the old workspace {roots[0]}: Permission denied: {roots[0] / 'vllm'}; "
                "its owner may remove it"
            ]
        assert all(ws.exists() for ws in roots)


@pytest.mark.parametrize("work_dir", ["default", "absolute"])
def test_a_run_from_a_current_directory_that_is_gone_is_one_line_and_exit_3(tmp_path: Path, work_dir: str) -> None:
    """Every default path of `mutate` is relative: from a removed directory, Python's getcwd failed and the run was
    an internal error with a traceback (and the session started before the parser found no work root)."""
    gone = tmp_path / "gone"
    gone.mkdir()
    script = 'cd "$1" && rmdir "$1" && shift && exec "$@"'
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    options = ["--work-dir", str(tmp_path / "work")] if work_dir == "absolute" else []
    done = subprocess.run(
        ["sh", "-c", script, "sh", str(gone), *CLI, "mutate", *options],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == ExitCode.BAD_INPUT, done.stderr
    assert "the current directory is gone" in one_line_error(done.stderr)
    assert not gone.exists() and sorted(tmp_path.iterdir()) == []
    assert survivors(tmp_path, within_s=0) == []  # the session started before the parser too
