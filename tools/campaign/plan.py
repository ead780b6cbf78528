"""The faults a campaign injects, how a trial's target, fault and moment are drawn, and what each fault allows.

A moment is drawn uniformly over the window in which the aimed process lived during the clean run of the
target (both ends included: the first and the last tenth of a second are as likely as any other): the
whole run for the command and its group, the mutmut session's lifetime for the session, the span in which
mutmut's workers ran for a worker. The draw of one trial depends only on the seed and its number, so
`--only N` repeats trial N of a seeded campaign.
"""

from __future__ import annotations

import random
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from warnonce_guard.common.errors import ExitCode

MAX_GAP_S = 1.0  # between the two signals of a double signal: drawn uniformly from [0, MAX_GAP_S]


class Aim(StrEnum):
    COMMAND = "command"  # the `warnonce-guard mutate` process
    GROUP = "group"  # its process group (what a terminal's Ctrl-C or a CI runner's cancel reaches)
    SESSION = "session"  # the mutmut session process (`warnonce_guard.mutations.engine.session`)
    WORKER = "worker"  # one mutmut worker: a child of the session titled `mutmut: <mutant>`


@dataclass(frozen=True)
class Fault:
    name: str
    aim: Aim
    signals: tuple[signal.Signals, ...]  # two: the second follows the first after a drawn gap


_INT, _TERM, _KILL = signal.SIGINT, signal.SIGTERM, signal.SIGKILL
FAULTS: dict[str, Fault] = {
    fault.name: fault
    for fault in (
        Fault("int-command", Aim.COMMAND, (_INT,)),
        Fault("term-command", Aim.COMMAND, (_TERM,)),
        Fault("kill-command", Aim.COMMAND, (_KILL,)),
        Fault("int-group", Aim.GROUP, (_INT,)),
        Fault("term-group", Aim.GROUP, (_TERM,)),
        Fault("kill-group", Aim.GROUP, (_KILL,)),
        Fault("kill-session", Aim.SESSION, (_KILL,)),
        Fault("kill-worker", Aim.WORKER, (_KILL,)),
        Fault("int-int-group", Aim.GROUP, (_INT, _INT)),  # Ctrl-C pressed twice
        Fault("term-int-group", Aim.GROUP, (_TERM, _INT)),
        Fault("int-term-group", Aim.GROUP, (_INT, _TERM)),
    )
}

# What the command line exits with when the fault reaches it while it works.
_BY_SIGNAL = {_INT: int(ExitCode.INTERRUPTED), _TERM: int(ExitCode.TERMINATED), _KILL: -int(_KILL)}
SESSION_DIED = int(ExitCode.ENVIRONMENT)
INTERRUPTED = frozenset({int(ExitCode.INTERRUPTED), int(ExitCode.TERMINATED)})  # a rerun ending so is rerun


@dataclass(frozen=True)
class Windows:
    """When each process of the clean run lived, in seconds from its start."""

    run_s: float
    session: tuple[float, float] | None = None
    workers: tuple[float, float] | None = None

    def of(self, aim: Aim) -> tuple[float, float]:
        """The window a fault aimed at `aim` lands in (the whole run when that process was never seen)."""
        window = {Aim.SESSION: self.session, Aim.WORKER: self.workers}.get(aim)
        return window or (0.0, self.run_s)


@dataclass(frozen=True)
class Planned:
    number: int  # from 1
    target: str
    fault: Fault


def plan(
    seed: int, trials: int, vllm_trials: int, toys: Sequence[str], faults: Sequence[Fault], vllm: str
) -> list[Planned]:
    """`trials` trials: `vllm_trials` of them (at drawn places) on `vllm`, the others on a drawn toy; each a
    drawn fault."""
    if not 0 <= vllm_trials <= trials:
        raise ValueError(f"vllm_trials must be between 0 and {trials}")
    if not faults or (vllm_trials < trials and not toys):
        raise ValueError("nothing to draw from")
    rng = random.Random(seed)
    on_vllm = set(rng.sample(range(1, trials + 1), vllm_trials))
    return [
        Planned(n, vllm if n in on_vllm else rng.choice(list(toys)), rng.choice(list(faults)))
        for n in range(1, trials + 1)
    ]


def trial_rng(seed: int, number: int) -> random.Random:
    """The draws of one trial (its moment and gap): the same for the same seed and number, whatever ran before."""
    return random.Random(f"{seed}:{number}")


def draw_moment(rng: random.Random, fault: Fault, windows: Windows) -> tuple[float, float]:
    """(moment in seconds from the start, gap before a second signal (0 for one signal))."""
    low, high = windows.of(fault.aim)
    moment = rng.uniform(low, high)
    return moment, (rng.uniform(0.0, MAX_GAP_S) if len(fault.signals) > 1 else 0.0)


def allowed_exits(
    fault: Fault, sent: bool, after_end: bool, clean_exit: int, in_startup: bool = False
) -> frozenset[int]:
    """The exit codes the contract allows the faulted run.

    A fault that reached the run while it worked: 130 for SIGINT, 143 for SIGTERM (the first of two signals
    decides), -9 for a SIGKILL of the command, 13 for a killed session; a killed worker's mutant is tested
    again, so the run ends as a clean one. A fault that landed after the end (the report complete, or the aimed
    process gone for good) also allows the clean run's exit code. A signal that reached the command during the
    interpreter's own start-up, before its first module caught stop signals, is Python's (README: not covered):
    killed by it, or 1 for a Ctrl-C that interrupts `site`; and ours if the handlers were installed meanwhile.
    """
    if not sent:
        return frozenset({clean_exit})
    if fault.aim is Aim.SESSION:
        reached = SESSION_DIED
    elif fault.aim is Aim.WORKER:
        reached = clean_exit
    else:
        reached = _BY_SIGNAL[fault.signals[0]]
    if in_startup:
        first = fault.signals[0]
        return frozenset({reached, -int(first)} | ({1} if first == _INT else set()))
    return frozenset({reached, clean_exit} if after_end else {reached})
