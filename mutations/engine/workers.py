"""What the session does with each mutmut worker's exit code: keep it as the mutant's result, or test again; and
how a worker ends whatever it raises.

`Registrar.wrap`, over mutmut's `_register_mutant_result`, decides per result by the rule of
`mutations.engine.attempts`; `contained` wraps mutmut's `ForkRunner.submit`, which forks the worker.
"""

from __future__ import annotations

import functools
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from warnonce_guard.common.errors import BadRecord, EngineFailed, RecordsUnwritten
from warnonce_guard.guards.sessions import UNWRITTEN_STATUS, mutant_session_path, read_session
from warnonce_guard.mutations.engine import attempts, running
from warnonce_guard.mutations.engine.attempts import Outcome
from warnonce_guard.mutations.workspace import Workspace


@dataclass
class Registrar:
    """One session's decisions on its workers' exit codes, and its ledger of abnormal attempts."""

    ws: Workspace
    run_id: str
    ledger: dict[str, tuple[int, ...]] = field(default_factory=dict)
    again: set[str] = field(default_factory=set)  # mutants to test again before the session ends

    @classmethod
    def load(cls, ws: Workspace, run_id: str) -> Registrar:
        """The registrar with the workspace's ledger (the run checked it; one that does not validate is empty)."""
        try:
            ledger = attempts.read(ws.attempts_file)
        except BadRecord:
            ledger = {}
        return cls(ws, run_id, ledger)

    def _save(self) -> None:
        attempts.write(self.ws.attempts_file, self.ledger)

    def _finished_record(self, mutant: str) -> int | None:
        """The exit status of this run's finished guard session for `mutant`, if it wrote one."""
        record = read_session(mutant_session_path(self.ws.attribution, mutant))
        if record is None or record.run != self.run_id or record.mutant != mutant:
            return None
        return record.exit_status

    def settle(self, mutant: str, code: int) -> int | None:
        """The exit code to keep for this attempt of `mutant`, or None: test it again."""
        if code == UNWRITTEN_STATUS:
            raise RecordsUnwritten(f"the guards could not write their records in {self.ws.attribution}")
        if code == WORKER_RAISED:
            raise EngineFailed(f"mutmut's worker testing {mutant} raised; its traceback is in {self.ws.log_file}")
        kind = attempts.outcome(code)
        if kind is not Outcome.OWN and (finished := self._finished_record(mutant)) is not None:
            code, kind = finished, Outcome.OWN  # every guard ran and said so: the worker died afterwards
        if kind is Outcome.OWN:
            if self.ledger.pop(mutant, None) is not None:
                self._save()
            return code
        if attempts.abnormal(code):
            self.ledger[mutant] = (*self.ledger.get(mutant, ()), code)
            self._save()
            if len(self.ledger[mutant]) >= attempts.REPEATS:
                return code
        forget_attempt(self.ws, mutant)
        self.again.add(mutant)
        return None

    def wrap(self, register: Callable[..., None]) -> Callable[..., None]:
        """mutmut's `_register_mutant_result(result, mutation_data_by_mutant_name)`, deciding first."""

        @functools.wraps(register)
        def registered(result: Any, *args: Any, **kwargs: Any) -> None:
            code = self.settle(result.mutant_name, result.exit_code)
            if code is None:
                return
            result.exit_code = code
            register(result, *args, **kwargs)

        return registered

    def take_again(self) -> list[str]:
        """The mutants to test again (sorted), forgetting them: the next round decides afresh."""
        names, self.again = sorted(self.again), set()
        return names


def forget_attempt(ws: Workspace, mutant: str) -> None:
    """What an earlier attempt at `mutant` left, removed: its guard record and the test its session was running (the
    next attempt writes its own, and names its own test)."""
    mutant_session_path(ws.attribution, mutant).unlink(missing_ok=True)
    running.ended(ws.attribution, mutant)


# A worker that raised (`contained`): the engine failed testing its mutant, which is no verdict of the mutant's
# (mutmut's codes end at 37: `engine.status`).
WORKER_RAISED = 38


def contained(submit: Callable[[], None]) -> None:
    """mutmut's `ForkRunner.submit`, whose worker (forked inside it) ends there whatever it raises. mutmut lets an
    exception of the worker's (pytest's usage error on a mutant, a CPU limit the system refuses) climb the worker's
    copy of the session's stack, where it would go on as a second session, writing its records. The worker exits
    `WORKER_RAISED`, the traceback in the session's log, and the session stops there (`Registrar.settle`). In the
    session itself what `submit` raises is raised."""
    session = os.getpid()
    try:
        submit()
    except BaseException as err:
        if os.getpid() == session:
            raise
        try:  # fd 2: the session's log (mutmut points sys.stderr at /dev/null)
            os.write(2, "".join(["mutmut's worker raised:\n", *traceback.format_exception(err)]).encode())
        finally:  # whatever writing it raised (a second interrupt): the worker ends here
            os._exit(WORKER_RAISED)
