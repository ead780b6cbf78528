"""Fault injection: SIGINT, SIGTERM and SIGKILL at each phase of a run, then a rerun in the same work directory.

For every signal and phase the interrupted run must leave no process behind (within a second: not the
command line, not its forks, not the mutmut session or its workers), say at most one line and no
traceback, store no verdict the clean run contradicts, and change nothing in the user's tree; the
rerun must end with the clean run's verdicts. SIGINT goes to the whole process group, as a terminal's
Ctrl-C does; SIGTERM and SIGKILL to the command line's process.

A phase is hit by polling the work directory (tests/faults.py), not by sleeping; whether the signal
landed in time is checked again from what the run left. A signal that landed after its phase is
retried with a fresh work directory, and after `ATTEMPTS` the case is skipped saying so: it never
passes without having interrupted that phase.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from warnonce_guard.common.errors import ExitCode
from warnonce_guard.guards.sessions import mutant_session_path, read_session
from warnonce_guard.mutations.judge import judge
from warnonce_guard.mutations.records import KILLED, NOT_RUN

from tests.faults import (
    MAKING,
    PHASES,
    CleanRun,
    RunDirs,
    Started,
    TreeShape,
    answers_stop_signals,
    big_viewer,
    children_of,
    cli_args,
    fault_tree,
    fresh_dirs,
    hash_tree,
    in_phase,
    one_line_error,
    processes_mentioning,
    read_verdicts,
    run,
    send,
    session_pids,
    slow_interface,
    start,
    stopped_in,
    survivors,
    wait_until,
)

pytestmark = pytest.mark.slow

ATTEMPTS = 3
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGKILL: -signal.SIGKILL}
SAYS = {signal.SIGINT: "warnonce-guard: interrupted", signal.SIGTERM: "warnonce-guard: terminated"}


@pytest.fixture(scope="module")
def fault_shape() -> TreeShape:
    """Each phase long enough to poll for: 3000 files to stage, 400 functions to generate from, slow guards."""
    return TreeShape(filler_files=3000, filler_functions=400, guard_sleep_s=0.3)


@pytest.fixture(scope="module")
def report_viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A 200 MB viewer bundle: writing it into index.html keeps the report phase open for about a second."""
    path = big_viewer(tmp_path_factory.mktemp("big-viewer") / "viewer.js", 200)
    yield path
    path.unlink()


def interrupt(phase: str, sig: signal.Signals, dirs: RunDirs, viewer: Path) -> tuple[Started, str | None]:
    """Start a run, send `sig` once it is in `phase`; returns the run and why it missed the phase (None: hit)."""
    started = start(cli_args(dirs.tree, dirs.out, dirs.work, viewer), dirs.work.parent, dirs.work.parent / "logs")
    reached = wait_until(lambda: in_phase(phase, dirs), started.proc)
    if reached:
        send(started, sig)
    try:
        code = started.wait(timeout=120)
    finally:
        if started.proc.poll() is None:
            started.proc.kill()
    left = survivors(dirs.work, within_s=1.0)
    assert left == [], f"alive 1 s after the run ended ({sig.name} in {phase}): {left}"
    if not reached:
        return started, f"the run ended (exit {code}) before {phase} was seen"
    assert code == EXIT[sig], f"{sig.name} sent in {phase}, and the run did not stop on it (exit {code}): {started.err}"
    if not stopped_in(phase, dirs):
        return started, f"{sig.name} landed after {phase} was over (exit {code})"
    return started, None


def stored_verdicts(dirs: RunDirs) -> dict[str, str]:
    """What the interrupted run left for each mutant: mutmut's exit code judged with its guard session."""
    found = {}
    for ws in dirs.workspaces():
        for meta in (ws / "mutants").rglob("*.meta"):
            codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
            for mutant, code in codes.items():
                session = read_session(mutant_session_path(ws / "attribution", mutant))
                found[mutant] = str(judge(code, session).status)
    return found


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_interrupt_then_rerun(
    sig: signal.Signals,
    phase: str,
    untouched_user_tree: Path,
    small_viewer: Path,
    report_viewer: Path,
    clean_run: CleanRun,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    viewer = report_viewer if phase == "report" else small_viewer
    misses = []
    for dirs in fresh_dirs(tmp_path, untouched_user_tree, f"{sig.name}-{phase}"):
        started, missed = interrupt(phase, sig, dirs, viewer)
        if missed is None:
            break
        misses.append(missed)
        if len(misses) == ATTEMPTS:
            pytest.skip(f"could not land {sig.name} in {phase} in {ATTEMPTS} attempts: {'; '.join(misses)}")

    # The interrupted run: at most one line, no traceback, no false verdict stored.
    assert "Traceback" not in started.err + started.out
    if sig == signal.SIGKILL:
        assert started.err == ""
    else:
        assert len(started.err.splitlines()) == 1 and started.err.startswith(SAYS[sig]), started.err
    stored = stored_verdicts(dirs)
    assert set(stored.values()) <= {str(KILLED), str(NOT_RUN)}, stored  # the clean run kills every mutant
    if phase == "mutants":
        assert str(NOT_RUN) in stored.values(), stored  # the rest is tested by the rerun
    assert not (dirs.out / "mutation.json").exists()

    # The rerun in the same work directory: the clean run's verdicts, nothing left beside --out.
    rerun = run(cli_args(dirs.tree, dirs.out, dirs.work, small_viewer), cwd=dirs.work.parent)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "Traceback" not in rerun.stdout + rerun.stderr
    assert read_verdicts(dirs.out) == clean_run.verdicts
    lock = ".report.warnonce-guard.lock"  # the report directory's lock file, which stays (see README)
    assert sorted(p.name for p in dirs.out.parent.iterdir()) == [lock, "logs", "report", "work"]
    record_property(
        "outcome",
        f"exit {started.proc.returncode}, {len(started.err.splitlines())} stderr line(s), "
        f"stored {sorted(stored.values())}, attempts {len(misses) + 1}; rerun exit {rerun.returncode}",
    )
    assert not dirs.glob(".vllm.tmp-*") and processes_mentioning(str(dirs.work)) == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_group_signal_while_the_session_imports_and_discovery_parses_is_one_line(
    sig: signal.Signals, tmp_path: Path, small_viewer: Path, record_property: Callable[[str, object], None]
) -> None:
    """The mutmut session is started (it imports, then waits) while discovery parses the site files in the run
    itself; a signal to the group (Ctrl-C from a terminal, SIGTERM from a CI runner cancelling a job) ends the run,
    which stops the session (in a group of its own)."""
    shape = TreeShape(filler_files=3000, filler_functions=1500)
    tree = fault_tree(tmp_path / "user" / "tree", shape)
    for name in ("cpu", "cuda"):  # three files with a site, each long: discovery parses for a while
        source = slow_interface(shape).replace("class Platform", f"class {name.title()}Platform")
        (tree / "vllm" / "platforms" / f"{name}.py").write_text(source)
    before = hash_tree(tree)
    misses = []
    for dirs in fresh_dirs(tmp_path, tree, "discovery"):
        started = start(cli_args(tree, dirs.out, dirs.work, small_viewer), tmp_path, dirs.work.parent / "logs")
        session = lambda pid=started.proc.pid: len(children_of(pid)) >= 1  # noqa: E731 (the session, started)
        forked = wait_until(session, started.proc)
        if forked:
            os.killpg(started.proc.pid, sig)
        code = started.wait()
        assert survivors(dirs.work) == []
        assert code == EXIT[sig] or not forked, f"{sig.name} sent, and the run did not stop on it: {started.err}"
        if forked and not dirs.glob("setup.cfg"):  # still staging and discovering when it landed
            break
        misses.append(f"exit {code}, {'after' if forked else 'before'} the session was seen")
        if len(misses) == ATTEMPTS:
            pytest.skip(f"could not land {sig.name} while the session imported and discovery ran: {'; '.join(misses)}")
    assert code == EXIT[sig] and "Traceback" not in started.err, started.err
    assert len(started.err.splitlines()) == 1 and started.err.startswith(SAYS[sig]), started.err
    assert hash_tree(tree) == before
    record_property("outcome", f"exit {code}: {started.err.strip()}")


@pytest.mark.parametrize("phase", ["baseline", "mutants"])
def test_the_session_killed_alone_is_one_line_then_a_rerun_gives_the_clean_verdicts(
    phase: str,
    untouched_user_tree: Path,
    small_viewer: Path,
    clean_run: CleanRun,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    """The OOM killer takes the mutmut session, not the command line: exit 4 naming mutmut's log, no report."""
    misses = []
    for dirs in fresh_dirs(tmp_path, untouched_user_tree, f"session-{phase}"):
        started = start(cli_args(dirs.tree, dirs.out, dirs.work, small_viewer), tmp_path, dirs.work.parent / "logs")
        reached = wait_until(lambda dirs=dirs: in_phase(phase, dirs), started.proc)
        sessions = session_pids(dirs.work)  # the session first, then its forks
        if reached and sessions:
            os.kill(sessions[0], signal.SIGKILL)
        code = started.wait()
        assert survivors(dirs.work) == []  # the session's workers die with it
        if reached and sessions and in_phase(phase, dirs):  # its state still shows the phase: killed in it
            break
        misses.append(f"exit {code}, {phase} {'over' if reached else 'not seen'}")
        if len(misses) == ATTEMPTS:
            pytest.skip(f"could not kill the session in {phase}: {'; '.join(misses)}")

    assert code == ExitCode.ENVIRONMENT, started.out + started.err
    assert "mutmut.log" in one_line_error(started.err)
    assert not dirs.out.exists()
    rerun = run(cli_args(dirs.tree, dirs.out, dirs.work, small_viewer), cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert read_verdicts(dirs.out) == clean_run.verdicts
    record_property("outcome", f"exit {code}: {started.err.strip()}; rerun exit {rerun.returncode}")


# --- signals at any instant, and more than one ------------------------------------------------------------


def started_run(dirs: RunDirs, viewer: Path) -> Started:
    return start(cli_args(dirs.tree, dirs.out, dirs.work, viewer), dirs.work.parent, dirs.work.parent / "logs")


def ended_with_one_line(started: Started, sig: signal.Signals, dirs: RunDirs) -> int:
    """Wait for the run; assert it ended with `sig`'s code and line alone, leaving no process behind."""
    try:
        code = started.wait(timeout=120)
    finally:
        if started.proc.poll() is None:
            started.proc.kill()
    assert survivors(dirs.work, within_s=1.0) == []
    assert "Traceback" not in started.err + started.out, started.err
    assert code == EXIT[sig], f"exit {code}: {started.err}"
    assert started.err.splitlines() == [started.err.strip()] and started.err.startswith(SAYS[sig]), started.err
    return code


@pytest.mark.parametrize("delay_s", [0.0, 0.002, 0.01, 0.03, 0.1, 0.3, 0.6, 1.0])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_signal_from_the_first_instruction_on_is_its_exit_code_and_one_line(
    sig: signal.Signals,
    delay_s: float,
    untouched_user_tree: Path,
    small_viewer: Path,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    """The first tenth of a second (the command line's imports) was a KeyboardInterrupt traceback with -2 or 1,
    and SIGTERM a silent -15. The interpreter's own start-up, before the entry module catches SIGTERM, is not
    ours to answer (README): the delay counts from then."""
    dirs = next(fresh_dirs(tmp_path, untouched_user_tree, f"{sig.name}-{delay_s}"))
    started = started_run(dirs, small_viewer)
    assert wait_until(lambda: answers_stop_signals(started.proc.pid), started.proc, timeout=30)
    time.sleep(delay_s)
    send(started, sig)
    ended_with_one_line(started, sig, dirs)
    record_property("outcome", started.err.strip())


@pytest.mark.parametrize(
    ("sig", "fraction"),
    [(signal.SIGINT, f) for f in (0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.9)]
    + [(signal.SIGTERM, f) for f in (0.2, 0.5, 0.8)],
    ids=lambda v: v.name if isinstance(v, signal.Signals) else f"{v:.0%}",
)
def test_a_signal_at_any_moment_of_making_the_mutants_is_one_line(
    sig: signal.Signals,
    fraction: float,
    untouched_user_tree: Path,
    small_viewer: Path,
    clean_run: CleanRun,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    """Making the mutants parses the site files with libcst, whose position recording turned the interrupt into a
    KeyError: exit 70 and megabytes of traceback. Several moments of it, not just its start: each a fraction of how
    long the clean run was seen making and naming them, so that a faster machine moves the moments with it; a signal
    that landed after naming is retried, and never passes as a hit."""
    window = clean_run.making_s
    assert window > 0.5, f"making and naming the mutants was seen for {window:.2f} s only: too short to aim at"
    misses = []
    for dirs in fresh_dirs(tmp_path, untouched_user_tree, "making"):
        started = started_run(dirs, small_viewer)
        assert wait_until(lambda dirs=dirs: in_phase(MAKING[0], dirs), started.proc, timeout=120)
        time.sleep(fraction * window)
        send(started, sig)
        ended_with_one_line(started, sig, dirs)
        if any(stopped_in(phase, dirs) for phase in MAKING):
            break
        misses.append(f"landed after naming ({fraction:.0%} of {window:.2f} s)")
        if len(misses) == ATTEMPTS:
            pytest.fail(f"could not land {sig.name} while the mutants were made in {ATTEMPTS} attempts: {misses}")
    record_property("outcome", f"{started.err.strip()}; attempts {len(misses) + 1}")


ORDERS = [(signal.SIGINT, signal.SIGINT), (signal.SIGTERM, signal.SIGINT), (signal.SIGINT, signal.SIGTERM)]


@pytest.mark.parametrize("gap_s", [0.02, 0.4])
@pytest.mark.parametrize("moment", ["imports", "staging", "naming", "mutants", "report"])
@pytest.mark.parametrize("order", ORDERS, ids=lambda o: "-".join(s.name for s in o))
def test_a_second_signal_at_any_moment_ends_the_run_with_the_first_ones_code_and_one_line(
    order: tuple[signal.Signals, signal.Signals],
    moment: str,
    gap_s: float,
    untouched_user_tree: Path,
    small_viewer: Path,
    report_viewer: Path,
    clean_run: CleanRun,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    """A second Ctrl-C as "interrupted" was printed ended with -2 (17 of 20) or exit 1 and a traceback; TERM then
    INT said 130. A later signal now ends the process at once with the first one's code (the mutmut session dies
    with it), or finds it already ending: either way one line, the first code, and a rerun that finds the clean
    run's verdicts."""
    first, second = order
    viewer = report_viewer if moment == "report" else small_viewer
    misses = []
    for dirs in fresh_dirs(tmp_path, untouched_user_tree, moment):
        started = started_run(dirs, viewer)
        if moment == "imports":
            reached = wait_until(lambda pid=started.proc.pid: answers_stop_signals(pid), started.proc, timeout=30)
        else:
            reached = wait_until(lambda dirs=dirs: in_phase(moment, dirs), started.proc)
        if reached:
            send(started, first)
            time.sleep(gap_s)
            send(started, second)
            break
        started.wait()
        misses.append(f"exit {started.proc.returncode} before {moment} was seen")
        if len(misses) == ATTEMPTS:
            pytest.skip(f"could not reach {moment} in {ATTEMPTS} attempts: {'; '.join(misses)}")
    ended_with_one_line(started, first, dirs)
    record_property("outcome", started.err.strip())
    if moment in ("imports", "staging"):
        return  # nothing kept yet: the rerun is a clean run
    rerun = run(cli_args(dirs.tree, dirs.out, dirs.work, small_viewer), cwd=dirs.work.parent)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert read_verdicts(dirs.out) == clean_run.verdicts
