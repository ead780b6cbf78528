"""One trial's observations held against the contract: every reason it is wrong (an empty list: ok)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tools.campaign.plan import Fault, allowed_exits
from tools.campaign.runs import Verdicts

SHOWN = 3  # differences named in a reason; the rest are counted


@dataclass(frozen=True)
class Outcome:
    """How one run of the command line ended (code None: it had not ended when its time was up)."""

    code: int | None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0  # from its start to its end

    @property
    def first_line(self) -> str:
        lines = self.stderr.strip().splitlines()
        return lines[0][:200] if lines else ""


@dataclass(frozen=True)
class Observation:
    """What one trial saw."""

    fault: Fault
    sent: bool  # the fault (its first signal) was delivered
    after_end: bool  # it landed after the end: the report was complete, or the aimed process was gone for good
    faulted: Outcome
    faulted_report: Verdicts | None  # what --out held after the faulted run (None: no report)
    reruns: tuple[Outcome, ...]
    final: Verdicts | None  # what --out held after the last rerun
    left: tuple[str, ...] = ()  # processes of the run still alive after it ended ("pid cmdline")
    changed: tuple[str, ...] = ()  # files of the target or of the user's folder that changed
    stray: tuple[str, ...] = field(default=())  # temporary report folders left beside --out
    in_startup: bool = False  # the signal reached the command before its first module caught stop signals


def differences(clean: Verdicts, got: Verdicts) -> list[str]:
    """What `got` says differently from `clean`: per mutant (status, killed-by) and per site at baseline."""
    said = []
    for mutant in sorted(clean.mutants.keys() | got.mutants.keys()):
        want, have = clean.mutants.get(mutant), got.mutants.get(mutant)
        short = mutant.rsplit(".", 1)[-1]
        if want is None or have is None:
            said.append(f"{short} {'missing' if have is None else 'not in the clean run'}")
        elif want[0] != have[0]:
            said.append(f"{short} {have[0]} (clean: {want[0]})")
        elif want[2] != have[2]:
            said.append(f"{short} killed by {_guards(have[2])} (clean: {_guards(want[2])})")
    for site in sorted(clean.sites.keys() | got.sites.keys()):
        if clean.sites.get(site) != got.sites.get(site):
            said.append(f"site {site.split('::')[0]} {got.sites.get(site)} (clean: {clean.sites.get(site)})")
    return said


def _guards(tests: tuple[str, ...]) -> str:
    """A guard's test id, shortened to its parameter (the site it is for)."""
    return ",".join(t.rsplit("[", 1)[-1].rstrip("]").split("-", 1)[0] for t in tests) or "-"


def _summary(found: list[str]) -> str:
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    return "; ".join(found[:SHOWN]) + more


def _run_problems(
    outcome: Outcome, what: str, allowed: frozenset[int] | None, python_speaks: bool = False
) -> list[str]:
    if outcome.code is None:
        return [f"{what} did not end (hung)"]
    reasons = []
    if allowed is not None and outcome.code not in allowed:
        expected = " or ".join(str(code) for code in sorted(allowed))
        said = f": {outcome.first_line}" if outcome.first_line else ""
        reasons.append(f"{what} exited {outcome.code}, expected {expected}{said}")
    if not python_speaks and "Traceback (most recent call last)" in outcome.stderr + outcome.stdout:
        reasons.append(f"{what} printed a traceback")
    return reasons


def judge(obs: Observation, clean: Verdicts, clean_exit: int) -> list[str]:
    """Every way the trial broke the contract."""
    allowed = allowed_exits(obs.fault, obs.sent, obs.after_end, clean_exit, obs.in_startup)
    reasons = _run_problems(obs.faulted, "the faulted run", allowed, python_speaks=obs.in_startup)
    lines = len(obs.faulted.stderr.strip().splitlines())
    if obs.in_startup:
        pass  # Python's own start-up answered the signal: its words, not ours (the reruns are held as always)
    elif lines > 1:
        reasons.append(f"the faulted run wrote {lines} lines on stderr")
    elif lines == 0 and obs.faulted.code is not None and obs.faulted.code >= 2:  # an error, not a verdict
        reasons.append(f"the faulted run exited {obs.faulted.code} without a line on stderr")
    if obs.faulted_report is not None and (found := differences(clean, obs.faulted_report)):
        reasons.append(f"the faulted run's report differs: {_summary(found)}")
    for number, rerun in enumerate(obs.reruns, 1):
        last = number == len(obs.reruns)
        reasons += _run_problems(rerun, f"rerun {number}", frozenset({clean_exit}) if last else None)
    if not obs.reruns:
        reasons.append("no rerun")
    elif obs.final is None:
        reasons.append("no report after the reruns")
    elif found := differences(clean, obs.final):
        reasons.append(f"final statuses differ: {_summary(found)}")
    if obs.left:
        reasons.append(f"left running: {_summary(list(obs.left))}")
    if obs.changed:
        reasons.append(f"changed: {_summary(list(obs.changed))}")
    if obs.stray:
        reasons.append(f"left beside --out: {_summary(list(obs.stray))}")
    return reasons
