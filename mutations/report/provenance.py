"""Which run wrote a report: the headline `summary.md` and `index.html` start with, the run object of
`mutation.json`'s free-form `config`, and reading that back from a report already in `--out`.

A run is its id, its start (UTC, ISO 8601) and this tool's version (`verdicts.RunInfo`); the target is the
result's own (vLLM version and where it is). A rerun that reuses stored verdicts is a new run writing a
report: the report names it, and names as `verdictsFrom` the earlier run whose verdicts it reused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from warnonce_guard.common.files import Kind, marked
from warnonce_guard.mutations.records import RunInfo, RunResult


def _run_json(run: RunInfo) -> dict[str, str]:
    return {"id": run.run_id, "started": run.started, "toolVersion": run.tool_version}


def metadata(result: RunResult) -> dict[str, Any] | None:
    """`config.run` of mutation.json: the run that wrote it, and the run whose verdicts it reused (if one)."""
    if result.run is None:
        return None
    data: dict[str, Any] = _run_json(result.run)
    if result.verdicts_from is not None:
        data["verdictsFrom"] = _run_json(result.verdicts_from)
    return data


def headline(result: RunResult) -> str:
    """One line naming the target, the suite of --tests if one scored it, and the run: summary.md's first line,
    index.html's title."""
    line = f"warnonce-guard mutation report: vLLM {result.vllm_version} ({result.target})"
    if result.suite is not None:
        line += f", scored by {result.suite.name}"
    run = result.run
    if run is not None:
        line += f", run {run.run_id} started {run.started}, warnonce-guard {run.tool_version}"
    return line


def reuse_note(result: RunResult) -> str | None:
    """A sentence for a report whose verdicts an earlier run found: which run, and why they stand."""
    earlier = result.verdicts_from
    if earlier is None:
        return None
    return (
        f"The verdicts are those of run {earlier.run_id} (started {earlier.started}), reused unchanged: "
        "nothing that keys them changed since."
    )


def written_by(out: Path) -> tuple[str | None, str] | None:
    """The run id (None if unnamed) and a description of the run that wrote the report in `out`; None when
    `out` holds no report of this tool."""
    if not marked(out, Kind.REPORT):
        return None
    try:
        config = json.loads((out / "mutation.json").read_text(encoding="utf-8"))["config"]
        run, target, version = config["run"], config["target"], config["vllmVersion"]
        run_id, started = str(run["id"]), str(run["started"])
    except (OSError, ValueError, KeyError, TypeError):
        return None, "a report that does not name its run"
    return run_id, f"run {run_id} started {started}, vLLM {version} ({target})"


def left_in(out: Path, run: RunInfo) -> str | None:
    """What `out` holds after `run` stopped early, for its last line: an earlier report (naming its run), this
    run's own, or None when it holds none."""
    found = written_by(out)
    if found is None:
        return None
    run_id, described = found
    if run_id == run.run_id:
        return f"--out {out} holds this run's report"
    return f"--out {out} still holds the earlier report: {described}"
