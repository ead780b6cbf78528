"""The four detectors on hand-made observations: each fires on a leak, with evidence, and is quiet on a clean run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from guards import detectors
from guards.detectors import Finding, findings
from guards.observe import LogCall, Observation

TEXT = "Failed to import from vllm._C: BlockedKernelImport(\"No module named 'vllm._C'\")"
FRAGMENT = "BlockedKernelImport(\"No module named 'vllm._C'\")"


def clean() -> Observation:
    """What an eagerly formatted `warning_once` site yields when driven twice."""
    call = LogCall("warning_once", ("str",), passes_exception=False, text=TEXT)
    return Observation(
        "vllm/platforms/interface.py::Platform.import_kernels::vllm._C#0",
        calls=2,
        log_calls=[call, call],
        emitted=[TEXT],
        exceptions_raised=2,
        expected_message=TEXT,
        expected_fragment=FRAGMENT,
    )


def leaking() -> Observation:
    """What `warning_once("...: %r", e)` yields: both exceptions and owners survive, the warning repeats."""
    return replace(
        clean(),
        emitted=[TEXT, TEXT],
        exceptions_alive=2,
        exception_holders=["tuple", "_lru_cache_wrapper vllm.logger._print_warning_once"],
        owners_alive=2,
        owner_holders=["frame LLMStandIn.__init__", "frame Platform.import_kernels", "traceback"],
    )


def test_clean_observation_has_no_finding() -> None:
    assert findings(clean()) == []


def test_leaking_observation_is_reported_by_every_detector_it_trips_in_order() -> None:
    assert [f.detector for f in findings(leaking())] == [
        detectors.EXCEPTION_RETAINED,
        detectors.OWNER_PINNED,
        detectors.WARNING_REPEATED,
    ]


@pytest.mark.parametrize(
    "detector",
    [detectors.exception_retained, detectors.owner_pinned, detectors.warning_repeated, detectors.message_changed],
)
def test_each_detector_is_quiet_on_a_clean_observation(detector: Callable[[Observation], Finding | None]) -> None:
    assert detector(clean()) is None


def test_exception_retained_names_counts_and_holders() -> None:
    found = detectors.exception_retained(leaking())

    assert found == Finding(
        detectors.EXCEPTION_RETAINED,
        "2 of 2 ImportError instances still alive after gc.collect(); "
        "held by tuple <- _lru_cache_wrapper vllm.logger._print_warning_once",
    )


def test_exception_retained_without_a_known_holder_still_fires() -> None:
    found = detectors.exception_retained(replace(clean(), exceptions_alive=1))

    assert found is not None
    assert found.evidence == "1 of 2 ImportError instances still alive after gc.collect()"


def test_owner_pinned_names_counts_and_the_referrer_chain() -> None:
    found = detectors.owner_pinned(leaking())

    assert found is not None
    assert found.detector == detectors.OWNER_PINNED
    assert found.evidence.startswith("2 of 2 LLM stand-ins still alive after del + gc.collect()")
    assert "held by frame LLMStandIn.__init__ <- frame Platform.import_kernels <- traceback" in found.evidence


def test_warning_repeated_names_the_count_and_the_text() -> None:
    found = detectors.warning_repeated(replace(clean(), emitted=[TEXT, TEXT]))

    assert found is not None
    assert found.evidence == f"emitted 2 times over 2 calls: {TEXT!r}"


def test_message_changed_fires_when_the_text_differs() -> None:
    got = "Failed to import from vllm._C: No module named 'vllm._C'"

    found = detectors.message_changed(replace(clean(), emitted=[got]))

    assert found is not None
    assert found.detector == detectors.MESSAGE_CHANGED
    assert repr(TEXT) in found.evidence and repr(got) in found.evidence


def test_message_changed_fires_when_nothing_was_emitted() -> None:
    found = detectors.message_changed(replace(clean(), emitted=[]))

    assert found is not None
    assert found.evidence == "no log record emitted over 2 calls (expected one)"


def test_message_without_a_literal_must_contain_the_exception_repr() -> None:
    unknown = replace(clean(), expected_message=None)

    assert detectors.message_changed(replace(unknown, emitted=[f"kernels: {FRAGMENT}"])) is None
    found = detectors.message_changed(replace(unknown, emitted=["kernels: No module named 'vllm._C'"]))
    assert found is not None
    assert repr(FRAGMENT) in found.evidence


def test_finding_reads_as_detector_and_evidence() -> None:
    assert str(Finding(detectors.OWNER_PINNED, "2 of 2")) == "owner pinned: 2 of 2"


def test_observation_is_reached_only_when_the_site_logged() -> None:
    assert clean().reached
    assert not replace(clean(), log_calls=[]).reached
