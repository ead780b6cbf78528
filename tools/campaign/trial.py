"""One trial: start the command, fault it at its moment, rerun it to completion, and gather what the judge needs.

Processes are found in /proc: the command line is started in a session of its own (its process group is its
pid), the mutmut session by its command line (the session module and the work directory), a worker as a
child of the session titled `mutmut: <mutant>`. A watcher thread notes every session and worker a run had, so
that afterwards nothing of the run can hide: a process is "left" when it is alive (not a zombie) in the
command's or a session's process group, or when its command line names the work directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tools.campaign.judge import Observation, Outcome, differences, judge
from tools.campaign.plan import INTERRUPTED, Aim, Fault, Windows
from tools.campaign.runs import (
    SESSION_MODULE,
    RunDirs,
    Started,
    Verdicts,
    answers_stop_signals,
    hash_tree,
    read_verdicts,
    start,
)
from tools.campaign.targets import Clean, Target, user_folder

WORKER_TITLE = "mutmut: "  # mutmut's process title for a worker testing a mutant
MAX_RERUNS = 3  # reruns while one ends interrupted (130/143)
LEFT_WITHIN_S = 2.0  # a run's processes may take this long to go after it ended


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    pgrp: int
    state: str
    cmdline: str

    def __str__(self) -> str:
        return f"{self.pid} {self.cmdline[:120]}"


def snapshot() -> list[Proc]:
    """Every process in /proc with its parent, process group, state and command line."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="utf-8", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry.name}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, IndexError):
            continue
        found.append(Proc(int(entry.name), int(fields[1]), int(fields[2]), fields[0], cmdline))
    return found


def sessions_in(procs: list[Proc], work: Path) -> list[Proc]:
    return [p for p in procs if p.state != "Z" and SESSION_MODULE in p.cmdline and str(work) in p.cmdline]


def workers_in(procs: list[Proc], sessions: set[int]) -> list[Proc]:
    return [p for p in procs if p.state != "Z" and p.ppid in sessions and p.cmdline.startswith(WORKER_TITLE)]


class Watch(threading.Thread):
    """Polls the process table while a run lives: which sessions and workers it had, and when (seconds from t0)."""

    def __init__(self, cli_pid: int, work: Path, t0: float, interval: float = 0.05):
        super().__init__(daemon=True)
        self.cli_pid, self.work, self.t0, self.interval = cli_pid, work, t0, interval
        self.sessions: dict[int, Proc] = {}
        self.session_span: tuple[float, float] | None = None
        self.worker_span: tuple[float, float] | None = None
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            self.scan()
            self._halt.wait(self.interval)

    def scan(self) -> None:
        procs, now = snapshot(), time.monotonic() - self.t0
        sessions = sessions_in(procs, self.work)
        for session in sessions:
            self.sessions[session.pid] = session
        if sessions:
            self.session_span = _widen(self.session_span, now)
        if workers_in(procs, {s.pid for s in sessions}):
            self.worker_span = _widen(self.worker_span, now)

    def stop(self) -> None:
        self._halt.set()
        self.join()
        self.scan()

    def groups(self) -> set[int]:
        return {self.cli_pid} | {s.pgrp for s in self.sessions.values()}


def _widen(span: tuple[float, float] | None, now: float) -> tuple[float, float]:
    return (now, now) if span is None else (span[0], now)


@dataclass
class Running:
    started: Started
    t0: float
    watch: Watch

    @property
    def proc(self) -> subprocess.Popen[bytes]:
        return self.started.proc

    def ended(self) -> bool:
        return self.proc.poll() is not None

    def kill(self) -> None:
        """Every process of the run, at once (the campaign itself is stopping)."""
        for group in self.watch.groups():
            _signal_group(group, signal.SIGKILL)
        self.proc.wait()
        self.watch.stop()


def launch(args: list[str], cwd: Path, logs: Path, work: Path, interval: float = 0.05) -> Running:
    t0 = time.monotonic()
    started = start(args, cwd, logs)
    watch = Watch(started.proc.pid, work, t0, interval)
    watch.start()
    return Running(started, t0, watch)


def finish(running: Running, timeout: float) -> Outcome:
    """Wait for the run to end (killing every process of it when `timeout` passes: code None)."""
    try:
        code: int | None = running.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        code = None
    seconds = time.monotonic() - running.t0
    if code is None:
        running.kill()
    else:
        running.watch.stop()
    return Outcome(code, running.started.out, running.started.err, seconds)


def left_behind(work: Path, groups: set[int], within_s: float = LEFT_WITHIN_S) -> list[str]:
    """Processes of a run alive `within_s` after it ended: in its process groups, or naming its work directory."""
    deadline = time.monotonic() + within_s
    while True:
        me = os.getpid()
        left = [
            p for p in snapshot() if p.state != "Z" and p.pid != me and (p.pgrp in groups or str(work) in p.cmdline)
        ]
        if not left or time.monotonic() > deadline:
            for p in left:  # the next trial must not meet them
                if p.pgrp in groups:
                    _signal_group(p.pgrp, signal.SIGKILL)
                else:
                    _signal(p.pid, signal.SIGKILL)
            return [str(p) for p in left]
        time.sleep(0.05)


def _signal(pid: int, sig: signal.Signals) -> bool:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def _signal_group(pgrp: int, sig: signal.Signals) -> bool:
    try:
        os.killpg(pgrp, sig)
    except ProcessLookupError:
        return False
    return True


# --- the fault ------------------------------------------------------------------------------------------


def phase_of(dirs: RunDirs, mutants: int, workers: bool = False) -> str:
    """Which phase the run is in, as its work directory and --out show (tests/faults.py's phases): start,
    staging, staged, generation, baseline (mutants are named meanwhile), mutants, collect, report, done."""
    if (dirs.out / "mutation.json").exists():
        return "done"
    if dirs.building_report():
        return "report"
    finished = dirs.finished_mutants()
    if workers or 0 < finished < mutants:
        return "mutants"
    if finished:
        return "collect"  # every mutant tested: the session ends, the parent reads the verdicts
    if dirs.glob("generation.json"):
        return "baseline"
    if not dirs.glob("setup.cfg"):  # the session is started meanwhile: it imports, and waits
        return "staging" if dirs.workspaces() else "start"
    return "generation" if dirs.glob("mutants") else "staged"


@dataclass
class Injection:
    sent: bool = False
    after_end: bool = False
    at_s: float | None = None  # when the first signal went out
    sent_wall: float | None = None  # the same, on the wall clock (to compare with the report's file times)
    phase: str = "ended"
    second_sent: bool = False
    aimed: str = ""
    in_startup: bool = False  # the command did not catch stop signals yet: the interpreter was starting


def _alive(aim: Aim, running: Running, work: Path) -> int | None:
    """The pid a fault aimed at `aim` goes to now (None: no session or worker at this instant)."""
    if aim in (Aim.COMMAND, Aim.GROUP):
        return running.proc.pid
    procs = snapshot()
    sessions = sessions_in(procs, work)
    if aim is Aim.SESSION:
        return sessions[0].pid if sessions else None
    workers = workers_in(procs, {s.pid for s in sessions})
    return min(p.pid for p in workers) if workers else None


def _wait_for(aim: Aim, running: Running, work: Path) -> int | None:
    """Poll until a process `aim` names is alive; None: the run ended first."""
    while not running.ended():
        if (pid := _alive(aim, running, work)) is not None:
            return pid
        time.sleep(0.005)
    return None


def _sleep_until(running: Running, instant: float) -> bool:
    """Sleep until `instant` (time.monotonic()); False when the run ended first."""
    try:
        running.proc.wait(timeout=max(0.0, instant - time.monotonic()))
    except subprocess.TimeoutExpired:
        return True
    return False


def _send(fault: Fault, pid: int, sig: signal.Signals) -> bool:
    return _signal_group(pid, sig) if fault.aim is Aim.GROUP else _signal(pid, sig)


def inject(
    fault: Fault, running: Running, dirs: RunDirs, moment: float, gap: float, windows: Windows, mutants: int
) -> Injection:
    """Deliver the fault at `moment`, and a second signal `gap` seconds after the first.

    For the command and its group the moment counts from the start. The session and the workers start later
    in one run than in another (staging, the machine's load): their moment counts from when the first of them
    appears, by as much as it did from the start of their window in the clean run.
    """
    done = Injection()
    began, offset = running.t0, moment
    if fault.aim in (Aim.SESSION, Aim.WORKER):
        if _wait_for(fault.aim, running, dirs.work) is None:
            done.after_end = True
            return done
        began, offset = time.monotonic(), moment - windows.of(fault.aim)[0]
    if not _sleep_until(running, began + offset):
        done.after_end = True  # it ended before the moment came
        return done
    pid = _wait_for(fault.aim, running, dirs.work)
    if pid is None:
        done.after_end = True  # the last session or worker was gone: the moment fell after the end
        return done
    done.aimed = str(pid)
    done.in_startup = fault.aim in (Aim.COMMAND, Aim.GROUP) and not answers_stop_signals(running.proc.pid)
    done.sent_wall, done.at_s = time.time(), time.monotonic() - running.t0
    done.sent = _send(fault, pid, fault.signals[0])
    second_at = time.monotonic() + gap
    done.phase = (
        "interpreter"
        if done.in_startup
        else phase_of(dirs, mutants, workers=_alive(Aim.WORKER, running, dirs.work) is not None)
    )
    if done.sent and len(fault.signals) > 1 and _sleep_until(running, second_at):
        done.second_sent = _send(fault, pid, fault.signals[1])
    return done


def report_done_before(out: Path, wall: float | None) -> bool:
    """Every file of the report in `out` was written before `wall` (the fault landed after the run's work)."""
    if wall is None or not (out / "mutation.json").is_file():
        return False
    return max(p.stat().st_mtime for p in out.rglob("*") if p.is_file()) <= wall


# --- one trial --------------------------------------------------------------------------------------------


@dataclass
class TrialRecord:
    number: int
    target: str
    fault: str
    moment_s: float
    gap_s: float
    phase: str = ""
    at_s: float | None = None  # when the first signal went out, from the start of the faulted run
    sent: bool = False
    after_end: bool = False
    exit_code: int | None = None
    reasons: list[str] = field(default_factory=list)
    stderr: str = ""
    reruns: list[int | None] = field(default_factory=list)
    seconds: float = 0.0  # the whole trial
    run_s: float = 0.0  # the faulted run, from its start to its end
    session: tuple[float, float] | None = None  # when the faulted run's session and workers lived
    workers: tuple[float, float] | None = None

    @property
    def ok(self) -> bool:
        return not self.reasons


def _report(out: Path, notes: list[str], what: str) -> Verdicts | None:
    if not (out / "mutation.json").exists():
        return None
    try:
        return read_verdicts(out)
    except (OSError, ValueError, KeyError, TypeError) as err:
        notes.append(f"{what}: the report in --out cannot be read ({type(err).__name__}: {err})")
        return None


def run_trial(
    number: int,
    target: Target,
    clean: Clean,
    fault: Fault,
    moment: float,
    gap: float,
    folder: Path,
    timeout: float,
) -> TrialRecord:
    """Fault one run of `target` in `folder` and judge what follows."""
    began = time.monotonic()
    record = TrialRecord(number, target.name, fault.name, moment, gap)
    dirs = RunDirs(target.files, folder / "report", folder / "work")
    user = user_folder(folder / "user")
    before = hash_tree(target.files, user)
    args = target.command(dirs)

    running = launch(args, folder, folder / "logs" / "faulted", dirs.work)
    try:
        injection = inject(fault, running, dirs, moment, gap, windows_of(clean), clean.mutants)
    except BaseException:
        running.kill()
        raise
    faulted = finish(running, timeout)
    injection.after_end |= report_done_before(dirs.out, injection.sent_wall)
    left = left_behind(dirs.work, running.watch.groups())
    notes: list[str] = []
    faulted_report = _report(dirs.out, notes, "after the faulted run")

    reruns = []
    for attempt in range(1, MAX_RERUNS + 1):
        again = launch(args, folder, folder / "logs" / f"rerun-{attempt}", dirs.work)
        try:
            reruns.append(finish(again, timeout))
        except BaseException:
            again.kill()
            raise
        left += left_behind(dirs.work, again.watch.groups())
        if reruns[-1].code not in INTERRUPTED:
            break
    final = _report(dirs.out, notes, "after the reruns")
    after = hash_tree(target.files, user)
    changed = sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))
    stray = sorted(p.name for p in dirs.out.parent.glob(f".{dirs.out.name}.tmp-*"))

    observed = Observation(
        fault,
        injection.sent,
        injection.after_end,
        faulted,
        faulted_report,
        tuple(reruns),
        final,
        tuple(left),
        tuple(changed),
        tuple(stray),
        injection.in_startup,
    )
    record.phase, record.at_s = injection.phase, injection.at_s
    record.sent, record.after_end, record.exit_code = injection.sent, injection.after_end, faulted.code
    record.reasons = notes + judge(observed, clean.verdicts, clean.exit_code)
    record.stderr = faulted.stderr[-4000:]
    record.reruns = [r.code for r in reruns]
    record.seconds = time.monotonic() - began
    record.run_s, record.session, record.workers = (
        faulted.seconds,
        running.watch.session_span,
        running.watch.worker_span,
    )
    return record


def _clean_run(target: Target, folder: Path, timeout: float) -> Clean:
    dirs = RunDirs(target.files, folder / "report", folder / "work")
    before = hash_tree(target.files)
    running = launch(target.command(dirs), folder, folder / "logs", dirs.work)
    try:
        outcome = finish(running, timeout)
    except BaseException:
        running.kill()
        raise
    left = left_behind(dirs.work, running.watch.groups())
    problems = []
    if outcome.code != 0 or "Traceback" in outcome.stderr:
        problems.append(f"exit {outcome.code}: {outcome.first_line or outcome.stdout[-300:]}")
    if left:
        problems.append(f"left running: {left}")
    if hash_tree(target.files) != before:
        problems.append(f"changed files under {target.files}")
    verdicts = read_verdicts(dirs.out) if not problems else None
    if verdicts is None or not verdicts.mutants:
        raise RuntimeError(f"the clean run of {target.name} failed: {'; '.join(problems) or 'no mutant'}")
    spans = running.watch.session_span, running.watch.worker_span
    return Clean(verdicts, outcome.code or 0, len(verdicts.mutants), outcome.seconds, *spans)


def measure(target: Target, folder: Path, timeout: float) -> Clean:
    """The target's clean run: verdicts, exit code, duration, and when its session and workers lived.

    Two runs, each in a fresh work directory as a trial's: the first warms the disk cache and the bytecode
    (it is slower than every later run, so the moments it would give fall after the end of many trials); the
    second is measured. Both must give the same verdicts, or there is no clean run to compare a trial with.
    """
    warm = _clean_run(target, folder / "warm-up", timeout)
    measured = _clean_run(target, folder / "measured", timeout)
    if warm.verdicts != measured.verdicts:
        raise RuntimeError(
            f"two clean runs of {target.name} disagree: {'; '.join(differences(warm.verdicts, measured.verdicts))}"
        )
    return measured


def windows_of(clean: Clean) -> Windows:
    return Windows(clean.run_s, clean.session, clean.workers)
