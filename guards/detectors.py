"""The leak detectors, as a registry. Each reads one `Observation` and returns its evidence, or nothing.

Adding a detector means one `Detector` entry: its check, the observation fields it reads (which
`guards.drive` fills), and one example leak (the changes to a clean observation that make it fire).
The generic tests, the guards and the README table (with each example's evidence) all iterate `DETECTORS`.
"""

from __future__ import annotations

from collections import Counter
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
    """A text the *_once cache let through more than once (whatever call sent it there), or the text of the handler's
    recognised *_once call emitted more than once (by any path: a call made uncached repeats too)."""
    counts = Counter(obs.once_emitted) | (Counter(obs.emitted) if obs.expects_once else Counter())
    text, times = max(counts.items(), key=lambda item: item[1], default=("", 0))
    return f"emitted {times} times over {obs.calls} calls: {text!r}" if times > 1 else None


def _message_changed(obs: Observation) -> str | None:
    if not obs.expects_once:  # no recognised call: no text to expect
        return None
    if not obs.emitted:
        return f"no log record emitted over {obs.calls} calls (expected one)"
    got = obs.emitted[0]
    if obs.expected_message is not None and obs.expected_message not in obs.emitted:
        return f"expected {obs.expected_message!r}, got {got!r}"
    fragment = obs.expected_fragment
    if obs.expected_message is None and fragment and not any(fragment in text for text in obs.emitted):
        return f"expected the text to contain {fragment!r}, got {got!r}"
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
        "a warning went through a *_once cache more than once over repeated calls (or the recognised call's text did)",
        _warning_repeated,
        ("once_emitted", "emitted", "expects_once", "calls"),
        {"emitted": [_TEXT, _TEXT], "once_emitted": [_TEXT, _TEXT]},
    ),
    Detector(
        MESSAGE_CHANGED,
        "the text emitted differs from what the site's recognised call renders unmutated (or nothing was emitted)",
        _message_changed,
        ("emitted", "expects_once", "expected_message", "expected_fragment", "calls"),
        {"emitted": ["Failed to import from vllm._C: No module named 'vllm._C'"]},
    ),
)


def clean_observation() -> Observation:
    """What an eagerly formatted `warning_once` site yields when driven twice: no detector fires."""
    return Observation(
        "vllm/platforms/interface.py::Platform.import_kernels::vllm._C",
        calls=2,
        imports_blocked=2,
        emitted=[_TEXT],
        once_emitted=[_TEXT],
        expects_once=True,
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
