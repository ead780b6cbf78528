"""Fault injection: SIGINT, SIGTERM and SIGKILL at each phase of a run, then a rerun in the same work directory.

For every phase, SIGKILL and one of SIGINT and SIGTERM (each at every other phase, both at the baseline: they stop
the command line through the same handler, whose codes and line for each the fast tier checks,
tests/cli/test_cli_main.py) the interrupted run must leave no process behind (within a second: not the
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
from collections.abc import Callable
from pathlib import Path

import pytest
from warnonce_guard.common.errors import ExitCode
from warnonce_guard.guards.sessions import mutant_session_path, read_session
from warnonce_guard.mutations.judge import judge
from warnonce_guard.mutations.records import KILLED, NOT_RUN

from tests.faults import (
    ATTEMPTS,
    BIG_TREE,
    EXIT,
    NAPPING,
    PHASES,
    SAYS,
    CleanRun,
    RunDirs,
    Started,
    TreeShape,
    children_of,
    cli_args,
    fault_tree,
    fresh_dirs,
    hash_tree,
    in_phase,
    one_line_error,
    processes_mentioning,
    read_verdicts,
    rerun_of,
    send,
    session_pids,
    slow_interface,
    start,
    started_run,
    stopped_in,
    survivors,
    wait_until,
    waited,
)

pytestmark = [pytest.mark.slow, pytest.mark.long]

# SIGKILL at every phase (nothing of the run's handles it), and the handled signals in turn: a pair each phase; at
# the baseline, which no other file interrupts (test_faults_second_signal's and signal_moments' moments are others),
# both handled signals.
CASES = [
    *((signal.SIGKILL, phase) for phase in PHASES),
    *(((signal.SIGINT, signal.SIGTERM)[index % 2], phase) for index, phase in enumerate(PHASES)),
]
CASES += [(sig, "baseline") for sig in (signal.SIGINT, signal.SIGTERM) if (sig, "baseline") not in CASES]


def test_every_phase_meets_sigkill_and_a_handled_signal_and_the_baseline_both() -> None:
    assert {(sig, phase) for sig, phase in CASES if sig == signal.SIGKILL} == {(signal.SIGKILL, p) for p in PHASES}
    handled = [(sig, phase) for sig, phase in CASES if sig != signal.SIGKILL]
    assert {phase for _, phase in handled} == set(PHASES) and len(handled) == len(PHASES) + 1
    assert {sig for sig, phase in handled if phase == "baseline"} == {signal.SIGINT, signal.SIGTERM}
    assert all(sum(1 for s, _ in handled if s == sig) >= 3 for sig in (signal.SIGINT, signal.SIGTERM))


@pytest.fixture(scope="module")
def fault_shape() -> TreeShape:
    return BIG_TREE


def interrupt(phase: str, sig: signal.Signals, dirs: RunDirs, viewer: Path) -> tuple[Started, str | None]:
    """Start a run, send `sig` once it is in `phase`; returns the run and why it missed the phase (None: hit)."""
    started = started_run(dirs, viewer, naps=phase in NAPPING)
    reached = wait_until(lambda: in_phase(phase, dirs), started.proc)
    if reached:
        send(started, sig)
    code = waited(started)
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


@pytest.mark.parametrize(("sig", "phase"), CASES, ids=[f"{sig.name}-{phase}" for sig, phase in CASES])
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
    rerun = rerun_of(dirs, small_viewer)
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
        # the session started (before the command parsed its arguments), and the command discovering: its workspace
        # made, nothing staged yet
        session = lambda pid=started.proc.pid, d=dirs: len(children_of(pid)) >= 1 and in_phase("staging", d)  # noqa: E731
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
    rerun = rerun_of(dirs, small_viewer, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert read_verdicts(dirs.out) == clean_run.verdicts
    record_property("outcome", f"exit {code}: {started.err.strip()}; rerun exit {rerun.returncode}")
