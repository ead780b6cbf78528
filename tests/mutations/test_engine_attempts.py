"""A worker killed from outside or past its time limit: what its exit code says (`engine.attempts`), the ledger
of such attempts, and what the session keeps of each worker's exit code (`engine.workers`), without mutmut.
The same with mutmut and a real SIGKILL is the slow tier's (tests/e2e/test_faults_workers.py)."""

from __future__ import annotations

import json
import os
import signal
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from warnonce_guard.common.errors import BadRecord, EngineFailed, ExitCode, RecordsUnwritten
from warnonce_guard.common.files import MARKER
from warnonce_guard.guards.sessions import (
    UNWRITTEN_STATUS,
    GuardSession,
    Phase,
    mutant_session_path,
    read_session,
    write_session,
)
from warnonce_guard.mutations.engine import attempts, running
from warnonce_guard.mutations.engine.attempts import Outcome, outcome
from warnonce_guard.mutations.engine.status import EXIT_CODE_STATUS
from warnonce_guard.mutations.engine.workers import WORKER_RAISED, Registrar, contained
from warnonce_guard.mutations.workspace import Workspace

M1, M2 = "vllm.platforms.interface.xǁPlatformǁimport_kernels__mutmut_1", "vllm.x_f__mutmut_1"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (0, Outcome.OWN), (1, Outcome.OWN), (3, Outcome.OWN), (5, Outcome.OWN), (33, Outcome.OWN),
        (-11, Outcome.OWN), (-6, Outcome.OWN),  # a segfault, an abort: the mutant's own crash
        (2, Outcome.INTERRUPTED),  # pytest's "interrupted": its own test's KeyboardInterrupt or pytest.exit
        (-2, Outcome.STOPPED), (130, Outcome.STOPPED), (-15, Outcome.STOPPED), (143, Outcome.STOPPED),
        (-9, Outcome.KILLED), (-10, Outcome.KILLED), (137, Outcome.KILLED),  # SIGKILL (the OOM killer), SIGUSR1
        (36, Outcome.TIMEOUT), (-24, Outcome.TIMEOUT), (24, Outcome.TIMEOUT), (152, Outcome.TIMEOUT),
        (None, None),
    ],
)  # fmt: skip
def test_what_a_workers_exit_code_says(code: int | None, expected: Outcome | None) -> None:
    assert outcome(code) is expected


def test_every_code_mutmut_knows_has_an_outcome() -> None:
    assert all(outcome(code) is not None for code in EXIT_CODE_STATUS if code is not None)


def test_the_ledger_reads_back_what_was_written(tmp_path: Path) -> None:
    path = tmp_path / "attempts.json"
    assert attempts.read(path) == {}  # none yet
    attempts.write(path, {M1: (-9,), M2: (36, -24), "dropped": ()})
    assert attempts.read(path) == {M1: (-9,), M2: (36, -24)}


@pytest.mark.parametrize(
    "text",
    [
        "", "{", "[]", '{"version": 2, "mutants": {}}', '{"version": 1}', '{"version": 1, "mutants": []}',
        '{"version": 1, "mutants": {"m": []}}', '{"version": 1, "mutants": {"m": [1]}}',  # 1 is not abnormal
        '{"version": 1, "mutants": {"m": ["-9"]}}', '{"version": 1, "mutants": {}, "more": 1}',
    ],
)  # fmt: skip
def test_a_ledger_that_does_not_validate_is_bad_state(tmp_path: Path, text: str) -> None:
    path = tmp_path / "attempts.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BadRecord):
        attempts.read(path)


# --- the session's decision per worker -------------------------------------------------------------------


@dataclass
class Result:
    """mutmut's MutantResult (the fields the session reads and sets)."""

    mutant_name: str
    exit_code: int
    duration: float = 1.0


@pytest.fixture
def registrar(ws: Workspace) -> Registrar:
    return Registrar.load(ws, "run1")


def kept(registrar: Registrar, *results: Result) -> list[tuple[str, int]]:
    """What mutmut's `_register_mutant_result` was given through the session's wrapper."""
    registered: list[tuple[str, int]] = []
    wrapped = registrar.wrap(lambda result, data: registered.append((result.mutant_name, result.exit_code)))
    for result in results:
        wrapped(result, {})
    return registered


def test_a_mutants_own_outcome_is_kept_at_once(registrar: Registrar) -> None:
    assert kept(registrar, Result(M1, 1), Result(M2, -11)) == [(M1, 1), (M2, -11)]
    assert registrar.take_again() == [] and not registrar.ws.attempts_file.exists()


@pytest.mark.parametrize("code", [-signal.SIGKILL, 36, -signal.SIGXCPU])
def test_a_worker_killed_or_timed_out_is_tested_again_and_kept_only_the_second_time(
    registrar: Registrar, code: int
) -> None:
    assert kept(registrar, Result(M1, code)) == []  # not kept: mutmut's .meta keeps None, "not run"
    assert registrar.take_again() == [M1]
    assert attempts.read(registrar.ws.attempts_file) == {M1: (code,)}  # on disk before anything else

    again = Registrar.load(registrar.ws, "run1")  # the same in the next run: the ledger is read back
    assert kept(again, Result(M1, code)) == [(M1, code)]
    assert again.take_again() == [] and attempts.read(registrar.ws.attempts_file) == {M1: (code, code)}


def test_a_normal_attempt_ends_the_series(registrar: Registrar) -> None:
    assert kept(registrar, Result(M1, -9), Result(M1, 1), Result(M1, -9)) == [(M1, 1)]
    assert attempts.read(registrar.ws.attempts_file) == {M1: (-9,)}  # one abnormal attempt since the last normal


@pytest.mark.parametrize("code", [-signal.SIGTERM, -signal.SIGINT, 128 + signal.SIGINT])
def test_a_stopped_worker_is_tested_again_and_never_an_attempt(registrar: Registrar, code: int) -> None:
    assert kept(registrar, Result(M1, code), Result(M1, code), Result(M1, code)) == []
    assert registrar.take_again() == [M1] and attempts.read(registrar.ws.attempts_file) == {}


def test_a_session_its_own_tests_interrupted_is_tested_again_then_kept(registrar: Registrar) -> None:
    running.starting(registrar.ws.attribution, M1, "t.py::test_a")  # what the interrupted session was running
    assert kept(registrar, Result(M1, 2)) == []  # pytest's "interrupted": KeyboardInterrupt, pytest.exit, ...
    assert registrar.take_again() == [M1]
    assert running.last_tests(registrar.ws.attribution) == {}  # the next attempt names its own test
    assert kept(registrar, Result(M1, 2)) == [(M1, 2)]  # twice in a row: the mutant's own
    assert attempts.read(registrar.ws.attempts_file) == {M1: (2, 2)}


def test_a_worker_killed_after_its_guards_finished_keeps_their_verdict(registrar: Registrar) -> None:
    write_session(registrar.ws.attribution, GuardSession("run1", Phase.MUTANT, M1, 1, ()))
    assert kept(registrar, Result(M1, -9)) == [(M1, 1)]
    assert registrar.take_again() == []


def test_another_runs_record_is_not_this_attempts_and_is_removed_before_the_retest(registrar: Registrar) -> None:
    write_session(registrar.ws.attribution, GuardSession("run0", Phase.MUTANT, M1, 1, ()))
    assert kept(registrar, Result(M1, -9)) == []
    assert read_session(mutant_session_path(registrar.ws.attribution, M1)) is None


@pytest.mark.parametrize(
    ("code", "error", "named"),
    [
        # a guard session that could not write its record
        (UNWRITTEN_STATUS, RecordsUnwritten, lambda ws: [str(ws.attribution)]),
        # a worker that raised (`contained`): its mutant and the log that holds the traceback
        (WORKER_RAISED, EngineFailed, lambda ws: [M1, str(ws.log_file)]),
    ],
    ids=["records-unwritten", "worker-raised"],
)
def test_a_worker_code_that_is_no_verdict_stops_the_session_saying_where_to_look(
    registrar: Registrar, code: int, error: type[Exception], named: Callable[[Workspace], list[str]]
) -> None:
    with pytest.raises(error) as stopped:
        kept(registrar, Result(M1, code))
    assert stopped.value.exit_code == ExitCode.ENVIRONMENT  # type: ignore[attr-defined]
    assert all(part in str(stopped.value) for part in named(registrar.ws))
    assert code not in EXIT_CODE_STATUS  # none of mutmut's codes


def test_a_ledger_that_does_not_read_back_starts_the_session_empty(ws: Workspace) -> None:
    ws.attempts_file.write_text("{", encoding="utf-8")
    registrar = Registrar.load(ws, "run1")
    assert registrar.ledger == {}
    assert kept(registrar, Result(M1, -9)) == [] and registrar.ledger == {M1: (-9,)}  # a first attempt, written


@pytest.mark.parametrize("raised", [RuntimeError("pytest exited 4"), KeyboardInterrupt(), SystemExit(0)])
def test_a_worker_that_raises_ends_where_it_was_forked_with_its_traceback_on_fd_2(
    tmp_path: Path, raised: BaseException
) -> None:
    """As mutmut's `ForkRunner.submit` forks and the child raises: the child never returns into the caller's code."""
    log = tmp_path / "log"
    forked: list[int] = []

    def submit() -> None:
        pid = os.fork()
        if pid:
            forked.append(pid)
            return
        with log.open("wb") as out:  # what the session's log is to a worker
            os.dup2(out.fileno(), 2)
        raise raised

    try:
        contained(submit)
    finally:
        if not forked:  # the child came back here, returning or raising: end it, and let the parent see it did
            os._exit(99)
    assert os.waitstatus_to_exitcode(os.waitpid(forked[0], 0)[1]) == WORKER_RAISED
    said = log.read_text(encoding="utf-8")
    assert said.startswith("mutmut's worker raised:\nTraceback (most recent call last):\n")
    assert said.endswith(traceback.format_exception_only(raised)[-1])


def test_what_submit_raises_in_the_session_itself_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "_exit", lambda code: pytest.fail(f"the session itself would have exited {code}"))

    def submit() -> None:
        raise RuntimeError("the session's own error")

    with pytest.raises(RuntimeError, match="the session's own error"):
        contained(submit)


def test_the_ledger_is_written_atomically_as_json(registrar: Registrar) -> None:
    kept(registrar, Result(M1, -9))
    data = json.loads(registrar.ws.attempts_file.read_text(encoding="utf-8"))
    assert data == {"version": 1, "mutants": {M1: [-9]}}
    # the workspace's marker and the ledger: no temporary left beside it
    assert sorted(p.name for p in registrar.ws.dir.iterdir()) == sorted([MARKER, "attempts.json"])
