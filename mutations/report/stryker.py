"""The run as a Stryker mutation-testing report (schemaVersion 2), the JSON the HTML viewer reads.

A site exposed or unreached at baseline becomes one Ignored "baseline" mutant (docs/ARCHITECTURE.md, The report).
"""

from __future__ import annotations

import contextlib
import os
import sys
from importlib import metadata
from typing import Any

from warnonce_guard.common.errors import SourceMissing
from warnonce_guard.mutations.records import (
    CRASHED,
    EXPOSED,
    FLAKY,
    KILLED,
    NEUTRALIZED,
    NO_TESTS,
    NOT_RUN,
    SKIPPED,
    SURVIVED,
    TIMEOUT,
    UNATTRIBUTED,
    UNREACHED,
    MutantVerdict,
    RunResult,
    SiteBaseline,
    tool_version,
)
from warnonce_guard.mutations.report import provenance

SCHEMA_VERSION = "2"
THRESHOLDS = {"high": 100, "low": 80}
BASELINE_MUTATOR = "baseline"
STATUS = {
    KILLED: "Killed",
    SURVIVED: "Survived",
    TIMEOUT: "Timeout",
    CRASHED: "RuntimeError",
    NO_TESTS: "NoCoverage",
    SKIPPED: "Ignored",
    NOT_RUN: "Pending",
    UNATTRIBUTED: "Ignored",
    FLAKY: "Survived",  # no test that kills it holds: as good as survived (its statusReason names the flaky test)
    NEUTRALIZED: "Ignored",  # not scored, as the run's score leaves it out; its statusReason says why
}


def build(result: RunResult) -> dict[str, Any]:
    """The report as a JSON-ready dict."""
    files: dict[str, dict[str, Any]] = {}

    def file_entry(file: str) -> dict[str, Any]:
        if file not in files:
            if file not in result.sources:
                raise SourceMissing(f"{file}: the run result has no source text for it; record it in RunResult.sources")
            files[file] = {"language": "python", "source": result.sources[file], "mutants": []}
        return files[file]

    descriptions = {op.name: op.description for op in result.operators}
    for verdict in result.mutants:
        file_entry(verdict.site.file)["mutants"].append(mutant(verdict, descriptions.get(verdict.operator)))
    for baseline in result.baselines:
        if baseline.status in (EXPOSED, UNREACHED):
            file_entry(baseline.site.file)["mutants"].append(baseline_mutant(baseline))
    config: dict[str, Any] = {
        "target": result.target,
        "vllmVersion": result.vllm_version,
        "vllmCommit": result.vllm_commit,
        "score": result.score,
        "scoreRule": (
            "killed / mutants reached or not reached by a test; timeouts, crashes and kills by flaky tests count as "
            "not killed"
        ),
        "confirmedBy": result.confirmed_by,
        "durationSeconds": result.duration_s,
        "scoredBy": result.scored_by,
    }
    if note := result.cache_note:  # the mutants the target's cache neutralized (Ignored above): why
        config["neutralized"] = {"count": result.count(NEUTRALIZED), "note": note}
    if result.suite is not None:  # tests left out: they fail on the unmutated code (node id -> first line)
        config["failingOnUnmutated"] = dict(sorted(result.suite.failing.items()))
    if result.flaky:  # tests a re-run found flaky (node id -> how): none of their kills counts
        config["flakyTests"] = dict(result.flaky)
    run = provenance.metadata(result)
    if run is not None:
        config["run"] = run  # the schema's config is free-form: the one place for which run wrote the report
    return {
        "schemaVersion": SCHEMA_VERSION,
        "thresholds": dict(THRESHOLDS),
        "projectRoot": result.target,
        "files": dict(sorted(files.items())),
        "testFiles": guard_files(result),
        "framework": framework(result),
        "system": system(),
        "config": config,
    }


def mutant(verdict: MutantVerdict, description: str | None) -> dict[str, Any]:
    loc = verdict.location
    data: dict[str, Any] = {
        "id": verdict.mutant_id,
        "mutatorName": verdict.operator,
        "location": {
            "start": {"line": loc.start_line, "column": loc.start_column},
            "end": {"line": loc.end_line, "column": loc.end_column},
        },
        "replacement": verdict.replacement,
        "status": STATUS[verdict.status],
        "description": description or f"{verdict.original!r} -> {verdict.replacement!r}",
        "coveredBy": list(verdict.covered_by),
    }
    if verdict.reason:
        data["statusReason"] = verdict.reason
    if verdict.status == KILLED and verdict.killed_by:
        data["killedBy"] = [verdict.killed_by]
    if verdict.duration_s is not None:
        data["duration"] = round(verdict.duration_s * 1000)
    return data


def baseline_mutant(baseline: SiteBaseline) -> dict[str, Any]:
    """The site's whole logging call, marked Ignored with the baseline's reason."""
    site = baseline.site
    return {
        "id": f"{BASELINE_MUTATOR}:{site.id}",
        "mutatorName": BASELINE_MUTATOR,
        "location": {  # Site columns are 0-based, Stryker's 1-based
            "start": {"line": site.line, "column": site.column + 1},
            "end": {"line": site.end_line, "column": site.end_column + 1},
        },
        "status": "Ignored",
        "statusReason": baseline.reason,
        "description": "no mutant run: "
        + ("the guard fails on the unmutated target" if baseline.status == EXPOSED else "no guard reaches the site"),
        "coveredBy": [baseline.guard],
    }


def guard_files(result: RunResult) -> dict[str, dict[str, Any]]:
    """Every guard the run names, grouped by the file part of its pytest node id."""
    ids: set[str | None] = {b.guard for b in result.baselines}  # "" and None (no guard, no killer) are dropped
    for verdict in result.mutants:
        ids.update(verdict.covered_by, [verdict.killed_by])
    grouped: dict[str, list[dict[str, str]]] = {}
    for node_id in sorted(i for i in ids if i):
        file, sep, name = node_id.partition("::")
        grouped.setdefault(file, []).append({"id": node_id, "name": name if sep else node_id})
    return {file: {"tests": tests} for file, tests in grouped.items()}


def framework(result: RunResult) -> dict[str, Any]:
    dependencies = {"vllm": result.vllm_version}
    for name in ("mutmut", "pytest"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            dependencies[name] = metadata.version(name)
    version = result.run.tool_version if result.run is not None else tool_version()
    return {"name": "warnonce-guard", "version": version, "dependencies": dependencies}


def system() -> dict[str, Any]:
    uname = os.uname()  # what `platform.uname` reads, without importing `platform` (and its 1.3 ms)
    return {
        "ci": bool(os.environ.get("CI")),
        "os": {"platform": sys.platform, "description": _description(uname), "version": uname.release},
        "cpu": {"logicalCores": os.cpu_count() or 1},
    }


def _description(uname: os.uname_result) -> str:
    """`platform.platform()` without its processor field, which runs `uname -p` in a subprocess (4 ms of every run,
    the rerun's too): system, release and machine."""
    return "-".join(part for part in (uname.sysname, uname.release, uname.machine) if part)
