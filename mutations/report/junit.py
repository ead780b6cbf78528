"""`junit.xml`: one testcase per mutant and per site with no mutants, for CI test-result views.

A mutant the guards did not kill (survived, timeout, crashed, not reached) is a failure; a killed one
passes; a skipped one is skipped, and so is a neutralized one (of type `neutralized`: the target's cache kept it
harmless). A site exposed or unreached at baseline is a failure too: the
bug is live there, or no guard reaches it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from warnonce_guard.mutations.records import EXPOSED, KILLED, NEUTRALIZED, SKIPPED, UNREACHED, RunResult

SUITE = "warnonce-guard mutation"


def build(result: RunResult) -> ET.Element:
    suites = ET.Element("testsuites", name=SUITE)
    suite = ET.SubElement(suites, "testsuite", name=SUITE)
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="vllm_version", value=result.vllm_version)
    ET.SubElement(properties, "property", name="scored_by", value=result.scored_by)
    if result.run is not None:  # which run wrote the file, as mutation.json and summary.md say
        run = result.run
        for name, value in (("run_id", run.run_id), ("run_started", run.started), ("tool_version", run.tool_version)):
            ET.SubElement(properties, "property", name=name, value=value)
    tests = failures = skipped = 0
    for verdict in result.mutants:
        case = ET.SubElement(
            suite, "testcase", classname=verdict.site.id, name=f"{verdict.operator} [{verdict.mutant_id}]"
        )
        if verdict.duration_s is not None:
            case.set("time", f"{verdict.duration_s:.3f}")
        tests += 1
        if verdict.status == SKIPPED:
            skipped += 1
            ET.SubElement(case, "skipped", message=verdict.reason or "not run")
        elif verdict.status == NEUTRALIZED:  # neither a failure nor a kill: the target's cache kept it harmless
            skipped += 1
            ET.SubElement(case, "skipped", type=NEUTRALIZED, message=verdict.reason)
        elif verdict.status != KILLED:
            failures += 1
            failure = ET.SubElement(
                case, "failure", type=verdict.status, message=verdict.reason or f"mutant {verdict.status}"
            )
            failure.text = f"{verdict.original!r} -> {verdict.replacement!r} at line {verdict.location.start_line}"
    for baseline in result.baselines:
        if baseline.status not in (EXPOSED, UNREACHED):
            continue
        case = ET.SubElement(suite, "testcase", classname=baseline.site.id, name=f"baseline [{baseline.guard}]")
        tests += 1
        failures += 1
        failure = ET.SubElement(case, "failure", type=baseline.status, message=baseline.reason)
        failure.text = baseline.detail or None
    totals = {"tests": tests, "failures": failures, "errors": 0, "skipped": skipped}
    for element in (suites, suite):
        element.attrib.update({name: str(count) for name, count in totals.items()}, time=f"{result.duration_s:.3f}")
    return suites


def render(result: RunResult) -> bytes:
    tree = ET.ElementTree(build(result))
    ET.indent(tree)
    return ET.tostring(tree.getroot(), encoding="utf-8", xml_declaration=True) + b"\n"
