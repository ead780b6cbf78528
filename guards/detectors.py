"""The four leak detectors. Each reads one `Observation` and returns a `Finding` with evidence, or None."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from guards.observe import Observation

EXCEPTION_RETAINED = "exception retained"
OWNER_PINNED = "owner pinned"
WARNING_REPEATED = "warning repeated"
MESSAGE_CHANGED = "message changed"


@dataclass(frozen=True)
class Finding:
    detector: str
    evidence: str

    def __str__(self) -> str:
        return f"{self.detector}: {self.evidence}"


def _held_by(holders: list[str]) -> str:
    return f"; held by {' <- '.join(holders)}" if holders else ""


def exception_retained(obs: Observation) -> Finding | None:
    """The blocked-import exception is still alive after gc.collect()."""
    if not obs.exceptions_alive:
        return None
    return Finding(
        EXCEPTION_RETAINED,
        f"{obs.exceptions_alive} of {obs.exceptions_raised} ImportError instances still alive after "
        f"gc.collect(){_held_by(obs.exception_holders)}",
    )


def owner_pinned(obs: Observation) -> Finding | None:
    """The object whose __init__ called import_kernels() (the LLM stand-in) outlived its last reference."""
    if not obs.owners_alive:
        return None
    return Finding(
        OWNER_PINNED,
        f"{obs.owners_alive} of {obs.calls} LLM stand-ins still alive after del + gc.collect()"
        f"{_held_by(obs.owner_holders)}",
    )


def warning_repeated(obs: Observation) -> Finding | None:
    """A `*_once` warning was emitted more than once over repeated calls."""
    if len(obs.emitted) <= 1:
        return None
    return Finding(WARNING_REPEATED, f"emitted {len(obs.emitted)} times over {obs.calls} calls: {obs.emitted[0]!r}")


def message_changed(obs: Observation) -> Finding | None:
    """The emitted text differs from the `%r` rendering the upstream fix preserved (or nothing was emitted)."""
    if not obs.emitted:
        return Finding(MESSAGE_CHANGED, f"no log record emitted over {obs.calls} calls (expected one)")
    got = obs.emitted[0]
    if obs.expected_message is not None and got != obs.expected_message:
        return Finding(MESSAGE_CHANGED, f"expected {obs.expected_message!r}, got {got!r}")
    if obs.expected_message is None and obs.expected_fragment and obs.expected_fragment not in got:
        return Finding(MESSAGE_CHANGED, f"expected the text to contain {obs.expected_fragment!r}, got {got!r}")
    return None


DETECTORS: tuple[Callable[[Observation], Finding | None], ...] = (
    exception_retained,
    owner_pinned,
    warning_repeated,
    message_changed,
)


def findings(obs: Observation) -> list[Finding]:
    """Every detector's finding for one observation, in a fixed order."""
    return [found for detector in DETECTORS if (found := detector(obs)) is not None]
