"""A run whose workspace holds no complete one: the mutmut session (mutations.engine.session) started at once, the
sites found and staged meanwhile, mutmut told to go and followed, and the verdicts it left collected and judged.

`mutations.run` imports it only then: a run that reads its verdicts back needs none of the engine.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import replace

from warnonce_guard.common.console import RunProgress
from warnonce_guard.common.errors import (
    BadRecord,
    EngineFailed,
    MutantsUnaccounted,
    NothingToCheck,
    PlatformImportFailed,
    StagingFailed,
    TargetChanged,
)
from warnonce_guard.common.files import write_atomic
from warnonce_guard.guards.sessions import baseline_sessions, mutant_session_path, read_session, unwritable
from warnonce_guard.mutations import judge, stage
from warnonce_guard.mutations.engine import attempts, confirm, launch, layout, running, state
from warnonce_guard.mutations.engine.status import NOTHING_COLLECTED, SUITE_BROKEN, WRITE_REFUSED
from warnonce_guard.mutations.engine.watch import Watch, stall_limit
from warnonce_guard.mutations.engine.workers import forget_attempt
from warnonce_guard.mutations.identify import NamedMutant, read_identities, write_identities
from warnonce_guard.mutations.records import OperatorInfo, RunInfo, RunResult, SuiteInfo
from warnonce_guard.mutations.stage import Key
from warnonce_guard.mutations.suite import Suite, SuiteBaseline, read_baseline
from warnonce_guard.mutations.workspace import WorkRoot, Workspace
from warnonce_guard.rule.site_row import NO_SITE, Site
from warnonce_guard.rule.target import Target

SESSION_FINISHED = (0, 1)  # mutmut ran every mutant (0), or stopped because the clean guards failed (1)


def run_session(
    ws: Workspace,
    session: subprocess.Popen[bytes],
    run_id: str,
    sites: list[Site],
    packages: list[str],
    files: list[str],
    progress: RunProgress | None = None,
) -> int:
    """Tell the session to run mutmut on `files`; meanwhile this process names the mutants (the other core is free
    while mutmut imports vLLM) and follows the session's progress from the exit codes it records. Its exit code
    (`started_session` stops a session this leaves running)."""
    # every wait below ends if the session stops working, naming the tests that were running then
    watch = Watch(session, lambda: stall_limit(ws), running=lambda: running.running_now(ws.attribution))
    launch.tell_to_mutate(session, files)
    if _wait_for_generation(ws, run_id, session, watch):
        named = write_identities(ws, sites, packages)
        if progress is not None:
            return _follow(ws, files, len(named), session, progress, watch)
    return _wait(session, watch)


def _tested(ws: Workspace, files: list[str]) -> int:
    """How many mutants have an exit code so far (0 while a `.meta` is being replaced or is unreadable)."""
    try:
        codes, _ = state.read_exit_codes(ws, files)
    except (BadRecord, OSError):
        return 0
    return sum(code is not None for code in codes.values())


def _follow(
    ws: Workspace,
    files: list[str],
    total: int,
    session: subprocess.Popen[bytes],
    progress: RunProgress,
    watch: Watch,
) -> int:
    """Say when generation ended, then count tested mutants until the session ends; its exit code."""
    already = _tested(ws, files)
    progress.say(f"mutants generated and named: {total} ({already} with a verdict from an earlier run)")
    progress.track("guards on the unmutated code, then the mutants", total)
    code = _wait(session, watch, lambda: progress.advance_to(_tested(ws, files)))
    progress.end(f"mutants tested: {_tested(ws, files)} of {total}")
    return code


def _wait(session: subprocess.Popen[bytes], watch: Watch, tick: Callable[[], object] = lambda: None) -> int:
    """The session's exit code, once it ended (or `SessionLost` once it stopped working); `tick` every 0.25 s."""
    while True:
        tick()
        if (code := launch.ended(session, 0.25)) is not None:
            return code
        watch.check()


def _generation_recorded(ws: Workspace, run_id: str) -> bool:
    """Whether the session has recorded this run's generation (`generation.json`)."""
    try:
        return state.read_generation(ws)[0] == run_id
    except BadRecord:
        return False


def _wait_for_generation(ws: Workspace, run_id: str, session: subprocess.Popen[bytes], watch: Watch) -> bool:
    """Until the session has recorded this run's generation (True) or ended without it (False)."""
    while not _generation_recorded(ws, run_id):
        if session.poll() is not None:
            return False
        watch.check()
        time.sleep(0.05)
    return True


def repair_workspace(ws: Workspace, files: list[str], say: Callable[[str], None]) -> None:
    """Before a session: discard mutmut state that does not validate, and clear exit codes no record backs."""
    if problem := unwritable(ws.attribution):
        raise StagingFailed(
            f"the guards' records cannot be written: {problem}; make it a writable folder (or remove it), "
            "free space on its disk, or pass --work-dir elsewhere"
        )
    for discarded in state.validate(ws, files):
        say(f"{discarded}; it is made again")
    try:
        ledger = attempts.read(ws.attempts_file)
    except BadRecord as err:
        say(f"discarded {ws.attempts_file} ({err}); mutants killed or timed out once are tested again")
        ws.attempts_file.unlink()
        ledger = {}
    if ws.identities_file.exists() and (problem := _identities_problem(ws)):
        say(f"discarded {ws.identities_file} ({problem}); the mutants are named again")
        ws.identities_file.unlink()
    generated = [f for f in files if layout.meta(ws, f).exists()]
    try:
        codes, _ = state.read_exit_codes(ws, generated)
    except BadRecord as err:  # validate() left only valid files: a change under our feet
        raise EngineFailed(f"{err}; remove {ws.dir} and run again") from None
    sessions = {name: s for name in codes if (s := read_session(mutant_session_path(ws.attribution, name)))}
    stale = judge.retest(codes, sessions, ledger, _last_tests(ws))
    if cleared := state.reset(ws, generated, stale):
        say(f"{cleared} mutant result(s) had no finished guard record behind them (an interrupted run): testing again")
    for name, code in codes.items():  # whatever mutmut tests now must leave a record of its own, and name its own test
        if code is None or name in stale:
            forget_attempt(ws, name)
    running.ended(ws.attribution, "")  # the sessions on the unmutated code run again: none of theirs is left


def _identities_problem(ws: Workspace) -> str | None:
    """Why identities.json cannot be reused: it does not validate, or names other mutants than mutmut made."""
    try:
        named = read_identities(ws)
    except BadRecord as err:
        return str(err)
    try:
        _, generation = state.read_generation(ws)
    except BadRecord:
        return "no finished generation to check it against"
    made = sorted(name for entry in generation.values() for name in entry["mutants"])
    if sorted(m.mutant_id for m in named) != made:
        return "its mutants are not the ones mutmut generated"
    return None


def _last_tests(ws: Workspace) -> dict[str, str]:
    """The test each unfinished session of a suite was running, by mutant (`engine.running`)."""
    return {mutant: test for mutant, (_, test) in running.last_tests(ws.attribution).items()}


def collect_result(
    ws: Workspace,
    target: Target,
    run_id: str,
    sites: list[Site],
    named: list[NamedMutant],
    started: float,
    suite: Suite | None = None,
    rounds: int = 1,
) -> RunResult:
    """The run's verdicts from what the session left in the workspace: scored by the guards, or by `suite`; each
    kill confirmed by `rounds` re-runs of its tests."""
    from warnonce_guard.mutations.operators import OPERATORS  # libcst: a run that reads its result back needs none

    files = sorted({site.file for site in sites})
    try:
        codes, durations = state.read_exit_codes(ws, files)
    except BadRecord as err:
        raise EngineFailed(f"{err}; run again (the workspace is checked and repaired first)") from None
    sessions = {m.mutant_id: s for m in named if (s := read_session(mutant_session_path(ws.attribution, m.mutant_id)))}
    try:
        ledger = attempts.read(ws.attempts_file)
    except BadRecord:
        ledger = {}  # a stored code the ledger no longer backs is "not run": tested again by the next run
    checks = confirm.read_or_empty(ws.confirmations_file)  # a kill it does not confirm is "not run" yet
    last_tests = _last_tests(ws)
    site_baselines, suite_baseline = [], _suite_baseline(ws) if suite is not None else None
    if suite is None:
        site_baselines = judge.site_baselines(sites, baseline_sessions(ws.attribution, run_id))
    made, known = set(codes), {m.mutant_id for m in named}
    if made != known:
        raise MutantsUnaccounted(
            f"mutmut's mutants and ours differ: only mutmut {sorted(made - known)}, only ours {sorted(known - made)}"
        )
    flaky = checks.flaky() | (suite_baseline.flaky if suite_baseline is not None else {})
    failing = (
        {test: why for test, why in suite_baseline.failures.items() if test not in flaky} if suite_baseline else {}
    )
    return RunResult(
        vllm_version=target.version,
        vllm_commit=target.commit,
        target=f"{target.origin} at {target.package_dir}",
        sources={file: (ws.dir / file).read_text(encoding="utf-8") for file in files},
        operators=[OperatorInfo(name, op.description) for name, op in OPERATORS.items()],
        baselines=site_baselines,
        mutants=judge.verdicts(
            named, sites, site_baselines, codes, durations, sessions, ledger, suite_baseline, checks, last_tests
        ),
        duration_s=time.monotonic() - started,
        suite=SuiteInfo(suite.describe(), failing) if suite and suite_baseline else None,
        flaky=dict(sorted(flaky.items())),
        confirmed_by=rounds,
        not_applied=_not_applied(sites, named),
    )


def _not_applied(sites: list[Site], named: list[NamedMutant]) -> dict[str, dict[str, str]]:
    """Per guarded site, the operators that made no mutant of it and why (none: the site is left out)."""
    from warnonce_guard.mutations.operators import not_applied

    made: dict[str, set[str]] = {}
    for mutant in named:
        made.setdefault(mutant.site_id, set()).add(mutant.operator)
    found = {site.id: not_applied(site, made.get(site.id, ())) for site in sites if site.mutable or site.guarded}
    return {site_id: why for site_id, why in found.items() if why}


def _suite_baseline(ws: Workspace) -> SuiteBaseline:
    """What the suite did on the unmutated code, as its stats session recorded it."""
    try:
        return read_baseline(ws.suite_baseline)
    except BadRecord as err:
        raise EngineFailed(f"the suite's run on the unmutated code left no record ({err}); run again") from None


def _suite_session_ended(ws: Workspace, suite: Suite, code: int, said: str) -> None:
    """What a suite's session's exit code says, when it is no verdict: raise the error naming it (0 is one)."""
    if code == 0:
        return
    if code == NOTHING_COLLECTED:
        raise NothingToCheck(f"{suite.describe()} collected no test: nothing was checked")
    if code == SUITE_BROKEN:
        raise PlatformImportFailed(
            f"{suite.describe()} could not be run on the unmutated code (errors while pytest collected it){said}; "
            f"run pytest on it there to see them (mutmut's log: {ws.log_file})"
        )
    guess = (  # when the session said nothing itself
        ""
        if said
        else ": a test that passed on the unmutated code failed in mutmut's clean run, or no test failed with every "
        "mutant forced to fail"
    )
    raise EngineFailed(
        f"the mutmut session stopped before the mutants (exit code {code}){said}{guess}; see {ws.log_file} "
        "(finished verdicts are kept: the next run tests the rest)"
    )


def _refused_the_session(ws: Workspace, code: int, log_start: int) -> None:
    """Raise `StagingFailed` naming the folder when the work directory refused the session a write: the session
    said so (`WRITE_REFUSED`), or a probe write fails now."""
    problem = unwritable(ws.attribution) or _workspace_unwritable(ws)
    if problem is None and code != WRITE_REFUSED:
        return
    why = problem or _session_said(ws, log_start) or "a write was refused"
    raise StagingFailed(
        f"cannot write in the work directory {ws.dir}: {why}; free space on its disk, make it writable, or pass "
        f"--work-dir elsewhere (finished verdicts are kept; see {ws.log_file})"
    )


def _workspace_unwritable(ws: Workspace) -> str | None:
    probe = ws.dir / ".write-probe"
    try:
        write_atomic(probe, "{}")
        probe.unlink()
    except OSError as err:
        return f"{ws.dir}: {err.strerror or err}"
    return None


def _session_said(ws: Workspace, since: int) -> str | None:
    """The session's own one-line error, the last it appended to its log after offset `since` (an earlier
    run's session wrote before it), None when it printed none."""
    try:
        with ws.log_file.open("rb") as log:
            log.seek(max(since, log.seek(0, os.SEEK_END) - 8192))
            tail = log.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    prefix = "warnonce-guard: error: "
    lines = [line.removeprefix(prefix) for line in tail.splitlines() if line.startswith(prefix)]
    return lines[-1] if lines else None


def tested(
    ws: Workspace,
    root: WorkRoot,
    key: Key,
    suite_files: list[tuple[str, int, int]] | None,
    find_sites: Callable[[], list[Site]],
    platform: str | None,
    progress: RunProgress,
    started: float,
    run: RunInfo,
    session: subprocess.Popen[bytes],
    log_start: int,
) -> RunResult:
    """The run in `ws`, which holds no complete one, by `session` (started for `run`, its log `log_start` bytes
    long before): the sites found and staged, mutmut told to go and followed; the verdicts it left (the fingerprint
    checked again: a target changed meanwhile is `TargetChanged`)."""
    say = progress.say
    target, packages, suite = key.target, key.packages, key.suite
    run_id = run.run_id
    sites = stage.workspace_sites(ws, find_sites, say)
    guarded = [site for site in sites if site.guarded]
    if not guarded:
        raise NothingToCheck(f"{NO_SITE} in {target.describe()}")
    if not any(site.mutable for site in sites):
        raise NothingToCheck(
            f"no *_once call recognised at a guarded kernel import in {target.describe()}: no operator can "
            "put the bug back; `warnonce-guard guards` drives its sites"
        )
    for line in stage.prepare(ws, target, sites, packages, suite, key.timeout):
        say(line)
    root.prune(ws)
    files = stage.mutated_files(sites)
    from warnonce_guard.mutations.operators import OPERATORS

    via = f" through {platform}" if platform else ""
    scored = f"; scored by {suite.describe()}" if suite is not None else ""
    say(
        f"staged {target.describe()}{via}: {len(guarded)} site(s) in {len(files)} file(s), "
        f"{len(OPERATORS)} operators{scored}; work in {ws.dir}"
    )
    repair_workspace(ws, files, say)
    session_code = run_session(ws, session, run_id, sites, sorted(packages), files, progress)
    launch.keep_early_output(session, ws)  # it ended: what it said before it took the log, if it said anything
    if session_code != 0:  # a disk or folder that refused the session (or its guards) a write: never a verdict
        _refused_the_session(ws, session_code, log_start)
    said = f": {line}" if (line := _session_said(ws, log_start)) else ""
    if not _generation_recorded(ws, run_id):
        raise EngineFailed(
            f"the mutmut session ended (exit code {session_code}) before generating its mutants{said}; "
            f"see {ws.log_file}"
        )
    if suite is not None:
        _suite_session_ended(ws, suite, session_code, said)
    elif session_code not in SESSION_FINISHED:
        raise EngineFailed(
            f"the mutmut session failed (exit code {session_code}){said}; see {ws.log_file} "
            "(finished verdicts are kept: the next run tests the rest)"
        )
    if next(baseline_sessions(ws.attribution, run_id), None) is None:  # mutmut runs the clean guards first
        modules = ", ".join(sorted({site.module for site in guarded}))
        what = "the guards" if suite is None else suite.describe()
        who = "" if suite is None else "a conftest.py or test module of the suite, or "
        raise EngineFailed(
            f"the mutmut session ended (exit code {session_code}) before {what} ran on the unmutated code{said}: "
            f"{who}importing the target ({modules}) may end the process (sys.exit, os._exit); see {ws.log_file}"
        )
    named = write_identities(ws, sites, sorted(packages))
    result = collect_result(ws, target, run_id, guarded, named, started, suite, key.rounds)
    if key.fingerprint() != ws.dir.name:  # the workspace is named by the fingerprint
        stage.forget_staging(ws)
        what = key.changed(suite_files) or (
            f"{target.describe()} (edited or reinstalled, or warnonce-guard or one of "
            f"{', '.join(stage.VERDICT_DISTRIBUTIONS)} was)"
        )
        raise TargetChanged(
            f"{what} changed while this run tested it; its verdicts are not kept: run again once it is settled"
        )
    return replace(result, run=run)
