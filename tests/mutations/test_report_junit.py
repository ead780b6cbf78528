"""junit.xml: one testcase per mutant and per exposed/unreached site, with counts that add up."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from warnonce_guard.guards.detectors import EXCEPTION_RETAINED, OWNER_PINNED
from warnonce_guard.mutations.records import CRASHED, FLAKY, NO_TESTS, SURVIVED, TIMEOUT, RunResult
from warnonce_guard.mutations.report import junit

from tests.records_support import CPU_SITE, CUDA_SITE, RUN, every_status_result, run_result, sample_result

UNKILLED = (SURVIVED, TIMEOUT, CRASHED, NO_TESTS, FLAKY)


def parsed(result: RunResult) -> ET.Element:
    return ET.fromstring(junit.render(result))


def expected_failures(result: RunResult) -> int:
    without_mutants = len(result.sites_with("exposed")) + len(result.sites_with("unreached"))
    return sum(result.count(s) for s in UNKILLED) + without_mutants


def test_failures_are_unkilled_mutants_plus_sites_without_mutants() -> None:
    for result in (sample_result(), every_status_result()):
        suite = parsed(result).find("testsuite")
        cases = suite.findall("testcase")
        failures = [c for c in cases if c.find("failure") is not None]
        skipped = [c for c in cases if c.find("skipped") is not None]
        assert len(failures) == int(suite.get("failures")) == expected_failures(result)
        assert len(skipped) == int(suite.get("skipped")) == result.count("skipped")
        assert (
            len(cases)
            == int(suite.get("tests"))
            == len(result.mutants) + expected_failures(result) - sum(result.count(s) for s in UNKILLED)
        )
        assert suite.get("errors") == "0"


def test_killed_mutant_passes_and_is_named_by_site_and_operator() -> None:
    result = sample_result()
    killed = next(m for m in result.mutants if m.status == "killed")
    case = next(c for c in parsed(result).iter("testcase") if killed.mutant_id in c.get("name"))
    assert case.get("classname") == CPU_SITE.id
    assert case.get("name") == f"eager-repr-revert [{killed.mutant_id}]"
    assert list(case) == [] and case.get("time") == "1.250"


def test_each_unkilled_status_is_a_failure_of_that_type() -> None:
    types = sorted(f.get("type") for f in parsed(every_status_result()).iter("failure"))
    assert types == sorted([*UNKILLED, "unreached"])


def test_exposed_site_is_a_failure_naming_its_detectors() -> None:
    failure = next(c for c in parsed(sample_result()).iter("testcase") if c.get("name").startswith("baseline"))
    assert failure.get("classname") == CUDA_SITE.id
    assert failure.find("failure").get("message") == f"site exposed at baseline: {EXCEPTION_RETAINED}, {OWNER_PINNED}"


def test_skipped_mutants_are_skipped_not_failed() -> None:
    cases = [c for c in parsed(sample_result()).iter("testcase") if c.get("classname") == CUDA_SITE.id]
    assert sum(c.find("skipped") is not None for c in cases) == 3


def test_the_suite_names_the_run_that_wrote_it() -> None:
    properties = {p.get("name"): p.get("value") for p in parsed(run_result()).iter("property")}
    assert properties == {
        "vllm_version": "0.33.0",
        "scored_by": "the guards of warnonce-guard",
        "run_id": RUN.run_id,
        "run_started": "2026-05-01T12:34:56Z",
        "tool_version": "1.2.3",
    }
