"""The command line: bad input is one line on stderr naming the problem and the fix, and a non-zero exit."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest
from warnonce_guard.common.errors import (
    ExitCode,
    NotAVllmTree,
    NothingToCheck,
    SourceDoesNotParse,
    TargetNotFound,
    exit_code_rows,
)

from tests import layout
from tests.faults import processes_mentioning
from tests.toy import (
    CHECKOUT_RUNS,
    CHECKOUT_SETTINGS,
    CLI,
    INTERFACE,
    add_odd_files,
    as_checkout,
    guards_on_checkout,
    make_tree,
)

pytestmark = pytest.mark.slow  # runs the command line in subprocesses

ROOT = layout.ROOT


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd)


def one_line_error(run: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    assert run.returncode == code, run.stdout + run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warnonce-guard: error: "), run.stderr
    for word in words:
        assert word in lines[0]


@pytest.mark.parametrize("command", ["sites", "mutate"])
def test_a_missing_source_tree_is_named(command: str, tmp_path: Path) -> None:
    one_line_error(cli(command, "--vllm-src", str(tmp_path / "nope")), TargetNotFound.exit_code, "no such directory")


def test_a_directory_that_is_not_a_vllm_tree_is_named(tmp_path: Path) -> None:
    one_line_error(cli("sites", "--vllm-src", str(tmp_path)), NotAVllmTree.exit_code, "not a vLLM tree")


NO_KERNEL = INTERFACE.replace("import vllm._C", "import vllm.helpers")  # a guarded import, of no kernel module
PLAIN = INTERFACE.replace("warning_once", "warning")  # a guarded kernel import whose handler logs uncached


@pytest.mark.parametrize("extra", [(), ("--work-dir", "w", "--out", "r")], ids=["sites", "mutate"])
def test_a_tree_without_sites_is_a_failure_not_a_pass(extra: tuple[str, ...], tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree", NO_KERNEL)
    command = "mutate" if extra else "sites"
    run = cli(command, "--vllm-src", str(tree), *extra, cwd=tmp_path)
    one_line_error(run, NothingToCheck.exit_code, "no guarded kernel import")
    assert not (tmp_path / "r").exists()  # no partial report


def test_a_site_whose_handler_logs_uncached_is_listed_and_guarded_but_gives_no_mutant(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree", PLAIN)
    listed = cli("sites", "--vllm-src", str(tree), "--json")
    assert '"cached": false' in listed.stdout and listed.returncode == 0, listed.stderr
    assert cli("guards", "--vllm-src", str(tree), "-q").returncode == 0
    run = cli("mutate", "--vllm-src", str(tree), "--work-dir", "w", "--out", "r", cwd=tmp_path)
    one_line_error(run, NothingToCheck.exit_code, "no *_once call recognised at a guarded kernel import")
    assert not (tmp_path / "r").exists()


def test_a_file_that_does_not_parse_is_named_with_its_line(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree", INTERFACE + "\ndef broken(:\n    pass\n")
    line = len(INTERFACE.splitlines()) + 2  # after the source and one blank line
    one_line_error(cli("sites", "--vllm-src", str(tree)), SourceDoesNotParse.exit_code, f"interface.py:{line}:")


def test_guards_on_a_tree_without_sites_stop_before_pytest_as_nothing_to_check(tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree", NO_KERNEL)
    run = cli("guards", "--vllm-src", str(tree), "-q")
    one_line_error(run, ExitCode.NOTHING_TO_CHECK, "no guarded kernel import")
    assert "passed" not in run.stdout


IMPORT_FAILURES = {
    # where the failing import is, what it is, what the one line must name
    "platform-module-needs-a-missing-module": (
        "vllm/platforms/interface.py",
        "import missing_dependency\n",
        "no module named 'missing_dependency'; install it where the guards run (pip install missing_dependency)",
    ),
    "platform-module-raises-importerror": (
        "vllm/platforms/interface.py",
        'raise ImportError("libnuma.so.1: cannot open shared object file")\n',
        "failed: libnuma.so.1: cannot open shared object file",
    ),
    "package-needs-a-missing-runtime-dependency": (
        "vllm/__init__.py",
        "import missing_runtime_dependency\n",
        "no module named 'missing_runtime_dependency'",
    ),
}


@pytest.mark.parametrize("case", IMPORT_FAILURES)
def test_guards_name_a_platform_module_that_cannot_import_and_exit_7(case: str, tmp_path: Path) -> None:
    file, line, named = IMPORT_FAILURES[case]
    tree = make_tree(tmp_path / "tree")
    (tree / file).write_text(line + (tree / file).read_text(encoding="utf-8"), encoding="utf-8")
    run = cli("guards", "--vllm-src", str(tree), "-q", "--tb=line")
    one_line_error(run, ExitCode.ENVIRONMENT, "importing vllm.platforms.interface failed: ", named)
    assert named in run.stdout  # pytest's report of the guard says it too
    assert "Traceback" not in run.stdout


@pytest.mark.parametrize("how", CHECKOUT_RUNS)
@pytest.mark.parametrize("settings", CHECKOUT_SETTINGS)
def test_guards_on_a_checkout_run_the_guards_alone(settings: str, how: str, tmp_path: Path) -> None:
    tree = as_checkout(make_tree(tmp_path / "checkout"), settings)
    run = guards_on_checkout(tree, how, "-q")
    assert run.returncode == ExitCode.OK, run.stdout + run.stderr
    assert f"at {tree / 'vllm'}" in run.stdout and "1 passed" in run.stdout


def test_an_unknown_option_is_one_line_and_a_usage_error(tmp_path: Path) -> None:
    one_line_error(cli("sites", "--bogus"), ExitCode.USAGE, "unrecognized arguments: --bogus", "--help")


def test_the_tools_help_prints_the_exit_code_table_once_and_each_commands_help_points_at_it() -> None:
    shown = cli("--help")
    assert shown.returncode == 0
    assert shown.stdout.count("exit codes:") == 1
    for code, meaning in exit_code_rows():
        assert f"{code:>7}  {meaning}" in shown.stdout
    for command in ("sites", "guards", "platforms", "mutate", "audit", "history"):
        helped = cli(command, "--help")
        assert helped.returncode == 0 and "exit codes: see `warnonce-guard --help`" in helped.stdout, command
        assert "  130/143  " not in helped.stdout, command


def _with_the_reader_gone(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command with its stdout a pipe whose reader left before it wrote (`... | head -0`)."""
    proc = subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the child is still starting Python: its first write finds no reader
    err = proc.stderr.read()
    return subprocess.CompletedProcess(args, proc.wait(timeout=120), "", err)


@pytest.mark.parametrize(
    "args",
    [("sites",), ("sites", "--json"), ("audit", "--format", "sarif"), ("audit", "--format", "text")],
    ids=["sites-table", "sites-json", "audit-sarif", "audit-text"],
)
def test_a_reader_that_leaves_the_pipe_changes_neither_the_exit_code_nor_stderr(
    args: tuple[str, ...], tmp_path: Path
) -> None:
    tree = make_tree(tmp_path / "tree", INTERFACE.replace(': %s", repr(e)', ': %r", e'))  # audit: a live exception
    full = subprocess.run([*CLI, *args, "--vllm-src", str(tree)], capture_output=True, text=True, cwd=tmp_path)
    cut = _with_the_reader_gone(*args, "--vllm-src", str(tree), cwd=tmp_path)
    assert full.stdout  # the command does write: the reader's leaving is met
    # Not vacuous: one of the commands passes and the audits fail, so the code is the verdict, not a constant.
    assert full.returncode == (ExitCode.OK if args[0] == "sites" else ExitCode.CHECK_FAILED), full.stderr
    assert (cut.returncode, cut.stderr) == (full.returncode, full.stderr)


@pytest.mark.parametrize("again", [signal.SIGINT, signal.SIGTERM])
def test_a_second_signal_while_an_interrupted_run_ends_exits_at_once_with_130(
    again: signal.Signals, tmp_path: Path
) -> None:
    # The second signal lands after the command has returned, while the process ends; the end then hangs
    # (as on a library's thread): the signal must neither kill it with -2 nor be lost.
    script = (
        "import os, signal, sys, time\n"
        "from warnonce_guard.cli import main\n"
        "def interrupted(args):\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(5)\n"
        "main.cmd_platforms = interrupted\n"
        "code = main.main(['platforms'], exiting=True)\n"
        f"os.kill(os.getpid(), {int(again)})\n"
        "time.sleep(60)\n"
        "sys.exit(code)\n"
    )
    run = subprocess.run([CLI[0], "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=30)
    assert (run.returncode, run.stderr.strip()) == (ExitCode.INTERRUPTED, "warnonce-guard: interrupted")


# The installed `warnonce-guard` script, run as the shell runs it, after `PRELUDE` prepared a signal for a moment.
SCRIPT = Path(CLI[0]).with_name("warnonce-guard")
RUN_SCRIPT = "import runpy, sys\nsys.argv = [{script!r}, *{args!r}]\nrunpy.run_path({script!r}, run_name='__main__')\n"
SIGNAL_WHILE_IMPORTING = (
    "import os, sys, time\n"
    "class SignalWhileImporting:  # a finder that asks for no module: the signal lands amid the imports\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'warnonce_guard.cli.main':\n"
    "            os.kill(os.getpid(), {sig})\n"
    "            time.sleep(5)\n"
    "sys.meta_path.insert(0, SignalWhileImporting())\n"
)
SIGNAL_AT_EXIT = (
    "import atexit, os, time\n"
    "atexit.register(lambda: (os.kill(os.getpid(), {sig}), time.sleep(5)))  # runs last of the exit functions\n"
)


@pytest.mark.parametrize(
    ("prelude", "command"),
    [(SIGNAL_WHILE_IMPORTING, "sites"), (SIGNAL_AT_EXIT, "sites"), (SIGNAL_WHILE_IMPORTING, "mutate")],
    ids=["importing", "at-exit", "importing-mutate"],
)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_signal_before_the_command_or_after_it_is_its_exit_code_and_one_line(
    sig: signal.Signals, prelude: str, command: str, tmp_path: Path
) -> None:
    """The command line's imports take a few hundred milliseconds: a signal there was a KeyboardInterrupt
    traceback with -2 (SIGTERM: a silent -15), and so was one while the interpreter ended. `mutate` has started
    its session by then (`launch.start_early`): killed and reaped before the process ends."""
    tree = make_tree(tmp_path / "tree")
    work = tmp_path / "work"
    args = [command, "--vllm-src", str(tree), *(["--work-dir", str(work)] if command == "mutate" else [])]
    code = prelude.format(sig=int(sig)) + RUN_SCRIPT.format(script=str(SCRIPT), args=args)
    run = subprocess.run([CLI[0], "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    said = "interrupted" if sig == signal.SIGINT else "terminated"
    assert (run.returncode, run.stderr) == (128 + sig, f"warnonce-guard: {said}\n")
    assert processes_mentioning(str(work)) == []


COLLECTOR_SAID = (
    "import atexit, gc, sys\n"
    "class SaysTheCollector:  # a finder that asks for no module: it says the collector's state amid the imports\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name == 'warnonce_guard.cli.main':\n"
    "            print('importing', gc.isenabled(), flush=True)\n"
    "sys.meta_path.insert(0, SaysTheCollector())\n"
    "atexit.register(lambda: print('ending', gc.isenabled(), gc.get_freeze_count() > 0, flush=True))\n"
)


@pytest.mark.parametrize(
    ("command", "said"),
    [("mutate", ["importing False", "ending True True"]), ("sites", ["importing True", "ending True False"])],
)
def test_mutates_imports_run_with_the_collector_off_and_stay_frozen_once_it_is_on_again(
    command: str, said: list[str], tmp_path: Path
) -> None:
    """`mutate`'s command imports the run's modules (then libcst) with Python's cycle collector off: they live as
    long as the process, which then collects only what it makes (`processes.collect_from_here`). Other commands
    (the audit over a large tree) keep it as Python starts it."""
    args = [command, "--vllm-src", str(tmp_path / "nowhere")]
    code = COLLECTOR_SAID + RUN_SCRIPT.format(script=str(SCRIPT), args=args)
    run = subprocess.run([CLI[0], "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert run.returncode == ExitCode.BAD_INPUT, run.stderr  # no target there: after the imports
    assert run.stdout.splitlines() == said


def test_a_reader_that_leaves_a_shared_stdout_and_stderr_pipe_does_not_change_the_exit_code(tmp_path: Path) -> None:
    # `... 2>&1 | head`: the error line itself meets the closed pipe
    proc = subprocess.Popen(
        [*CLI, "sites", "--vllm-src", str(tmp_path / "nowhere")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=tmp_path,
    )
    assert proc.stdout is not None
    proc.stdout.close()
    assert proc.wait(timeout=60) == ExitCode.BAD_INPUT


COMMANDS = {
    "sites": ("sites",),
    "guards": ("guards", "-q", "-p", "no:cacheprovider"),
    "mutate": ("mutate", "--out", "report", "--work-dir", "work"),
}


@pytest.mark.parametrize("command", COMMANDS)
def test_what_is_no_file_to_read_in_the_target_is_skipped_with_one_note_each_and_never_waited_on(
    command: str, tmp_path: Path
) -> None:
    """A FIFO named *.py hung each command for ever; a dangling symlink, a loop, a directory named x.py: exit 70."""
    tree = make_tree(tmp_path / "tree")
    odd = add_odd_files(tree)
    run = subprocess.run(
        [*CLI, *COMMANDS[command], "--vllm-src", str(tree)], capture_output=True, text=True, cwd=tmp_path, timeout=600
    )
    assert run.returncode == ExitCode.OK, run.stdout + run.stderr
    noted = {path: what for path, what in odd.items() if command == "mutate" or path.suffix == ".py"}
    notes = sorted(f"warnonce-guard: note: skipped {path}: {what}, not a file to read" for path, what in noted.items())
    assert sorted(run.stderr.splitlines()) == notes  # each once, though discovery, fingerprint and staging meet it


@pytest.mark.parametrize("command", COMMANDS)
def test_a_version_file_that_is_not_utf8_is_one_line_and_exit_5(command: str, tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree")
    (tree / "vllm" / "_version.py").write_bytes(b"__version__ = '9.9.9'  # caf\xe9\n")
    args = [*CLI, *COMMANDS[command], "--vllm-src", str(tree)]
    run = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path)
    one_line_error(run, ExitCode.BAD_INPUT, f"{tree / 'vllm' / '_version.py'}: not utf-8 text")
