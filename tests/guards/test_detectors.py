"""The detectors on hand-made observations: each fires on its example leak with evidence, quiet on a clean run."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest
from warnonce_guard.guards import detectors
from warnonce_guard.guards.detectors import DETECTORS, Detection, Detector, clean_observation, detections, example_leak
from warnonce_guard.guards.observe import Observation

TEXT = clean_observation().expected_message
IDS = [d.name for d in DETECTORS]
BY_NAME = {d.name: d for d in DETECTORS}


def leaking() -> Observation:
    """What `warning_once("...: %r", e)` yields: both exceptions and owners survive, the warning repeats."""
    return replace(
        clean_observation(),
        emitted=[TEXT, TEXT],
        once_emitted=[TEXT, TEXT],
        exceptions_alive=2,
        exception_holders=["tuple", "_lru_cache_wrapper vllm.logger._print_warning_once"],
        owners_alive=2,
        owner_holders=["frame LLMStandIn.__init__", "frame Platform.import_kernels", "traceback"],
    )


def test_clean_observation_has_no_finding() -> None:
    assert detections(clean_observation()) == []


@pytest.mark.parametrize("detector", DETECTORS, ids=IDS)
def test_each_detector_fires_on_its_example_leak_and_is_quiet_on_a_clean_run(detector: Detector) -> None:
    found = detector(example_leak(detector))
    assert found is not None and found.detector == detector.name and found.evidence
    assert detector(clean_observation()) is None
    assert [f.detector for f in detections(example_leak(detector))] == [detector.name]  # its leak alone trips it


@pytest.mark.parametrize("detector", DETECTORS, ids=IDS)
def test_each_detector_reads_and_leaks_only_observation_fields(detector: Detector) -> None:
    assert set(detector.reads) <= {f.name for f in fields(Observation)} and set(detector.leak) <= set(detector.reads)
    assert detector.description and detector.name == detector.name.lower()


def test_detector_names_are_distinct_and_every_observation_field_is_filled_or_read() -> None:
    assert len({d.name for d in DETECTORS}) == len(DETECTORS)
    read = {name for d in DETECTORS for name in d.reads}
    plain = {f.name for f in fields(Observation)} - read
    assert plain == {"site_id", "imports_blocked", "steered"}  # facts for `reached` and the unreached message


def test_a_leaking_observation_is_reported_by_every_detector_it_trips_in_order() -> None:
    assert [f.detector for f in detections(leaking())] == [
        detectors.EXCEPTION_RETAINED,
        detectors.OWNER_PINNED,
        detectors.WARNING_REPEATED,
    ]


def test_exception_retained_names_counts_and_holders() -> None:
    assert BY_NAME[detectors.EXCEPTION_RETAINED](leaking()) == Detection(
        detectors.EXCEPTION_RETAINED,
        "2 of 2 ImportError instances still alive after gc.collect(); "
        "held by tuple <- _lru_cache_wrapper vllm.logger._print_warning_once",
    )


def test_exception_retained_without_a_known_holder_still_fires() -> None:
    found = BY_NAME[detectors.EXCEPTION_RETAINED](replace(clean_observation(), exceptions_alive=1))

    assert found is not None
    assert found.evidence == "1 of 2 ImportError instances still alive after gc.collect()"


def test_owner_pinned_names_counts_and_the_referrer_chain() -> None:
    found = BY_NAME[detectors.OWNER_PINNED](leaking())

    assert found is not None
    assert found.evidence.startswith("2 of 2 LLM stand-ins still alive after del + gc.collect()")
    assert "held by frame LLMStandIn.__init__ <- frame Platform.import_kernels <- traceback" in found.evidence


def test_warning_repeated_names_the_count_and_the_text() -> None:
    found = BY_NAME[detectors.WARNING_REPEATED](replace(clean_observation(), once_emitted=[TEXT, TEXT]))

    assert found is not None
    assert found.evidence == f"emitted 2 times over 2 calls: {TEXT!r}"


def test_message_changed_names_both_texts() -> None:
    got = "Failed to import from vllm._C: No module named 'vllm._C'"

    found = BY_NAME[detectors.MESSAGE_CHANGED](replace(clean_observation(), emitted=[got]))

    assert found is not None
    assert repr(TEXT) in found.evidence and repr(got) in found.evidence


def test_message_changed_fires_when_nothing_was_emitted() -> None:
    found = BY_NAME[detectors.MESSAGE_CHANGED](replace(clean_observation(), emitted=[]))

    assert found is not None
    assert found.evidence == "no log record emitted over 2 calls (expected one)"


def test_message_without_a_known_text_must_contain_the_fragment() -> None:
    unknown = replace(clean_observation(), expected_message=None)
    fragment = unknown.expected_fragment

    assert BY_NAME[detectors.MESSAGE_CHANGED](replace(unknown, emitted=[f"kernels: {fragment}"])) is None
    found = BY_NAME[detectors.MESSAGE_CHANGED](replace(unknown, emitted=["kernels: missing"]))
    assert found is not None and repr(fragment) in found.evidence


def test_finding_reads_as_detector_and_evidence() -> None:
    assert str(Detection(detectors.OWNER_PINNED, "2 of 2")) == f"{detectors.OWNER_PINNED}: 2 of 2"


def test_observation_is_reached_only_when_the_blocked_import_was_raised_in_the_sites_function() -> None:
    assert clean_observation().reached
    assert not replace(clean_observation(), imports_blocked=0).reached


def test_the_clean_observation_is_what_the_eager_interface_site_gives_when_driven_twice() -> None:
    """The examples (README's detector table) start from it: it must be a real site's, not any quiet one."""
    obs = clean_observation()
    assert obs.site_id == "vllm/platforms/interface.py::Platform.import_kernels::vllm._C"
    assert obs.calls == obs.imports_blocked == obs.exceptions_raised == 2  # one blocked import per drive
    assert obs.emitted == obs.once_emitted == [obs.expected_message]  # once, through the cache
    assert obs.expected_fragment == "No module named 'vllm._C'"
    assert obs.expected_fragment in (obs.expected_message or "")


def test_the_text_emitted_most_is_the_repeat_named_whatever_else_came_out() -> None:
    other = "using the fallback kernels"  # once, and after TEXT in any order of texts
    obs = replace(clean_observation(), calls=3, once_emitted=[other, TEXT, TEXT, TEXT])
    found = BY_NAME[detectors.WARNING_REPEATED](obs)
    assert found is not None and found.evidence == f"emitted 3 times over 3 calls: {TEXT!r}"


def test_two_different_texts_are_no_repeat() -> None:
    obs = replace(clean_observation(), emitted=[TEXT, "second"], once_emitted=[TEXT, "second"])
    assert BY_NAME[detectors.WARNING_REPEATED](obs) is None


def test_without_a_recognised_call_only_a_text_the_once_cache_let_through_twice_is_a_repeat() -> None:
    unread = replace(clean_observation(), expects_once=False, expected_message=None, expected_fragment="")
    plain_twice = replace(unread, emitted=[TEXT, TEXT], once_emitted=[])  # logger.warning, twice: no cache
    cached_twice = replace(unread, emitted=[], once_emitted=[TEXT, TEXT])  # whatever call sent it to the cache

    assert detections(plain_twice) == []
    found = BY_NAME[detectors.WARNING_REPEATED](cached_twice)
    assert found is not None and found.evidence == f"emitted 2 times over 2 calls: {TEXT!r}"


def test_the_recognised_calls_text_twice_is_a_repeat_by_any_path() -> None:
    """`once-dropped` makes the call uncached: its text comes out twice, never through the cache."""
    found = BY_NAME[detectors.WARNING_REPEATED](replace(clean_observation(), emitted=[TEXT, TEXT], once_emitted=[]))
    assert found is not None


def test_message_changed_needs_a_recognised_call() -> None:
    unread = replace(clean_observation(), expects_once=False, emitted=[])
    assert BY_NAME[detectors.MESSAGE_CHANGED](unread) is None
