"""The leak detectors, as a registry. Each reads one `Observation` and returns its evidence, or nothing.

Adding a detector means one `Detector` entry: its check, the observation fields it reads (which
`guards.drive` fills), and one example leak (the changes to a clean observation that make it fire).
The generic tests, the guards and the README table (with each example's evidence) all iterate `DETECTORS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from warnonce_guard.guards.observe import Observation

EXCEPTION_RETAINED = "exception retained"
OWNER_PINNED = "owner pinned"
WARNING_REPEATED = "warning repeated"
MESSAGE_CHANGED = "message changed"


@dataclass(frozen=True)
class Detection:
    detector: str
    evidence: str

    def __str__(self) -> str:
        return f"{self.detector}: {self.evidence}"


@dataclass(frozen=True)
class Detector:
    """One detector: a name, what it says, the check, the fields it reads and an example leak."""

    name: str
    description: str
    check: Callable[[Observation], str | None]  # the evidence when it fires, else None
    reads: tuple[str, ...]  # Observation fields the check reads
    leak: Mapping[str, Any]  # changes to `clean_observation()` that make it fire

    def __call__(self, obs: Observation) -> Detection | None:
        evidence = self.check(obs)
        return Detection(self.name, evidence) if evidence is not None else None


def _held_by(holders: list[str]) -> str:
    return f"; held by {' <- '.join(holders)}" if holders else ""


def _exception_retained(obs: Observation) -> str | None:
    if not obs.exceptions_alive:
        return None
    return (
        f"{obs.exceptions_alive} of {obs.exceptions_raised} ImportError instances still alive after "
        f"gc.collect(){_held_by(obs.exception_holders)}"
    )


def _owner_pinned(obs: Observation) -> str | None:
    if not obs.owners_alive:
        return None
    return (
        f"{obs.owners_alive} of {obs.calls} LLM stand-ins still alive after del + gc.collect()"
        f"{_held_by(obs.owner_holders)}"
    )


def _warning_repeated(obs: Observation) -> str | None:
    if len(obs.emitted) <= 1:
        return None
    return f"emitted {len(obs.emitted)} times over {obs.calls} calls: {obs.emitted[0]!r}"


def _message_changed(obs: Observation) -> str | None:
    if not obs.emitted:
        return f"no log record emitted over {obs.calls} calls (expected one)"
    got = obs.emitted[0]
    if obs.expected_message is not None and got != obs.expected_message:
        return f"expected {obs.expected_message!r}, got {got!r}"
    if obs.expected_message is None and obs.expected_fragment and obs.expected_fragment not in got:
        return f"expected the text to contain {obs.expected_fragment!r}, got {got!r}"
    return None


_TEXT = "Failed to import from vllm._C: BlockedKernelImport(\"No module named 'vllm._C'\")"

DETECTORS: tuple[Detector, ...] = (
    Detector(
        EXCEPTION_RETAINED,
        "the blocked-import exception is still alive after gc.collect()",
        _exception_retained,
        ("exceptions_alive", "exceptions_raised", "exception_holders"),
        {"exceptions_alive": 2, "exception_holders": ["tuple", "_lru_cache_wrapper vllm.logger._print_warning_once"]},
    ),
    Detector(
        OWNER_PINNED,
        "the object whose __init__ called import_kernels() (an LLM stand-in) outlived its last reference",
        _owner_pinned,
        ("owners_alive", "calls", "owner_holders"),
        {"owners_alive": 2, "owner_holders": ["frame LLMStandIn.__init__", "frame Platform.import_kernels"]},
    ),
    Detector(
        WARNING_REPEATED,
        "a *_once warning was emitted more than once over repeated calls",
        _warning_repeated,
        ("emitted", "calls"),
        {"emitted": [_TEXT, _TEXT]},
    ),
    Detector(
        MESSAGE_CHANGED,
        "the text emitted differs from what the site renders unmutated (or nothing was emitted)",
        _message_changed,
        ("emitted", "expected_message", "expected_fragment", "calls"),
        {"emitted": ["Failed to import from vllm._C: No module named 'vllm._C'"]},
    ),
)


def clean_observation() -> Observation:
    """What an eagerly formatted `warning_once` site yields when driven twice: no detector fires."""
    return Observation(
        "vllm/platforms/interface.py::Platform.import_kernels::vllm._C#0",
        calls=2,
        log_calls=2,
        emitted=[_TEXT],
        exceptions_raised=2,
        expected_message=_TEXT,
        expected_fragment="No module named 'vllm._C'",
    )


def example_leak(detector: Detector) -> Observation:
    """The detector's example: a clean observation with its leak applied."""
    return replace(clean_observation(), **detector.leak)


def detections(obs: Observation) -> list[Detection]:
    """Every detector's finding for one observation, in registry order."""
    return [found for detector in DETECTORS if (found := detector(obs)) is not None]
