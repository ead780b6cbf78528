"""The engine's session (`mutations.engine.session`), piece by piece, without a real mutmut run: how it is
started, what it tells the guards, when it records a generation, and how each way it ends becomes its exit
code. A whole session with mutmut and the guards is the slow tier's (tests/e2e/test_mutation_run.py)."""

from __future__ import annotations

import errno
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import types
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from warnonce_guard.common import processes, protocol
from warnonce_guard.common.errors import EngineFailed, ExitCode, SeamMismatch
from warnonce_guard.guards.isolation import isolated
from warnonce_guard.guards.sessions import UNWRITTEN_STATUS, Phase, session_phase
from warnonce_guard.mutations.engine import config, launch, layout, naming, overlay, seam, session, state
from warnonce_guard.mutations.operators import anchors_of
from warnonce_guard.mutations.suite import Suite
from warnonce_guard.mutations.workspace import Workspace
from warnonce_guard.rule.sites import sites_in_source

from tests.records_support import meta_document
from tests.toy import INTERFACE

FILE = "vllm/platforms/interface.py"
HELPER = """

def helper():
    try:
        import vllm._moe_C  # noqa: F401
    except ImportError as e:
        logger.warning_once("Failed to import from vllm._moe_C: %s", repr(e))
"""
MUTANTS = ["vllm.platforms.interface.xǁPlatformǁimport_kernels__mutmut_1"]
INSTALLED = Path("/site-packages/vllm")  # where the staged package is imported from (packages.json)


@pytest.fixture
def ws(ws: Workspace) -> Workspace:
    """A staged workspace, as the session finds it: the packages and sites staging recorded."""
    ws.packages_file.write_text(json.dumps({"vllm": str(INSTALLED)}), encoding="utf-8")
    ws.sites_file.write_text("[]", encoding="utf-8")
    return ws


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A copy of the environment for the test: the session writes into its own process's."""
    copy = dict(os.environ)
    monkeypatch.setattr(os, "environ", copy)
    yield copy


def generate(ws: Workspace) -> str:
    """What mutmut's create_mutants leaves for one site file: its mutants file and `.meta`."""
    layout.mutated(ws, FILE).parent.mkdir(parents=True, exist_ok=True)
    layout.mutated(ws, FILE).write_text("# mutants\n", encoding="utf-8")
    layout.meta(ws, FILE).write_text(json.dumps(meta_document(dict.fromkeys(MUTANTS))), encoding="utf-8")
    return "generation stats"


# --- start: a process of its own -------------------------------------------------------------------------


def test_the_session_runs_in_a_process_group_of_its_own_and_appends_to_the_log_of_the_workspace_it_is_given(
    ws: Workspace,
) -> None:
    ws.log_file.write_text("an earlier run's log\n", encoding="utf-8")
    ws.packages_file.unlink()  # it cannot run: it says why in the log and exits session.ENGINE_FAILED
    with launch.session_started(ws.dir.parent) as proc:
        assert os.getpgid(proc.pid) == proc.pid  # the run stops it (and its workers) by its group
        launch.assign(proc, ws, "run1", [], 1)
        launch.tell_to_mutate(proc, [FILE])
        assert proc.wait(timeout=60) == session.ENGINE_FAILED
        assert launch.keep_early_output(proc, ws) == b""  # it took the log: nothing was left to keep
    log = ws.log_file.read_text(encoding="utf-8")
    assert log.startswith("an earlier run's log\n") and "packages.json" in log and "Traceback" in log


@pytest.mark.parametrize(
    ("argv", "work_dir"),
    [
        ([], launch.DEFAULT_WORK_DIR),
        (["--out", "r", "--work-dir", "w"], "w"),
        (["--work-dir=w", "--fail-under", "90"], "w"),
        (["--work-dir", "a", "--work-dir=b"], "b"),  # the last one given, as argparse keeps it
        (["--tests", "t", "--work-dir", "w"], "w"),
        (["--work-dir"], None),  # a usage error: no session
        (["--work-dir", ""], None),
        (["--work-dir="], None),
        (["--work-dir", "--out", "r"], None),
        (["--help"], None),
        (["-h", "--work-dir", "w"], None),
        (["--", "--work-dir", "w"], None),
    ],
)
def test_the_session_started_before_the_parser_reads_the_work_root_as_the_parser_would_or_not_at_all(
    argv: list[str], work_dir: str | None
) -> None:
    assert launch._work_dir(argv) == work_dir


def test_the_work_root_read_before_the_parser_defaults_as_the_parser_does() -> None:
    from warnonce_guard.cli.main import build_parser

    assert build_parser().parse_args(["mutate"]).work_dir == launch.DEFAULT_WORK_DIR


def test_the_first_module_names_the_module_whose_early_session_it_stops() -> None:
    from warnonce_guard.cli import __main__ as first

    assert launch.__name__ == first.LAUNCH  # else it would find no session to stop, and say nothing


@pytest.fixture
def no_early(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No session started early before the test; the one it started stopped after it, even when it failed."""
    monkeypatch.setattr(launch, "early", None)
    yield
    launch.stop_early()


@pytest.mark.parametrize("same_root", [True, False])
@pytest.mark.usefixtures("no_early")
def test_the_run_takes_the_session_started_before_its_parser_only_for_the_work_root_the_parser_read(
    ws: Workspace, same_root: bool
) -> None:
    work_root = ws.dir.parent
    early_root = work_root if same_root else work_root / "elsewhere"
    launch.start_early(["--work-dir", str(early_root)])
    early = launch.early
    assert early is not None and early.args[-1] == str(early_root)
    with launch.session_started(work_root) as proc:
        assert launch.early is None
        assert (proc is early) == same_root and proc.args[-1] == str(work_root)
        if not same_root:  # stopped as the run began: nothing of its group is left
            assert early.returncode is not None and early.early_output is not None and early.early_output.closed
    assert proc.returncode is not None


@pytest.mark.usefixtures("no_early")
def test_a_session_started_before_a_parser_that_refused_the_arguments_is_stopped(ws: Workspace) -> None:
    launch.start_early(["--work-dir", str(ws.dir.parent)])
    early = launch.early
    assert early is not None
    launch.stop_early()
    assert launch.early is None and early.returncode is not None
    with pytest.raises(ProcessLookupError):
        os.killpg(early.pid, 0)


@pytest.mark.parametrize("assigned", [False, True])
def test_a_session_the_run_never_tells_to_go_generates_nothing_and_ends(ws: Workspace, assigned: bool) -> None:
    with launch.session_started(ws.dir.parent) as proc:  # the run's verdicts stood, or it ended before staging
        if assigned:
            launch.assign(proc, ws, "run1", [], 1)
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(timeout=60) == ExitCode.INTERRUPTED
    assert not ws.mutants.exists() and not ws.generation_file.exists()


@pytest.mark.parametrize("dismissed", [False, True])
def test_a_session_stopped_before_it_is_given_a_workspace_leaves_nothing_running(
    ws: Workspace, dismissed: bool
) -> None:
    with launch.session_started(ws.dir.parent) as proc:
        if dismissed:  # the run's verdicts stood: stopped at once, reaped as the command ends
            launch.dismiss(proc)
    assert proc.returncode is not None and proc.early_output is not None and proc.early_output.closed
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # nor any process of its group


def test_a_session_that_could_not_start_fails_the_run_as_it_is_given_its_workspace_saying_why(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws.log_file.write_text("an earlier run's log\n", encoding="utf-8")
    monkeypatch.setattr(launch, "SESSION_MODULE", "warnonce_guard.no_such_session")  # as a broken install would
    with launch.session_started(ws.dir.parent) as proc:
        assert proc.wait(timeout=60) == 1
        with pytest.raises(EngineFailed, match=r"exit code 1\) as it started: .*No module named"):
            launch.assign(proc, ws, "run1", [], 1)
    log = ws.log_file.read_text(encoding="utf-8")
    assert log.startswith("an earlier run's log\n") and "No module named warnonce_guard.no_such_session" in log


def test_a_session_that_says_more_than_a_pipe_holds_before_its_workspace_still_takes_it_and_keeps_it_all(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONVERBOSE", "1")  # every import says so: hundreds of kilobytes before the workspace
    with launch.session_started(ws.dir.parent) as proc:
        launch.assign(proc, ws, "run1", [], 1)
        assert proc.stdin is not None
        proc.stdin.close()  # never told to mutate: its generator ends it
        assert proc.wait(timeout=120) == ExitCode.INTERRUPTED
        assert launch.keep_early_output(proc, ws) == b""  # it copied what it said into the log itself
    log = ws.log_file.read_text(encoding="utf-8", errors="replace")
    assert len(log) > 1 << 16 and "pytest/__init__.py" in log  # its imports, said before it had the workspace


def test_telling_a_session_that_already_ended_to_go_leaves_its_exit_code_to_say_why(ws: Workspace) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"], stdin=subprocess.PIPE)
    proc.wait()
    launch.tell_to_mutate(proc, [FILE])  # no BrokenPipeError
    assert proc.returncode == 0


def test_the_session_is_this_module_run_on_the_workspace_and_told_its_parent(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: dict[str, object] = {}

    class Popen:
        def __init__(self, argv: list[str], **options: object) -> None:
            started.update(options, argv=argv)

    monkeypatch.setattr(launch, "Session", Popen)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)  # set by this machine: the session's own must be
    started_session = launch.start_session(ws.dir.parent)
    assert isinstance(started_session, Popen)
    assert started["argv"] == [
        sys.executable, "-m", "warnonce_guard.mutations.engine.session", str(ws.dir.parent)
    ]  # fmt: skip  # named by where it works, as a leftover one is found
    assert session.__name__ == launch.SESSION_MODULE  # the module that runs it, named where it is started
    env = started["env"]
    assert isinstance(env, dict) and env[protocol.PARENT_PID] == str(os.getpid())
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"  # nothing compiles beside the target's sources
    assert started["start_new_session"] is True and started["stderr"] == subprocess.STDOUT
    early = started["stdout"]  # until it takes the workspace's log: a file, unlinked (a pipe could fill)
    assert hasattr(early, "seek") and isinstance(early.name, int)  # no path: its descriptor names it
    assert started["stdin"] == subprocess.PIPE  # `assign` and `tell_to_mutate` only: never the terminal
    (said,) = started["pass_fds"]  # the pipe it says its exit code on as it ends: the write end its only
    assert env[protocol.SESSION_END] == str(said)
    with pytest.raises(OSError):
        os.fstat(said)  # closed here once passed on
    end = started_session.end
    assert isinstance(end, int) and os.get_blocking(end)
    os.close(end)


# A session's last steps: it says its code, then goes on (as tearing down vLLM and torch would) until stopped.
SAYS_3_THEN_GOES_ON = f"""
import os, time
from warnonce_guard.mutations.engine import session
session._open_end_pipe()
assert {protocol.SESSION_END!r} not in os.environ and not os.get_inheritable(session._end)  # nothing it runs gets it
session.say_ended(3)
time.sleep(60)
"""
# A process forked from it (a mutmut worker that raised) returns through the session's code first: it says nothing.
A_FORK_RETURNS_FIRST = """
import os, time
from warnonce_guard.mutations.engine import session
session._open_end_pipe()
if os.fork() == 0:
    session.say_ended(5)
    os._exit(0)
os.wait()
session.say_ended(3)
time.sleep(60)
"""
# The warmer took over: it says the code (the process it was forked from waits for it, then exits as it did).
THE_WARMER_TOOK_OVER = """
import os, time
from warnonce_guard.mutations.engine import session
session._open_end_pipe()
if os.fork() == 0:
    session._take_the_end()
    session.say_ended(3)
time.sleep(60)
"""


def _child_with_end_pipe(code: str) -> launch.Session:
    end, said = os.pipe()
    env = {**os.environ, protocol.SESSION_END: str(said)}
    child = launch.Session([sys.executable, "-c", code], pass_fds=(said,), env=env, start_new_session=True)
    os.close(said)
    child.end = end
    return child


@pytest.mark.parametrize("code", [SAYS_3_THEN_GOES_ON, A_FORK_RETURNS_FIRST, THE_WARMER_TOOK_OVER])
def test_the_run_goes_on_once_the_session_said_its_code_not_once_its_process_ended(code: str) -> None:
    child = _child_with_end_pipe(code)
    try:
        assert launch.ended(child, 60) == 3
        assert child.poll() is None  # still tearing down: not waited for
    finally:
        launch.stop(child)  # and stopped, reaped, its pipe closed when the run ends
    assert child.returncode is not None and child.end is None


def test_a_session_that_said_its_code_is_given_time_to_end_before_it_is_signalled() -> None:
    child = _child_with_end_pipe(
        "from warnonce_guard.mutations.engine import session\n"
        "import os, signal, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: os._exit(9))\n"
        "session._open_end_pipe(); session.say_ended(3); time.sleep(0.3); os._exit(3)"
    )
    try:
        assert launch.ended(child, 60) == 3
    finally:
        launch.stop(child)
    assert child.returncode == 3  # not the 9 a SIGTERM would have made


@pytest.mark.parametrize(
    "code",
    [
        "import sys; sys.exit(4)",  # a crash, a signal: the pipe closes with nothing said
        f"import os; os.write(int(os.environ[{protocol.SESSION_END!r}]), b'?'); raise SystemExit(4)",  # no code
    ],
)
def test_a_session_that_ends_without_saying_its_code_is_waited_for(code: str) -> None:
    child = _child_with_end_pipe(code)
    try:
        assert launch.ended(child, 60) == 4
    finally:
        launch.stop(child)


def test_a_session_that_closes_its_pipe_unsaid_is_waited_for_no_longer_than_it_was_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    child = _child_with_end_pipe(
        f"import os, time; time.sleep(0.3); os.close(int(os.environ[{protocol.SESSION_END!r}])); time.sleep(60)"
    )
    waited: list[float] = []
    monkeypatch.setattr(launch, "wait_up_to", lambda child, seconds: waited.append(seconds))
    try:
        assert launch.ended(child, 5) is None
    finally:
        launch.stop(child)
    assert len(waited) == 1 and waited[0] < 4.8  # the rest of the 5 s after the pipe closed, not 5 s more


def test_a_process_with_no_end_pipe_is_waited_for_and_stopped_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain Popen (no pipe, nothing said): `ended` waits for its exit; `stop` signals it without the time a
    session that said its code is given."""
    done = subprocess.Popen([sys.executable, "-c", "raise SystemExit(5)"])
    assert launch.ended(done, 60) == 5
    waited: list[float] = []
    real_wait = launch.wait_up_to
    monkeypatch.setattr(
        launch, "wait_up_to", lambda child, seconds: waited.append(seconds) or real_wait(child, seconds)
    )
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    launch.stop(running)
    assert running.returncode is not None and waited == []


def test_a_session_that_cannot_start_leaves_no_pipe_or_file_open(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def refused(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EAGAIN, "no process to spare")

    monkeypatch.setattr(launch, "Session", refused)
    before = sorted(os.listdir("/proc/self/fd"))
    with pytest.raises(OSError, match="no process to spare"):
        launch.start_session(tmp_path)
    assert sorted(os.listdir("/proc/self/fd")) == before


def test_a_session_saying_nothing_yet_is_still_running() -> None:
    child = _child_with_end_pipe("import time; time.sleep(60)")
    try:
        assert launch.ended(child, 0.1) is None
    finally:
        launch.stop(child)


def test_the_session_imports_what_it_is_told_to_and_passes_over_what_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    imported: list[str] = []

    def import_module(name: str) -> None:
        imported.append(name)
        if name == "broken":
            raise RuntimeError("broken at import")

    monkeypatch.setattr(session.importlib, "import_module", import_module)
    session._warm_up(["broken", "torch"])
    assert imported == ["broken", "torch"]
    assert "mutmut" not in str(session.ENGINE_IMPORTS)  # never mutmut: it reads setup.cfg when imported


WHAT_MUTMUT_ADDS = """
import json, sys
from warnonce_guard.mutations.engine import session
session._deferred(session.GENERATION_IMPORTS)
session._warm_up(session.ENGINE_IMPORTS)
before = set(sys.modules)
import mutmut.__main__
from mutmut.mutation import file_mutation
added = sorted(set(sys.modules) - before)
deferred = [type(sys.modules[name]).__name__ for name in session.GENERATION_IMPORTS]
session._loaded(session.GENERATION_IMPORTS)
loaded = [type(sys.modules[name]).__name__ for name in session.GENERATION_IMPORTS]
print(json.dumps([added, deferred, loaded, file_mutation.m.matches.__module__]))
"""


def test_after_the_warm_up_mutmut_imports_little_but_its_own_modules_and_its_matchers_wait(tmp_path: Path) -> None:
    """Both children of the session import mutmut.__main__ (the generator and the runner): what that import spends
    its time on is imported once before the fork, but for what only generation uses (libcst's matchers), whose code
    runs on its first use: in the generator (`_loaded`), never in the runner. What is left: mutmut's modules, the
    standard library's, and two small ones (the libcst parser's native binding and setproctitle)."""
    (tmp_path / "src").mkdir()
    (tmp_path / "setup.cfg").write_text("[mutmut]\nsource_paths = src\n")
    done = subprocess.run([sys.executable, "-c", WHAT_MUTMUT_ADDS], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    names, deferred, loaded, matches_from = json.loads(done.stdout)
    added = {name for name in names if name.split(".")[0] not in sys.stdlib_module_names}
    assert any(name.startswith("mutmut.") for name in added)  # it did import mutmut here, not before
    assert {name for name in added if name.split(".")[0] != "mutmut"} <= {
        "libcst.native", "setproctitle", "setproctitle._setproctitle"
    }  # fmt: skip
    assert (deferred, loaded) == (["_OnFirstUse"], ["module"])  # bound by mutmut's import, run when first used
    assert matches_from.startswith("libcst.matchers")  # mutmut's `m` is the module itself, loaded in place


def test_a_deferred_module_runs_its_code_once_on_first_use_and_is_the_module_its_importers_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "counted.py").write_text("import builtins\nbuiltins.runs = getattr(builtins, 'runs', 0) + 1\nX = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "counted", raising=False)
    import builtins

    monkeypatch.setattr(builtins, "runs", 0, raising=False)
    session._deferred(["counted", "no_such_module_anywhere"])  # one that cannot be found is left to its importer
    import counted  # type: ignore[import-not-found]

    assert builtins.runs == 0 and "no_such_module_anywhere" not in sys.modules
    assert counted.X == 1 and builtins.runs == 1
    session._loaded(["counted"])
    assert sys.modules["counted"] is counted and builtins.runs == 1 and type(counted) is type(sys)
    monkeypatch.delitem(sys.modules, "counted")


def test_a_deferred_module_whose_code_fails_is_gone_as_after_a_failed_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "failing.py").write_text("raise ImportError('its own error')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    session._deferred(["failing"])
    import failing  # type: ignore[import-not-found]

    with pytest.raises(ImportError, match="its own error"):
        failing.anything  # noqa: B018 - the first use runs its code
    assert "failing" not in sys.modules
    session._loaded(["failing"])  # the generator's load says nothing: the importer that needs it says why
    with pytest.raises(ImportError, match="its own error"):
        importlib.import_module("failing")


def test_the_session_runs_pytest_with_its_own_options_not_the_users(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: dict[str, object] = {}
    monkeypatch.setattr(launch, "Session", lambda argv, **options: started.update(options) or types.SimpleNamespace())
    monkeypatch.setenv("PYTEST_ADDOPTS", "-x --pdb -k nothing")
    monkeypatch.setenv("PYTEST_PLUGINS", "someones.plugin")
    monkeypatch.setenv("WARNONCE_GUARD_KEPT", "yes")
    os.close(launch.start_session(ws.dir.parent).end)
    env = started["env"]
    assert isinstance(env, dict) and "PYTEST_ADDOPTS" not in env and "PYTEST_PLUGINS" not in env
    assert env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"  # nor the environment's plugins (hypothesis, xdist here)
    assert env["WARNONCE_GUARD_KEPT"] == "yes"  # the rest of the environment is passed on


def test_a_session_whose_parent_died_while_it_started_exits_at_once(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str]
) -> None:
    # the session binds itself to its parent with the one rule the history's guard runs use too
    assert session.bind_to_parent is processes.bind_to_parent
    asked: list[str] = []
    monkeypatch.setattr(processes, "die_with_parent", lambda: asked.append("pdeathsig"))

    def exit_now(code: int) -> None:
        raise SystemExit(code)

    monkeypatch.setattr(os, "_exit", exit_now)
    environment[protocol.PARENT_PID] = str(os.getppid())
    processes.bind_to_parent()  # its parent is alive: it goes on
    environment[protocol.PARENT_PID] = str(os.getppid() + 1)  # reparented: the run that started it is gone
    with pytest.raises(SystemExit) as stop:
        processes.bind_to_parent()
    assert stop.value.code == 1 and asked == ["pdeathsig", "pdeathsig"]


# --- what it tells the guards ----------------------------------------------------------------------------


def test_the_sessions_environment_is_what_the_guards_read_as_the_engines_protocol(
    ws: Workspace, environment: dict[str, str]
) -> None:
    environment["WARNONCE_GUARD_VLLM_SRC"] = "/the/users/tree"
    ws.sites_file.write_text("[]", encoding="utf-8")
    session._environment(ws, "run1", {"vllm": INSTALLED})

    told = protocol.settings()
    assert told.mutant_variable == "MUTANT_UNDER_TEST"  # mutmut's (check_seam holds it to that)
    running = ("", "stats", MUTANTS[0], "fail", "list_all_tests")
    assert [session_phase(replace(told, mutant=name)) for name in running] == [
        Phase.BASELINE, Phase.BASELINE, Phase.MUTANT, None, None
    ]  # fmt: skip
    assert (environment["WARNONCE_GUARD_SITES"], environment["WARNONCE_GUARD_ATTRIBUTION"]) == (
        str(ws.sites_file), str(ws.attribution)
    )  # fmt: skip
    assert environment["WARNONCE_GUARD_EXPECT_VLLM"] == str(INSTALLED)  # the target's, through the overlay
    assert environment["WARNONCE_GUARD_MUTATED"] == str(ws.mutants)  # where every site module comes from
    assert environment["WARNONCE_GUARD_RUN_ID"] == "run1" and environment["WARNONCE_GUARD_EVIDENCE"] == "0"
    assert "WARNONCE_GUARD_VLLM_SRC" not in environment  # never the user's tree
    assert "WARNONCE_GUARD_SUITE_BASELINE" not in environment  # the guards are no suite of --tests


def test_a_suites_sessions_are_told_where_its_baseline_goes(ws: Workspace, environment: dict[str, str]) -> None:
    ws.sites_file.write_text("[]", encoding="utf-8")
    session._environment(ws, "run1", {"vllm": INSTALLED}, Suite(ws.dir, ("tests",)))
    assert protocol.settings().suite_baseline == str(ws.suite_baseline)


def test_the_guards_find_the_sites_of_the_mutated_function_from_the_sessions_environment(
    ws: Workspace, environment: dict[str, str], mutmut_config: Path
) -> None:
    from warnonce_guard.guards.conftest import mutated_function_sites

    source = INTERFACE + HELPER
    sites = sites_in_source(source, FILE, "vllm.platforms.interface")
    ws.sites_file.write_text(json.dumps([site.to_json() for site in sites]), encoding="utf-8")  # as staged
    session._environment(ws, "run1", {"vllm": INSTALLED})
    _, generated = naming.generate(FILE, source, ["vllm"], anchors_of(sites))

    assert {g.qualname for g in generated} == {"Platform.import_kernels", "helper"}
    for mutant in generated:  # every mutant mutmut makes: its function's sites, by mutmut's names
        environment["MUTANT_UNDER_TEST"] = mutant.mutant_id
        assert mutated_function_sites() == {site.id for site in sites if site.qualname == mutant.qualname}
    environment["MUTANT_UNDER_TEST"] = "vllm.platforms.cpu.x_elsewhere__mutmut_1"
    assert mutated_function_sites() == frozenset()
    for baseline in ("", "stats"):
        environment["MUTANT_UNDER_TEST"] = baseline
        assert mutated_function_sites() is None


CLASS_BODY_SITE = INTERFACE.replace(
    "class Platform:\n",
    "class Platform:\n"
    "    try:\n"
    "        import vllm._C  # noqa: F401\n"
    "    except ImportError as e:\n"
    '        logger.warning_once("Failed to import from vllm._C: %s", repr(e))\n\n',
)


def test_a_site_in_a_class_body_gets_no_mutant_name_as_mutmut_applies_none_there(mutmut_config: Path) -> None:
    from mutmut.mutation.file_mutation import mutate_file_contents

    sites = sites_in_source(CLASS_BODY_SITE, FILE, "vllm.platforms.interface")
    assert [s.qualname for s in sites] == ["Platform", "Platform.import_kernels"]  # both found, both cached
    with seam.our_operators(["vllm"], anchors_of(sites)):
        made = mutate_file_contents(FILE, CLASS_BODY_SITE).mutant_names
    _, generated = naming.generate(FILE, CLASS_BODY_SITE, ["vllm"], anchors_of(sites))  # it raised AttributeError

    assert {g.qualname for g in generated} == {"Platform.import_kernels"}
    assert sorted(g.mutant_id.rpartition(".")[2] for g in generated) == sorted(made)  # mutmut's own names, no more


# --- the generation record ------------------------------------------------------------------------------


def test_the_generation_is_recorded_once_mutmut_has_generated(ws: Workspace) -> None:
    recorded = session.record_generation(ws, "run1", [FILE], lambda max_children: generate(ws))

    assert not ws.generation_file.exists()
    assert recorded(max_children=2) == "generation stats"
    run, files = state.read_generation(ws)
    assert run == "run1" and files[FILE]["mutants"] == MUTANTS
    assert files[FILE]["sha256"] == state.file_digest(layout.mutated(ws, FILE))


def test_a_generation_that_fails_is_never_recorded(ws: Workspace) -> None:
    def crashed(max_children: int) -> None:
        generate(ws)
        raise MemoryError

    with pytest.raises(MemoryError):
        session.record_generation(ws, "run1", [FILE], crashed)(max_children=2)
    assert not ws.generation_file.exists()


# --- mutmut's run, with our operators ------------------------------------------------------------------


@pytest.fixture
def mutmut_main(ws: Workspace, monkeypatch: pytest.MonkeyPatch, mutmut_config: Path) -> object:
    """mutmut's command module (importing it reads a mutmut config), its generator replaced by one that
    generates for `ws`; the names the session replaces are put back after the test."""
    import mutmut.__main__ as mutmut_main
    from mutmut.mutation.data import SourceFileMutationData

    monkeypatch.setattr(mutmut_main, "create_mutants", lambda max_children: generate(ws))
    for name in ("_register_mutant_result", "Pool"):
        monkeypatch.setattr(mutmut_main, name, getattr(mutmut_main, name))
    monkeypatch.setattr(SourceFileMutationData, "save", SourceFileMutationData.save)
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))  # the session installs its overlay there
    return mutmut_main


@pytest.mark.parametrize(("stop", "code"), [(None, 0), (SystemExit(1), 1), (SystemExit("mutmut: error"), 1)])
def test_mutmut_runs_with_our_operators_and_its_exit_becomes_the_code(
    ws: Workspace, mutmut_main: object, monkeypatch: pytest.MonkeyPatch, stop: SystemExit | None, code: int
) -> None:
    from mutmut.mutation import file_mutation

    stock = file_mutation.mutation_operators
    seen: list[object] = []

    def run(names: list[str], max_children: int | None) -> None:
        seen.append(file_mutation.mutation_operators)
        mutmut_main.create_mutants(max_children=1)  # type: ignore[attr-defined]
        if stop is not None:
            raise stop

    monkeypatch.setattr(mutmut_main, "_run", run)

    assert session.run_mutmut(ws, "run1", {"vllm": INSTALLED}, [FILE]) == code
    assert seen and seen[0] is not stock and file_mutation.mutation_operators is stock
    assert state.read_generation(ws)[0] == "run1"  # generation recorded through the wrapped create_mutants
    finder = sys.meta_path[0]  # the target is imported through the workspace
    assert isinstance(finder, overlay.Overlay) and finder.packages == {"vllm": INSTALLED} and finder.files == {FILE}


def test_the_generator_does_what_mutmuts_run_does_first_with_our_operators_and_records_it(
    ws: Workspace, mutmut_main: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mutmut.mutation import file_mutation
    from warnonce_guard.mutations.engine.generation import InProcessPool

    stock = file_mutation.mutation_operators
    did: list[object] = []
    monkeypatch.setattr(mutmut_main, "copy_src_dir", lambda: did.append("copied"))

    def create_mutants(max_children: int) -> str:
        did.append(file_mutation.mutation_operators)
        assert mutmut_main.Pool is InProcessPool  # type: ignore[attr-defined]
        return generate(ws)

    monkeypatch.setattr(mutmut_main, "create_mutants", create_mutants)

    session.generate(ws, "run1", {"vllm": INSTALLED}, [FILE])

    assert did[0] == "copied" and did[1] is not stock and file_mutation.mutation_operators is stock
    assert state.read_generation(ws)[0] == "run1"


def test_a_mutant_whose_worker_was_killed_is_tested_again_in_a_second_round_and_kept_then(
    ws: Workspace, mutmut_main: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mutmut.workers.isolation import MutantResult
    from warnonce_guard.mutations.engine.generation import InProcessPool

    rounds: list[list[str]] = []
    registered: list[tuple[str, int]] = []
    monkeypatch.setattr(
        mutmut_main,
        "_register_mutant_result",
        lambda result, data: registered.append((result.mutant_name, result.exit_code)),
    )

    def run(names: list[str], max_children: int | None) -> None:
        assert mutmut_main.Pool is InProcessPool  # type: ignore[attr-defined]  # the generator made the mutants
        rounds.append(list(names))
        code = -signal.SIGKILL if not names else 1  # the OOM killer took the worker once
        mutmut_main._register_mutant_result(MutantResult(MUTANTS[0], code, 1.0), {})  # type: ignore[attr-defined]

    monkeypatch.setattr(mutmut_main, "_run", run)

    assert session.run_mutmut(ws, "run1", {"vllm": INSTALLED}, [FILE]) == 0
    assert rounds == [[], MUTANTS]  # mutmut re-tests mutants it is given by name
    assert registered == [(MUTANTS[0], 1)]  # the killed attempt was never kept
    assert json.loads(ws.attempts_file.read_text(encoding="utf-8"))["mutants"] == {}


def test_a_second_round_runs_once_and_keeps_a_repeated_kill(
    ws: Workspace, mutmut_main: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mutmut.workers.isolation import MutantResult

    rounds: list[list[str]] = []
    registered: list[tuple[str, int]] = []
    monkeypatch.setattr(
        mutmut_main,
        "_register_mutant_result",
        lambda result, data: registered.append((result.mutant_name, result.exit_code)),
    )

    def run(names: list[str], max_children: int | None) -> None:
        rounds.append(list(names))
        mutmut_main._register_mutant_result(MutantResult(MUTANTS[0], -signal.SIGKILL, 1.0), {})  # type: ignore[attr-defined]

    monkeypatch.setattr(mutmut_main, "_run", run)

    assert session.run_mutmut(ws, "run1", {"vllm": INSTALLED}, [FILE]) == 0
    assert rounds == [[], MUTANTS]
    assert registered == [(MUTANTS[0], -signal.SIGKILL)]  # killed twice in a row: that is its verdict


def test_the_complete_baseline_runs_every_guard_from_mutants_without_stopping_at_the_first_failure(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, environment: dict[str, str]
) -> None:
    ws.mutants.mkdir()
    ran: list[tuple[list[str], str]] = []

    def pytest_main(args: list[str]) -> int:
        ran.append((args, os.getcwd()))
        return 1

    monkeypatch.setattr(pytest, "main", pytest_main)
    monkeypatch.chdir(ws.dir)

    assert session.complete_baseline(ws) == 1
    ((args, where),) = ran
    assert where == str(ws.mutants) and args[0] == ws.guard_tests.name and "-x" not in args
    assert " ".join(isolated(".")) in " ".join(args)  # no settings or conftest.py around the workspace
    assert " ".join(config.GUARD_ARGS) in " ".join(args)  # the plugins of mutmut's sessions of the guards, no more
    assert environment["MUTANT_UNDER_TEST"] == ""  # the unmutated code
    assert Path.cwd() == ws.dir


# --- main: the session's exit code ----------------------------------------------------------------------


class Session:
    """`session.main` with mutmut's run and the complete baseline replaced; what each was asked."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, ws: Workspace) -> None:
        self.ws, self.baselines, self.runs = ws, 0, 0
        self.hooks: list[dict[str, object]] = []
        self.logs: list[Workspace] = []
        self.mutmut: int | BaseException = 0
        monkeypatch.setattr(session, "bind_to_parent", lambda: None)
        monkeypatch.setattr(os, "register_at_fork", lambda **hooks: self.hooks.append(hooks))
        monkeypatch.setattr(session, "run_mutmut", self.run_mutmut)
        monkeypatch.setattr(session, "complete_baseline", self.complete_baseline)
        monkeypatch.setattr(session, "_generated", self.generated)
        monkeypatch.setattr(session, "_take_log", self.logs.append)  # the test's own output stays where it is
        self.given: launch.Assignment | None = launch.Assignment(ws.dir, "run1", ["torch"], 1)
        monkeypatch.setattr(launch, "assignment", lambda: self.given)
        monkeypatch.chdir(ws.dir.parent)
        self.generator = 0  # the exit code of the process generating the mutants

    def generated(self, ws: Workspace, run_id: str, warm_up: list[str]) -> int:
        assert (ws, run_id, warm_up) == (self.ws, "run1", ["torch"]) and Path.cwd() == self.ws.dir
        generate(ws)
        state.write_generation(ws, run_id, [FILE])
        return self.generator

    def run_mutmut(
        self, ws: Workspace, run_id: str, packages: dict[str, Path], files: list[str], suite: Suite | None, rounds: int
    ) -> int:
        assert (ws, run_id, packages, files, suite, rounds) == (self.ws, "run1", {"vllm": INSTALLED}, [FILE], None, 1)
        self.runs += 1
        assert Path.cwd() == self.ws.dir and os.environ["WARNONCE_GUARD_RUN_ID"] == "run1"
        if isinstance(self.mutmut, BaseException):
            raise self.mutmut
        return self.mutmut

    def complete_baseline(self, ws: Workspace) -> int:
        self.baselines += 1
        return 1

    def main(self) -> int:
        return session.main([str(self.ws.dir.parent)])


@pytest.fixture
def main(ws: Workspace, monkeypatch: pytest.MonkeyPatch, environment: dict[str, str]) -> Session:
    return Session(monkeypatch, ws)


def test_a_session_whose_guards_all_ran_exits_0_and_its_workers_die_with_it(main: Session) -> None:
    assert main.main() == 0
    assert main.baselines == 0
    assert main.hooks == [{"after_in_child": session.die_with_parent}]
    assert main.logs == [main.ws]  # its output went to the workspace's log


def test_a_session_never_given_a_workspace_ends_interrupted_and_touches_nothing(main: Session) -> None:
    main.given = None  # the run's verdicts stood, or it ended before it knew its workspace
    assert main.main() == ExitCode.INTERRUPTED
    assert main.runs == 0 and main.logs == [] and Path.cwd() == main.ws.dir.parent


def test_a_session_takes_the_workspace_log_with_what_it_said_before_and_its_children_write_there(
    ws: Workspace,
) -> None:
    ws.log_file.write_text("an earlier run's log\n", encoding="utf-8")
    code = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from warnonce_guard.mutations.engine import session\n"
        "from warnonce_guard.mutations.workspace import Workspace\n"
        "print('before', flush=True)\n"
        "session._take_log(Workspace(Path(sys.argv[1])))\n"
        "print('after', flush=True)\n"
        "if os.fork() == 0:\n"
        "    print('child', file=sys.stderr, flush=True)\n"
        "    os._exit(0)\n"
        "os.wait()\n"
    )
    with tempfile.TemporaryFile() as early:  # as `launch.start_session` starts it: what it says before is kept
        done = subprocess.run([sys.executable, "-c", code, str(ws.dir)], stdout=early, stderr=early, timeout=60)
        early.seek(0)
        assert done.returncode == 0 and early.read() == b""  # taken
    assert ws.log_file.read_text(encoding="utf-8") == "an earlier run's log\nbefore\nafter\nchild\n"
    done = subprocess.run([sys.executable, "-c", code, str(ws.dir)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "before\n"  # started by hand: its terminal keeps what it said


@pytest.mark.parametrize("code", [session.ENGINE_FAILED, session.WRITE_REFUSED, int(ExitCode.INTERRUPTED)])
def test_a_generator_that_did_not_generate_is_the_sessions_exit_code_and_mutmut_never_runs(
    main: Session, code: int
) -> None:
    main.generator = code  # it said why in the log, or was never told to go
    assert main.main() == code
    assert main.runs == 0


def test_when_the_clean_guards_fail_every_guard_runs_once_more_and_the_session_exits_1(main: Session) -> None:
    main.mutmut = 1  # mutmut stops at the first failing guard of its clean run
    assert main.main() == 1
    assert main.baselines == 1


def test_a_guard_error_in_the_session_is_one_line_and_its_own_exit_code(
    main: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    main.mutmut = SeamMismatch("mutmut 3.9.0 is not the version the engine was written against")
    assert main.main() == SeamMismatch.exit_code == ExitCode.ENVIRONMENT
    assert capsys.readouterr().err == (
        "warnonce-guard: error: mutmut 3.9.0 is not the version the engine was written against\n"
    )


def test_guards_that_cannot_write_their_records_are_write_refused_naming_the_attribution_folder(
    main: Session, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    main.mutmut = 1  # mutmut's clean run failed: its guards could not write their records either
    monkeypatch.setattr(session, "complete_baseline", lambda ws: UNWRITTEN_STATUS)
    assert main.main() == session.WRITE_REFUSED  # not 1: that would read as "the clean guards failed"
    err = capsys.readouterr().err
    assert err.startswith("warnonce-guard: error: ") and str(main.ws.attribution) in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("number", [errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM])
def test_a_write_the_disk_refuses_in_the_session_is_write_refused_in_one_line(
    main: Session, capsys: pytest.CaptureFixture[str], number: int
) -> None:
    main.mutmut = OSError(number, os.strerror(number), str(main.ws.mutants / "x.meta"))
    assert main.main() == session.WRITE_REFUSED
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.splitlines()) == 1 and os.strerror(number) in err


def test_an_os_error_that_is_not_a_refused_write_is_a_crash_with_its_traceback(
    main: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    main.mutmut = FileNotFoundError(errno.ENOENT, "No such file or directory", "mutants/x.py")
    assert main.main() == session.ENGINE_FAILED
    assert "Traceback" in capsys.readouterr().err


def test_a_crash_of_mutmut_is_engine_failed_with_its_traceback_never_1(
    main: Session, capsys: pytest.CaptureFixture[str]
) -> None:
    main.mutmut = KeyError("tests_by_mangled_function_name")  # as mutmut's load_stats does on a bad stats file
    assert main.main() == session.ENGINE_FAILED  # 1 would read as "the clean guards failed"
    assert "KeyError: 'tests_by_mangled_function_name'" in capsys.readouterr().err
    assert main.baselines == 0


# --- the generator's descriptions --------------------------------------------------------------------------


def test_the_generator_describes_each_site_file_as_mutmut_makes_it_and_nothing_else(
    ws: Workspace, mutmut_config: Path
) -> None:
    from mutmut.mutation.file_mutation import mutate_file_contents

    sites = sites_in_source(INTERFACE, FILE, "vllm.platforms.interface")
    record = session.described_into(ws, [FILE], ["vllm"], anchors_of(sites))
    with seam.our_operators(["vllm"], anchors_of(sites)), seam.each_generation(record):
        written = mutate_file_contents(FILE, INTERFACE).mutant_names
        mutate_file_contents("vllm/other.py", INTERFACE)  # not a file it was told to mutate

    made = naming.read_made(ws.made(FILE), INTERFACE)
    assert sorted(m.mutant_id.rpartition(".")[2] for m in made) == sorted(written) and len(written) == 3
    assert not ws.made("vllm/other.py").exists()


def test_a_description_that_fails_is_left_to_the_parent_and_generation_goes_on(
    ws: Workspace, mutmut_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mutmut.mutation.file_mutation import mutate_file_contents

    def unaccounted(*args: object) -> None:
        raise naming.MutantsUnaccounted("a mutant changes no logger call")

    sites = sites_in_source(INTERFACE, FILE, "vllm.platforms.interface")
    naming.write_made(ws.made(FILE), INTERFACE, [])  # an earlier run's, which must not stand in for this one
    monkeypatch.setattr(naming, "describe", unaccounted)
    with (
        seam.our_operators(["vllm"], anchors_of(sites)),
        seam.each_generation(session.described_into(ws, [FILE], ["vllm"], anchors_of(sites))),
    ):
        assert len(mutate_file_contents(FILE, INTERFACE).mutant_names) == 3  # mutmut's generation is untouched

    assert not ws.made(FILE).exists()  # the parent describes it itself, and raises what fails there


# --- the warmed session: which process runs mutmut ----------------------------------------------------------

WARMING_SESSION = """
import os, signal, sys
from warnonce_guard.mutations.engine import session

FIRST, MODE = os.getpid(), os.environ["WARMING"]
session.bind_to_parent = lambda: None
session.generate = lambda *args: None  # as if it had generated
session._warm_up = lambda modules: None


def not_warmed(ws):
    if MODE == "killed-while-importing":
        os.kill(os.getpid(), signal.SIGKILL)
    if MODE == "exits-while-importing":
        raise SystemExit(0)
    return "a site module reached" if MODE == "refused" else None


def tested(ws, run_id, rounds):
    print("tested in the " + ("first process" if os.getpid() == FIRST else "warmed child"), flush=True)
    if MODE == "killed-after-taking-over":
        os.kill(os.getpid(), signal.SIGKILL)
    return 0


session._not_warmed, session._tested = not_warmed, tested
session._open_end_pipe()  # as the module ends (`__main__`)
code = session.main(sys.argv[1:])
session.say_ended(code)
session.exit_without_teardown(code)
"""


@pytest.mark.parametrize(
    ("mode", "tested_in", "code"),
    [
        ("warmed", "warmed child", 0),
        ("refused", "first process", 0),
        ("killed-while-importing", "first process", 0),  # the OOM killer's choice: the first process never imported
        ("exits-while-importing", "first process", 0),
        ("killed-after-taking-over", "warmed child", -signal.SIGKILL),  # the session it became died: so does it
    ],
)
def test_mutmut_runs_in_the_warmed_child_once_it_took_over_else_in_the_session_that_never_imported_the_target(
    ws: Workspace, mode: str, tested_in: str, code: int
) -> None:
    given = {"workspace": str(ws.dir), "run": "run1", "warm_up": [], "confirm": 1}
    end, write_end = os.pipe()
    try:
        done = subprocess.run(
            [sys.executable, "-c", WARMING_SESSION, str(ws.dir.parent)],
            input=json.dumps(given) + "\n[]\n",  # as `assign`, then `tell_to_mutate`, write them
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "WARMING": mode, protocol.SESSION_END: str(write_end)},
            pass_fds=(write_end,),
        )
    finally:
        os.close(write_end)
    with os.fdopen(end, "rb") as pipe:
        ended = pipe.read()
    said = ws.log_file.read_text(encoding="utf-8") if ws.log_file.exists() else ""
    assert done.returncode == code, done.stdout + done.stderr + said
    assert said.count("tested in the ") == 1 and f"tested in the {tested_in}" in said
    assert "Traceback" not in said + done.stderr
    # the process mutmut ran in said the code once, and nothing else did (the generator, a warmer that did not take
    # over, the first process once the warmer took over); one killed before it could says nothing: it is waited for
    assert ended == (b"" if code < 0 else f"{code}\n".encode())


def test_the_processor_is_asked_before_torch_so_that_no_later_fork_asks_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python's `platform` forks `uname -p` on the first question only; the session asks before torch is imported,
    and the processes it forks afterwards (vLLM's platform detection in the guards' first run) find the answer."""
    import platform

    monkeypatch.setattr(platform, "_uname_cache", None)
    asked: list[object] = []
    monkeypatch.setattr(platform._Processor, "get", classmethod(lambda cls: asked.append(cls) or "x86_64"))  # type: ignore[attr-defined]
    session._processor_known()
    assert len(asked) == 1 and platform.uname().processor == "x86_64"
    assert platform.processor() == "x86_64" and len(asked) == 1  # asked again: the answer kept, no second fork


class _Stop(Exception):
    pass


def test_the_session_asks_the_processor_after_forking_the_generator_and_before_importing_torch(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its only fork before then is the generator's (which never asks); every process forked after torch inherits."""
    done: list[str] = []

    def warm_up(modules: list[str]) -> None:
        done.append(f"import {' '.join(modules)}")
        raise _Stop  # what comes next (the warmer's fork) is not this test's

    monkeypatch.setattr(session, "_fork", lambda: done.append("fork") or 4242)  # the generator's pid, in the parent
    monkeypatch.setattr(session, "_processor_known", lambda: done.append("processor"))
    monkeypatch.setattr(session, "_warm_up", warm_up)
    with pytest.raises(_Stop):
        session._generated(ws, "run1", ["torch"])
    assert done == ["fork", "processor", "import torch"]


# --- Python's cycle collector: off for the session's imports, on for what it runs ---------------------------------

COLLECTOR_AT_IMPORT = """
import gc, runpy, sys

class SaysTheCollector:
    def find_spec(self, name, path=None, target=None):
        if name == "pytest":
            print(gc.isenabled(), flush=True)
        return None

sys.meta_path.insert(0, SaysTheCollector())
run_as, sys.argv[1:] = sys.argv[1], sys.argv[2:]
runpy.run_module("warnonce_guard.mutations.engine.session", run_name=run_as, alter_sys=True)
"""


@pytest.mark.parametrize(("run_as", "collecting"), [("__main__", False), ("imported", True)])
def test_the_sessions_own_process_imports_with_the_collector_off_and_no_importer_of_it_does(
    ws: Workspace, run_as: str, collecting: bool
) -> None:
    """Run as the session (`python -m`), its imports (then torch's and vLLM's) make objects that live as long as it
    does, which every collection would scan again; a process that imports the module (a test) keeps its collector."""
    done = subprocess.run(
        [sys.executable, "-c", COLLECTOR_AT_IMPORT, run_as, str(ws.dir.parent)],
        stdin=subprocess.DEVNULL,  # no workspace is ever given: the session ends
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.stdout.splitlines()[:1] == [str(collecting)], done.stderr


def test_the_runner_turns_the_collector_on_before_anything_it_tests(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    done: list[str] = []

    def staged_packages(ws: Workspace) -> None:
        done.append("read the workspace")
        raise _Stop

    monkeypatch.setattr(session, "collect_from_here", lambda: done.append("collector on"))
    monkeypatch.setattr(session, "staged_packages", staged_packages)
    with pytest.raises(_Stop):
        session._tested(ws, "run1", 1)
    assert done == ["collector on", "read the workspace"]


def test_the_generator_turns_the_collector_on_once_it_imported_what_generation_uses(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    done: list[str] = []

    def exit_without_teardown(code: int) -> None:
        raise _Stop

    monkeypatch.setattr(session, "_fork", lambda: 0)  # in the generator
    monkeypatch.setattr(session.os, "nice", lambda increment: 0)
    monkeypatch.setattr(session, "_loaded", lambda modules: done.append("imported"))
    monkeypatch.setattr(session, "collect_from_here", lambda: done.append("collector on"))
    monkeypatch.setattr(launch, "files_to_mutate", lambda: done.append("told") and None)
    monkeypatch.setattr(session, "exit_without_teardown", exit_without_teardown)
    with pytest.raises(_Stop):
        session._generated(ws, "run1", ["torch"])
    assert done == ["imported", "collector on", "told"]
