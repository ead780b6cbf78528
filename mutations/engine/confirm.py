"""A kill is confirmed, or it is not a kill (`mutate --confirm N`).

Once mutmut has tested every mutant, the session re-runs the tests of each killing session, `N` times: on the mutant
(in their order there, up to the last that ran; the guards: the guards that fired) and, for a suite, on the unmutated
code too. Each re-run is a pytest session forked from the session as mutmut forks its workers (the same arguments,
folder, plugins and tests left out), writing its record to a file of its own. A test that does otherwise than in the
killing session (passes on the mutant, fails where it had passed, fails on the unmutated code) is flaky: the kill is
not counted (`judge`), and neither is any other kill of that test. A suite's test that failed on the unmutated code
in mutmut's first session and reached a mutated function is re-run alone there too: one that passes then is flaky.

What was found is the workspace's `confirmations.json` (`Ledger`), kept per kill and updated as each is settled, so
an interrupted run confirms the rest next time; a kill whose session was tested again is confirmed again.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import os
import resource
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from warnonce_guard.common import protocol
from warnonce_guard.common.errors import BadRecord, RecordsUnwritten
from warnonce_guard.common.files import write_atomic
from warnonce_guard.guards.sessions import AGAIN, UNWRITTEN_STATUS, GuardRecord, GuardSession, RecordKind, read_session
from warnonce_guard.mutations.engine import config, state
from warnonce_guard.mutations.engine.attempts import Outcome, describe, outcome
from warnonce_guard.mutations.workspace import Workspace

VERSION = 1
KILLING = (RecordKind.LEAK, RecordKind.FAILED)  # what a killing test's record says (a timeout or an error is none)
STOP_GRACE_S = 1.0  # after SIGXCPU at its time limit, how long a re-run gets before SIGKILL


def killers(records: Iterable[GuardRecord]) -> tuple[str, ...]:
    """The tests whose failure killed the mutant in a session: those whose detectors fired or that failed."""
    return tuple(sorted({r.test for r in records if r.kind in KILLING}))


@dataclass(frozen=True)
class Check:
    """One kill's confirmation: the killing session's run and its killing tests, and the tests that did otherwise
    when re-run (node id -> how); none: every re-run agreed, the kill is confirmed."""

    run: str
    killers: tuple[str, ...]
    flaky: dict[str, str] = field(default_factory=dict)

    def confirms(self, session: GuardSession) -> bool:
        """Whether this is the check of that killing session (a mutant tested again is confirmed again)."""
        return self.run == session.run and self.killers == killers(session.records)


@dataclass
class Ledger:
    """What confirmation found so far: a check per killed mutant, and the suite's failing tests re-run alone (node
    id -> how it did otherwise, or "" when it failed each time)."""

    kills: dict[str, Check] = field(default_factory=dict)
    rechecked: dict[str, str] = field(default_factory=dict)

    def flaky(self) -> dict[str, str]:
        """Every test a re-run found flaky, and how (the first finding of each)."""
        found = {test: why for test, why in self.rechecked.items() if why}
        for check in self.kills.values():
            for test, why in check.flaky.items():
                found.setdefault(test, why)
        return found

    def to_json(self) -> dict[str, Any]:
        kills = {name: {"run": c.run, "killers": list(c.killers), "flaky": c.flaky} for name, c in self.kills.items()}
        return {"version": VERSION, "kills": kills, "rechecked": self.rechecked}


def read(path: Path) -> Ledger:
    """The ledger at `path` (empty when there is none); `BadRecord` unless it is one."""
    if not path.exists():
        return Ledger()
    data = state.load_json(path)
    try:
        if data["version"] != VERSION or not isinstance(data["rechecked"], dict):
            raise BadRecord("not a confirmation ledger")
        kills = {
            str(name): Check(str(c["run"]), tuple(str(t) for t in c["killers"]), _tests(c["flaky"]))
            for name, c in data["kills"].items()
        }
        return Ledger(kills, _tests(data["rechecked"]))
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise BadRecord(f"not a confirmation ledger ({err})") from None


def _tests(data: Any) -> dict[str, str]:
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ValueError("not a map of tests")
    return {str(k): v for k, v in data.items()}


def write(path: Path, ledger: Ledger) -> None:
    write_atomic(path, json.dumps(ledger.to_json(), indent=1))


def read_or_empty(path: Path) -> Ledger:
    """The ledger, or an empty one when it does not validate (its kills are then confirmed again)."""
    try:
        return read(path)
    except BadRecord:
        return Ledger()


@dataclass(frozen=True)
class Rerun:
    """One re-run: of `tests` (in this order) on `mutant`, or on the unmutated code (`mutant` ""), for the kills (or
    the failing test) it settles: the same tests on the unmutated code settle every kill they killed."""

    mutant: str
    tests: tuple[str, ...]
    settles: tuple[str, ...]


# How a re-run went: its exit code and its record (None when it wrote none).
Ran = tuple[int, GuardSession | None]
# Runs one pytest session, in a forked child, of `tests` (in this order) on a mutant (or "": the unmutated code).
RunTests = Callable[[str, list[str]], int]


def differs(rerun: Rerun, ran: Ran, before: tuple[str, ...]) -> dict[str, str] | None:
    """The tests that did otherwise in a re-run than in the killing session, whose killing tests were `before`, and
    how (empty: it agreed); None when the re-run says nothing (stopped or killed from outside)."""
    code, record = ran
    where = f"when re-run on {rerun.mutant}" if rerun.mutant else "when re-run on the unmutated code"
    if code == UNWRITTEN_STATUS:
        raise RecordsUnwritten(f"a re-run of {', '.join(rerun.tests)} could not write its record")
    kind = outcome(code)
    if kind in (Outcome.STOPPED, Outcome.KILLED):
        return None
    if kind is Outcome.INTERRUPTED:  # its tests never all ran: pytest writes no report of the test that stopped it
        return dict.fromkeys(before, f"its session was interrupted (exit code {code}) {where}")
    if kind is Outcome.TIMEOUT or record is None or record.exit_status != code:
        why = "ran past its time limit" if kind is Outcome.TIMEOUT else f"ended without a record ({describe(code)})"
        return dict.fromkeys(before, f"{why} {where}")
    if not rerun.mutant:  # on the unmutated code every test passes
        return {r.test: f"failed {where} ({r.message})" for r in record.records if r.failed}
    now = killers(record.records)
    found = {test: f"passed {where}" for test in before if test not in now}
    again = f"failed {where}, having passed where the mutant was killed"
    return found | {test: again for test in now if test not in before}


def rechecked(test: str, code: int) -> dict[str, str] | None:
    """How a re-run alone of a test that failed on the unmutated code went: passed (flaky), failed again (empty),
    or nothing said (None: stopped or killed from outside)."""
    if outcome(code) in (Outcome.STOPPED, Outcome.KILLED):
        return None
    if code != 0:
        return {}
    return {test: "failed on the unmutated code in the suite's first session, then passed when re-run alone"}


def confirm(
    ws: Workspace,
    run_tests: RunTests,
    rounds: int,
    suite: bool,
    failing: Mapping[str, str] = {},
    max_children: int = 2,
) -> Ledger:
    """Confirm every kill of the workspace that has no check yet (and, for a suite, re-run its `failing` tests that
    reached a mutated function): `rounds` re-runs each, at most `max_children` at once; the ledger, written as each
    kill is settled. `run_tests(mutant, tests)` runs one pytest session in a forked child and returns its code."""
    ledger = read_or_empty(ws.confirmations_file)
    sessions = _killing_sessions(ws)
    kills = {name: s for name, s in sessions.items() if not ((c := ledger.kills.get(name)) and c.confirms(s))}
    driven = {name: found for name, s in kills.items() if (found := _driven_again(s)) is not None}
    for name, found in driven.items():  # the guards drove their sites again in the killing session
        _settle(ledger, name, kills.pop(name), found)
    if driven:
        write(ws.confirmations_file, ledger)
    retried = [test for test in failing if test not in ledger.rechecked]
    if not kills and not retried:
        return ledger
    print(f"confirming {len(kills)} kill(s) and {len(retried)} failing test(s), {rounds} re-run(s) each", flush=True)
    started = time.monotonic()
    tests = {name: _rerun_tests(session, suite) for name, session in sorted(kills.items())}
    unmutated: dict[
        tuple[str, ...], tuple[str, ...]
    ] = {}  # a suite's tests -> the kills they re-run on the unmutated code
    for name, ran in tests.items():
        unmutated[ran] = (*unmutated.get(ran, ()), name)
    queue: list[Rerun] = []
    for _ in range(rounds):
        queue += [Rerun(name, ran, (name,)) for name, ran in tests.items()]
        queue += [Rerun("", ran, names) for ran, names in unmutated.items()] if suite else []
        queue += [Rerun("", (test,), (test,)) for test in retried]
    left = {key: sum(key in r.settles for r in queue) for key in [*tests, *retried]}
    found: dict[str, dict[str, str]] = {key: {} for key in left}
    for rerun, ran in _run_all(ws, queue, run_tests, max_children, lambda r: any(key in left for key in r.settles)):
        for key in [key for key in rerun.settles if key in left]:  # those not settled while it ran
            said = differs(rerun, ran, killers(kills[key].records)) if key in kills else rechecked(key, ran[0])
            left[key] -= 1
            if said is None:  # no verdict: confirmed next run
                del left[key]
                continue
            found[key] |= said
            if found[key] or not left[key]:
                del left[key]
                _settle(ledger, key, kills.get(key), found[key])
                write(ws.confirmations_file, ledger)
    print(f"    done in {time.monotonic() - started:.2f} s; flaky: {', '.join(ledger.flaky()) or 'none'}", flush=True)
    return ledger


def _driven_again(session: GuardSession) -> dict[str, str] | None:
    """What the drives of a guard that killed the mutant, run again in its session, found (`guards.outcome.
    drive_again`): the guards that passed a drive (or failed otherwise) are flaky; None without such drives."""
    again = [r for r in session.records if r.phase == AGAIN]
    if not again or {r.test for r in again} != set(killers(session.records)):
        return None
    where = f"when its site was driven again on {session.mutant}"
    return {
        r.test: f"{'passed' if r.kind is RecordKind.PASSED else r.kind} {where}" for r in again if r.kind not in KILLING
    }


def _settle(ledger: Ledger, key: str, session: GuardSession | None, flaky: dict[str, str]) -> None:
    if session is not None:
        ledger.kills[key] = Check(session.run, killers(session.records), flaky)
    else:
        ledger.rechecked[key] = flaky.get(key, "")


def _killing_sessions(ws: Workspace) -> dict[str, GuardSession]:
    """Every mutant whose stored exit code is a kill (mutmut's 1) with the finished session that made it."""
    try:
        codes, _ = state.read_exit_codes(ws, state.read_generation(ws)[1])
    except BadRecord:
        return {}
    out = {}
    for name, code in codes.items():
        session = read_session(ws.attribution / "mutants" / f"{name}.json") if code == 1 else None
        if session is not None and session.exit_status == 1 and killers(session.records):
            out[name] = session
    return out


def _rerun_tests(session: GuardSession, suite: bool) -> tuple[str, ...]:
    """What a kill's re-run runs: a suite's tests of the killing session in their order (the last is the one that
    killed: its tests stop at the first failure); the guards that fired (each guard drives its site alone)."""
    if suite:
        return tuple(dict.fromkeys(r.test for r in session.records))
    return killers(session.records)


def _run_all(
    ws: Workspace,
    queue: list[Rerun],
    run_tests: RunTests,
    max_children: int,
    wanted: Callable[[Rerun], bool],
) -> Iterator[tuple[Rerun, Ran]]:
    """Each re-run of `queue` still `wanted` when its turn comes, in forked children, at most `max_children` at once,
    each within mutmut's limits for its tests; yields each as it ends, with its exit code and record."""
    folder = ws.attribution / "confirm"
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.json"):
        stale.unlink()
    running: dict[int, tuple[Rerun, Path, float]] = {}
    waiting = list(reversed(queue))
    number = 0
    gc.freeze()  # as mutmut before its workers: a child's collections leave the parent's heap alone (no page copied)
    try:
        while waiting or running:
            while waiting and len(running) < max_children:
                rerun, number = waiting.pop(), number + 1
                if not wanted(rerun):
                    continue
                record = folder / f"{number}.json"
                wall, cpu = _limits(rerun.tests)
                running[_fork(rerun, record, cpu, run_tests)] = (rerun, record, time.monotonic() + wall)
            for pid, (rerun, record, deadline) in list(running.items()):
                ended, status = os.waitpid(pid, os.WNOHANG)
                if ended == 0:
                    _stop_if_late(pid, deadline)
                    continue
                del running[pid]
                yield rerun, (os.waitstatus_to_exitcode(status), read_session(record))
                record.unlink(missing_ok=True)
            if running:
                time.sleep(0.01)
    finally:
        for pid in running:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        gc.unfreeze()


def _limits(tests: Iterable[str]) -> tuple[float, int]:
    """mutmut's wall-clock and CPU limits (seconds) for a worker running `tests`, from their stats durations."""
    from mutmut.state import state as mutmut_state

    durations = mutmut_state().duration_by_test
    estimated = sum(durations.get(test, 0.0) for test in tests)
    multiplier, constant = (float(str(config.SETTINGS[key])) for key in ("timeout_multiplier", "timeout_constant"))
    wall = (estimated + constant) * multiplier
    return wall, math.ceil(wall * 2)


def _stop_if_late(pid: int, deadline: float) -> None:
    """SIGXCPU past the deadline (mutmut's signal for a worker out of time), SIGKILL once the grace is over too."""
    late = time.monotonic() - deadline
    with contextlib.suppress(ProcessLookupError):
        if late > STOP_GRACE_S:
            os.kill(pid, signal.SIGKILL)
        elif late > 0:
            os.kill(pid, signal.SIGXCPU)


def _fork(rerun: Rerun, record: Path, cpu_limit: int, run_tests: RunTests) -> int:
    """A child running one re-run, as mutmut's workers run a mutant: its record to `record`, its output discarded,
    a CPU limit; its exit code pytest's."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = 70
    try:
        os.environ[protocol.RECORD_TO] = str(record)
        limit = cpu_limit + int(time.process_time())
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 1))
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - the child exits without closing anything
        code = run_tests(rerun.mutant, list(rerun.tests))
    finally:
        os._exit(code)
