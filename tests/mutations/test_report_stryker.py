"""mutation.json: the Stryker report schema 2, validated against the official JSON schema."""

from __future__ import annotations

import json

import jsonschema
import pytest
from warnonce_guard.common.errors import SourceMissing
from warnonce_guard.guards.detectors import EXCEPTION_RETAINED, OWNER_PINNED
from warnonce_guard.mutations.operators import OPERATORS
from warnonce_guard.mutations.report import stryker, viewer

from tests.records_support import (
    CPU,
    CPU_SITE,
    CUDA,
    CUDA_SITE,
    RERUN,
    RUN,
    SOURCES,
    every_status_result,
    guard_id,
    run_result,
    sample_result,
)


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    schema = json.loads(viewer.SCHEMA_JSON.read_text(encoding="utf-8"))
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())


def mutants_by_id(report: dict) -> dict[str, dict]:
    return {m["id"]: m for f in report["files"].values() for m in f["mutants"]}


@pytest.mark.parametrize("build", [sample_result, every_status_result, run_result])
def test_report_validates_against_the_official_schema(validator: jsonschema.Draft7Validator, build) -> None:
    report = stryker.build(build())
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(report)]
    assert errors == []
    # The schema allows anything extra at the top; make sure it is the JSON the writer really emits.
    assert json.loads(json.dumps(report)) == report


def test_the_report_names_the_run_that_wrote_it_its_target_and_the_tool_version(
    validator: jsonschema.Draft7Validator,
) -> None:
    report = stryker.build(run_result())
    assert validator.is_valid(report)
    config = report["config"]
    assert config["run"] == {"id": RUN.run_id, "started": "2026-05-01T12:34:56Z", "toolVersion": "1.2.3"}
    assert (config["vllmVersion"], config["target"]) == ("0.33.0", "vllm==0.33.0 from PyPI")
    assert report["framework"]["version"] == "1.2.3"


def test_a_report_of_reused_verdicts_names_the_run_that_found_them_too(validator: jsonschema.Draft7Validator) -> None:
    report = stryker.build(run_result(RERUN, verdicts_from=RUN))
    assert validator.is_valid(report)
    assert report["config"]["run"]["id"] == RERUN.run_id
    assert report["config"]["run"]["verdictsFrom"] == {"id": RUN.run_id, "started": RUN.started, "toolVersion": "1.2.3"}


def test_schema_rejects_a_broken_report(validator: jsonschema.Draft7Validator) -> None:
    report = stryker.build(sample_result())
    next(iter(report["files"].values()))["mutants"][0]["status"] = "killed"  # not a Stryker status
    assert not validator.is_valid(report)


def test_every_status_maps_to_its_stryker_name() -> None:
    result = every_status_result()
    by_id = mutants_by_id(stryker.build(result))
    mapped = {v.status: by_id[v.mutant_id]["status"] for v in result.mutants}
    assert mapped == {
        "killed": "Killed",
        "survived": "Survived",
        "timeout": "Timeout",
        "crashed": "RuntimeError",
        "not reached": "NoCoverage",
        "skipped": "Ignored",
        "flaky": "Survived",  # no kill that holds
    }
    assert result.flaky and stryker.build(result)["config"]["flakyTests"] == result.flaky


def test_files_carry_source_language_and_their_mutants() -> None:
    report = stryker.build(sample_result())
    assert report["schemaVersion"] == "2" and report["thresholds"] == {"high": 100, "low": 80}
    assert sorted(report["files"]) == [CPU, CUDA]
    for file, entry in report["files"].items():
        assert entry["language"] == "python" and entry["source"] == SOURCES[file]
    statuses = [m["status"] for m in report["files"][CPU]["mutants"]]
    assert sorted(statuses) == ["Killed", "Survived", "Timeout"]  # the numbers the viewer scores from


def test_killed_mutant_names_its_guard_and_location() -> None:
    result = sample_result()
    killed = next(v for v in result.mutants if v.status == "killed")
    entry = mutants_by_id(stryker.build(result))[killed.mutant_id]
    assert entry["killedBy"] == [guard_id(CPU_SITE)] and entry["coveredBy"] == [guard_id(CPU_SITE)]
    assert entry["mutatorName"] == "eager-repr-revert" and entry["replacement"] == "e"
    assert entry["description"] == OPERATORS["eager-repr-revert"].description
    assert entry["duration"] == 1250 and entry["statusReason"] == "the exception is retained"
    line = SOURCES[CPU].splitlines()[killed.location.start_line - 1]
    start, end = entry["location"]["start"], entry["location"]["end"]
    assert line[start["column"] - 1 : end["column"] - 1] == "repr(e)"


def test_only_killed_mutants_have_killed_by() -> None:
    report = stryker.build(every_status_result())
    assert [m["status"] for m in mutants_by_id(report).values() if "killedBy" in m] == ["Killed"]


def test_every_test_id_the_mutants_name_is_a_declared_test() -> None:
    report = stryker.build(sample_result())
    declared = {t["id"] for f in report["testFiles"].values() for t in f["tests"]}
    named = {i for m in mutants_by_id(report).values() for i in m.get("killedBy", []) + m["coveredBy"]}
    assert named <= declared and guard_id(CUDA_SITE) in declared
    assert list(report["testFiles"]) == ["guards/test_guards.py"]


def test_exposed_site_shows_as_an_ignored_baseline_mutant_that_does_not_count() -> None:
    result = sample_result()
    entry = mutants_by_id(stryker.build(result))[f"baseline:{CUDA_SITE.id}"]
    assert entry["status"] == "Ignored" and entry["mutatorName"] == "baseline"
    assert entry["statusReason"] == f"site exposed at baseline: {EXCEPTION_RETAINED}, {OWNER_PINNED}"
    assert entry["location"]["start"] == {"line": CUDA_SITE.line, "column": CUDA_SITE.column + 1}
    assert result.viewer_score == pytest.approx(200 / 3)  # killed + timeout of three; Ignored left out


def test_unreached_site_says_so() -> None:
    entry = mutants_by_id(stryker.build(every_status_result()))[f"baseline:{CUDA_SITE.id}"]
    assert entry["statusReason"] == "site unreached at baseline: no CUDA device to steer to"


def test_guarded_site_gets_no_baseline_mutant() -> None:
    assert f"baseline:{CPU_SITE.id}" not in mutants_by_id(stryker.build(sample_result()))


def test_a_site_without_source_text_is_an_error_naming_the_file() -> None:
    result = sample_result()
    del result.sources[CUDA]
    with pytest.raises(SourceMissing, match=r"vllm/platforms/cuda\.py"):
        stryker.build(result)


def test_score_note_appears_only_when_the_viewer_would_disagree() -> None:
    assert "33.33%" in (sample_result().score_note or "")
    agreeing = sample_result()
    agreeing.mutants = [m for m in agreeing.mutants if m.status != "timeout"]
    assert agreeing.score_note is None


def test_the_schema_is_the_vendored_copy_of_the_pinned_package() -> None:
    assert viewer.manifest()[viewer.SCHEMA_JSON.name]["version"] == "3.8.4"


def test_the_systems_description_runs_no_subprocess(monkeypatch: pytest.MonkeyPatch) -> None:
    """`platform.platform()` would run `uname -p` (its processor field) on every run; the report names the system,
    release and machine from the interpreter's uname instead."""
    import os
    import platform
    import subprocess

    monkeypatch.setattr(platform, "_uname_cache", None)  # nothing read earlier in this process stands in
    monkeypatch.setattr(platform, "_platform_cache", {})
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: pytest.fail(f"a subprocess: {a}"))
    uname = os.uname()
    assert stryker.system()["os"] == {
        "platform": "linux",
        "description": f"{uname.sysname}-{uname.release}-{uname.machine}",
        "version": uname.release,
    }
