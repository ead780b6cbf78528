"""`warnonce-guard mutate`: check paths -> lock -> the workspace's stored verdicts, else a fresh run (`mutations.fresh`:
discover + stage while the session imports, repair, mutmut, verdicts) -> report -> gate."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from warnonce_guard.common import locks, ownership
from warnonce_guard.common.console import RunProgress, print_line, printable
from warnonce_guard.common.errors import (
    ExitCode,
    ExpectedSitesMissing,
    Interrupted,
    NothingToCheck,
    NotInstalled,
    UsageError,
)
from warnonce_guard.common.files import DISK_ERRORS, PERMISSION_ERRORS, cannot_write, write_atomic
from warnonce_guard.mutations import stage
from warnonce_guard.mutations.engine import launch, prewalk
from warnonce_guard.mutations.records import (
    GUARDED,
    NEUTRALIZED,
    NOT_RUN,
    SKIPPED,
    UNATTRIBUTED,
    RunInfo,
    RunResult,
)
from warnonce_guard.mutations.report import print_table, provenance, write_report
from warnonce_guard.mutations.report.printable import printable_result
from warnonce_guard.mutations.report.viewer import find_viewer
from warnonce_guard.mutations.stage import Key
from warnonce_guard.mutations.workspace import WorkRoot, Workspace
from warnonce_guard.rule.platforms import platform_sites, refuse_ending_plugins, registered_platforms, resolve_platform
from warnonce_guard.rule.site_row import Site
from warnonce_guard.rule.target import (
    PACKAGE,
    Target,
    activate,
    activated,
    check_importable,
    imported_first,
    resolve_target,
)

if TYPE_CHECKING:  # --expect-sites's module, imported by the runs that have one
    from warnonce_guard.rule import expected

# How many times each kill's tests are re-run by default: a suite's on the mutant and on the unmutated code (a test
# that fails 30% of the time gets through both about once in 23 kills), the guards' on the mutant (they are
# deterministic, and their baseline already ran each on the unmutated code).
CONFIRM_SUITE = 2
CONFIRM_GUARDS = 1


@dataclass(frozen=True)
class Paths:
    """The run's checked paths (absolute): nothing is written before all of them pass."""

    out: Path
    work_root: WorkRoot
    viewer_js: Path


def check_paths(out_dir: Path, work_dir: Path, viewer_js: Path | None, protected: list[ownership.Protected]) -> Paths:
    """Refuse bad `--out`, `--work-dir` and `--viewer-js` with one line each, before any work."""
    # --out first: with `--out .` the default --work-dir is inside it, and the line must name --out
    work_dir_itself = ownership.Protected("the work directory (--work-dir)", work_dir)
    out = ownership.check_out_dir(out_dir, [*protected, work_dir_itself])
    work = ownership.check_work_root(work_dir, [*protected, ownership.Protected("the report directory (--out)", out)])
    viewer = ownership.check_readable_file(viewer_js, "--viewer-js", utf8=True) if viewer_js else find_viewer()
    return Paths(out, WorkRoot(work), viewer)


def protected_paths(target: Target, packages: dict[str, Path]) -> list[ownership.Protected]:
    """What --out and --work-dir must keep clear of: each staged package, and the target's root."""
    kept = [ownership.Protected(f"the target package {name}/", folder) for name, folder in packages.items()]
    return [*kept, ownership.Protected("the target tree", target.root, inside_ok=True)]


def gate(result: RunResult, fail_under: float) -> list[str]:
    """Why the run fails, one line per reason; empty when it passes."""
    problems = []
    for baseline in result.baselines:
        if baseline.status != GUARDED:
            why = ", ".join(baseline.detectors) or baseline.detail
            problems.append(f"{baseline.site.id} is {baseline.status}: {why}")
    if not result.mutants:
        problems.append("no mutant was made: nothing was checked")
    if unattributed := result.count(UNATTRIBUTED):
        problems.append(f"{unattributed} mutant(s) change a call no discovered site has (a bug of the site rule)")
    for test, why in result.flaky.items():
        problems.append(f"{test} is flaky: {why}; none of its kills is counted")
    if not_run := result.count(NOT_RUN):
        problems.append(f"{not_run} mutant(s) have no finished run (tested again by the next run)")
    if (skipped := result.count(SKIPPED)) and not problems:
        problems.append(f"{skipped} mutant(s) were not run")
    score = result.score  # None when every mutant that ran was neutralized: then nothing of them can leak
    if score is None and not result.count(NEUTRALIZED):
        problems.append("no mutant ran, so there is no score")
    elif score is not None and score < fail_under:
        problems.append(f"score {score:.1f}% is below --fail-under {fail_under:g}%")
    return problems


def plan(target: Target, platform: str | None) -> tuple[dict[str, Path], str, Callable[[], list[Site]]]:
    """What to stage (package name -> directory), what else keys the workspace, and how to find sites."""
    packages = {PACKAGE: target.package_dir}
    if not platform:

        def found() -> list[Site]:
            from warnonce_guard.rule.sites import discover  # libcst: only when the workspace holds no sites yet

            return discover(target.root)

        return packages, "", found
    activate(target)
    sys.dont_write_bytecode = True  # importing the platform here writes no bytecode beside the user's sources
    chosen = resolve_platform(platform)
    if chosen.package != PACKAGE:
        packages[chosen.package] = chosen.root / chosen.package
    return packages, chosen.spec, lambda: platform_sites(chosen)


def mutate(
    vllm_src: str | None,
    out_dir: Path,
    work_dir: Path,
    fail_under: float,
    viewer_js: Path | None,
    console: Console,
    platform: str | None = None,
    tests: list[str] | None = None,
    tests_root: str | None = None,
    confirm: int | None = None,
    timeout: float | None = None,
    expect_sites: Path | None = None,
    session: subprocess.Popen[bytes] | None = None,
) -> int:
    """The whole run; its exit code (`ExitCode.CHECK_FAILED` when the gate fails). `tests` (and `tests_root`): the
    pytest suite that scores the mutants in place of the guards. `confirm`: how many times each kill's tests are
    re-run (default `CONFIRM_SUITE` for a suite, `CONFIRM_GUARDS` for the guards). `timeout`: the seconds a test may
    run before pytest-timeout stops it (its mutant `timeout`, naming it). `expect_sites`: the sites it must find.
    `session`: the mutmut session, started in `work_dir` as the command started (`launch.session_started`, which
    stops it); else a fresh run starts one."""
    started, run = time.monotonic(), RunInfo.begin()
    recorded = None
    if expect_sites is not None:
        from warnonce_guard.rule import expected  # only with --expect-sites

        recorded = expected.read(expect_sites)
    target = resolve_target(vllm_src)
    check_importable(target)
    if tests is None and tests_root is not None:
        raise UsageError("--tests-root names where --tests run: give --tests too")
    suite = None
    if tests is not None:
        from warnonce_guard.mutations.suite import resolve_suite  # only with --tests

        suite = resolve_suite(tests, tests_root)
    packages, extra, find_sites = plan(target, platform)
    with activated(target):  # a plugin that imports vLLM imports the target, as in the guards
        plugins = registered_platforms()
    refuse_ending_plugins(plugins)  # each guard (or test) would load them, and end with them
    paths = check_paths(out_dir, work_dir, viewer_js, protected_paths(target, packages))
    # the run's own outputs are no file of a suite: they change as it runs
    rounds = confirm or (CONFIRM_SUITE if suite is not None else CONFIRM_GUARDS)
    if timeout is not None and importlib.util.find_spec("pytest_timeout") is None:
        raise NotInstalled(
            "--timeout needs pytest-timeout, of the mutation extra: pip install 'warnonce-guard[mutation]'"
        )
    left_out = [paths.out, paths.work_root.dir, locks.out_lock(paths.out)]
    plugins_key = [plugin.key() for plugin in plugins]
    key = Key(target, packages, extra, suite, left_out, rounds, timeout, plugins_key, os.environ.get("VLLM_PLUGINS"))
    # --out is this run's from here to the report's last rename: another run writing there is refused
    with paths.work_root.claimed() as root, locks.out_dir(paths.out), RunProgress(console, started) as progress:
        suite_files = key.suite_files()
        ws = root.workspace(key.fingerprint(suite_files))
        try:
            # what the report's files and the table show (checked once: `printable_result` knows its own)
            result = printable_result(
                _run(ws, root, key, suite_files, find_sites, platform, progress, started, run, session)
            )
            write_report(result, paths.out, paths.viewer_js)
        except NothingToCheck:
            if recorded is not None and expect_sites is not None:  # every guard gone: that is the verdict, named
                from warnonce_guard.rule import expected

                expected.compare(recorded, find_sites()).check(expect_sites)
            raise
        except Interrupted as stop:
            left = provenance.left_in(paths.out, run)  # an earlier report, perhaps of another target: say whose
            stop.detail = f"finished verdicts are kept in {ws.dir}; the next run tests the rest" + (
                f"; {left}" if left else ""
            )
            raise
        except OSError as err:
            if not _disk_refused_the_workspace(err, ws):
                raise  # not the work directory's disk (stdout, /dev/shm) or not a disk's refusal: a traceback
            fix = "free space on its disk or pass --work-dir elsewhere (finished verdicts are kept)"
            raise cannot_write(err, f"cannot write in the work directory {ws.dir}", fix) from None
        progress.say(f"report written to {paths.out}")
    print_table(result, console)
    print_line(console, f"report: {paths.out}; mutmut's log: {ws.log_file}")
    problems = gate(result, fail_under)
    if recorded is not None and expect_sites is not None:
        problems += _sites_not_found(
            expect_sites,
            recorded,
            stage.workspace_sites(ws, find_sites, lambda line: print_line(console, line)),
            console,
        )
    for problem in problems:
        console.print(f"[red]gate:[/] {printable(problem)}", soft_wrap=True)
    return ExitCode.CHECK_FAILED if problems else ExitCode.OK


def _sites_not_found(path: Path, recorded: list[expected.Expected], sites: list[Site], console: Console) -> list[str]:
    """The gate's line for the sites `path` records that this run did not find (none: no line); a note for new ones."""
    from warnonce_guard.rule import expected

    comparison = expected.compare(recorded, sites)
    for line in comparison.notes(path):
        console.print(f"note: {printable(line)}", soft_wrap=True, markup=False)
    try:
        comparison.check(path)
    except ExpectedSitesMissing as err:
        return [str(err)]
    return []


def _disk_refused_the_workspace(err: OSError, ws: Workspace) -> bool:
    """Whether `err` is the disk refusing a write of a file in the workspace (or the system: another user's); only
    writes: reading the target never fails so (staging says so itself; then repairing state, naming, verdicts)."""
    if err.errno not in DISK_ERRORS | PERMISSION_ERRORS:
        return False
    names = [os.fsdecode(name) for name in (err.filename, err.filename2) if isinstance(name, (str, bytes))]
    return any(Path(name).resolve().is_relative_to(ws.dir.resolve()) for name in names)


def read_result(ws: Workspace) -> RunResult | None:
    """The verdicts of the workspace's last complete run, if they were stored and still read back whole."""
    try:
        return RunResult.from_json(json.loads(ws.result_file.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def store_result(ws: Workspace, result: RunResult) -> None:
    """Keep a complete run's verdicts (atomically); a result with a verdict still to come is not kept."""
    if result.final:
        write_atomic(ws.result_file, json.dumps(result.to_json()))
    else:
        ws.result_file.unlink(missing_ok=True)


def _run(
    ws: Workspace,
    root: WorkRoot,
    key: Key,
    suite_files: list[tuple[str, int, int]] | None,
    find_sites: Callable[[], list[Site]],
    platform: str | None,
    progress: RunProgress,
    started: float,
    run: RunInfo,
    session: subprocess.Popen[bytes] | None = None,
) -> RunResult:
    say = progress.say
    ws.create()
    stored = read_result(ws)
    folders = [folder for _, folder in sorted(key.packages.items())]  # in the order the fingerprint takes them
    if stored is not None:  # the same target, tool and engine: nothing to stage, import or run
        if session is not None:
            launch.dismiss(session)
        root.prune(ws)
        prewalk.remember(root.dir, folders)  # likely again: the next run walks them ahead, and starts no session
        say(f"nothing changed since the last complete run in {ws.dir}: its {len(stored.mutants)} verdicts stand")
        # a new run writes the report; the verdicts stay those of the run that tested them, and it says so
        return replace(stored, duration_s=time.monotonic() - started, run=run, verdicts_from=stored.run)
    prewalk.forget(root.dir)  # until verdicts stand again, the next run starts its session at once
    log_start = _log_size(ws)
    # the session's id is the run's, as the report names it; the session has its workspace before this process
    # imports the engine's side (`mutations.fresh`), which a run that reads its verdicts back needs none of
    with started_session(ws, run.run_id, imported_first(key.target), key.rounds, session) as session:
        from warnonce_guard.mutations import fresh

        result = fresh.tested(
            ws, root, key, suite_files, find_sites, platform, progress, started, run, session, log_start
        )
    store_result(ws, result)
    if result.final:
        prewalk.remember(root.dir, folders)
    return result


@contextlib.contextmanager
def started_session(
    ws: Workspace, run_id: str, warm_up: list[str], rounds: int = 1, session: subprocess.Popen[bytes] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """The mutmut session (mutations.engine.session), `session` if the command started one, else started now, given
    `ws` to import `warm_up` while this process discovers and stages, and to confirm each kill by `rounds` re-runs;
    stopped with its group if it still runs when the block ends."""
    if session is None:
        session = launch.start_session(ws.dir.parent)  # in its work root
    try:
        launch.assign(session, ws, run_id, warm_up, rounds)
        yield session
    finally:
        launch.stop(session)


def _log_size(ws: Workspace) -> int:
    try:
        return ws.log_file.stat().st_size
    except OSError:
        return 0
