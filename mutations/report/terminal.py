"""The run as a table on the terminal (rich): one row per mutant and per site with no mutants, then the score."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text
from warnonce_guard.mutations.records import EXPOSED, UNREACHED, RunResult, percent
from warnonce_guard.mutations.report.printable import printable_result
from warnonce_guard.rule.site_row import Site

STYLES = {
    "killed": "green",
    "survived": "bold red",
    "timeout": "yellow",
    "crashed": "magenta",
    "not reached": "red",
    "skipped": "dim",
    "not run": "yellow",
    "unattributed": "bold magenta",
    "flaky": "bold yellow",
    "neutralized": "cyan",
    "exposed": "bold red",
    "unreached": "yellow",
}


def status_text(status: str) -> Text:
    return Text(status, style=STYLES.get(status, ""))


def site_label(site: Site) -> str:
    """`cpu.py:670 vllm._C`: short enough for a terminal; the full id (with its branch) is in the report files."""
    return f"{Path(site.file).name}:{site.line} {site.kernel_module}{site.disambiguator}"


def build(result: RunResult) -> Table:
    # Cells are Text, not str, so ids with brackets (parametrized node ids) are not read as markup.
    table = Table(title=f"Mutation run: vLLM {result.vllm_version}", title_justify="left")
    for column in ("Site", "Operator", "Status", "Killed by", "Detectors"):
        table.add_column(column, overflow="fold")
    for verdict in result.mutants:
        table.add_row(
            Text(site_label(verdict.site)),
            Text(verdict.operator),
            status_text(verdict.status),
            Text(verdict.killed_by or ""),  # the guard's node id, as summary.md and the JUnit XML name it
            Text(", ".join(verdict.detectors)),
        )
    for baseline in result.baselines:
        if baseline.status in (EXPOSED, UNREACHED) or not baseline.site.cached:
            table.add_row(
                Text(site_label(baseline.site)),
                Text("baseline" if baseline.site.cached else "baseline (no operator applies)", style="italic"),
                status_text(baseline.status),
                Text(""),
                Text(", ".join(baseline.detectors)),
            )
    return table


def score_line(result: RunResult) -> Text:
    line = Text("Mutation score: ")
    line.append(percent(result.score), style="bold")
    line.append(f" ({result.counts}")
    if result.suite is None:  # a suite's run has no site baselines
        exposed, unreached = len(result.sites_with(EXPOSED)), len(result.sites_with(UNREACHED))
        line.append(f"; sites exposed: {exposed}, unreached: {unreached}")
        if unmutable := sum(1 for b in result.baselines if not b.site.cached):
            line.append(f", sites no operator mutates: {unmutable}")
    line.append(")")
    return line


def print_table(result: RunResult, console: Console) -> None:
    result = printable_result(result)  # a console with strict UTF-8 output refuses a path's undecodable byte
    console.print(build(result))
    console.print(Text(f"Scored by {result.scored_by}"), soft_wrap=True)
    failing = sorted(result.suite.failing.items()) if result.suite is not None else []
    if failing:
        console.print(Text(f"{len(failing)} test(s) fail on the unmutated code, left out:"), soft_wrap=True)
        for test, why in failing:
            console.print(Text(f"  {test}: {why}"), soft_wrap=True)
    if result.flaky:
        console.print(Text(f"{len(result.flaky)} flaky test(s), none of their kills counted:"), soft_wrap=True)
        for test, why in result.flaky.items():
            console.print(Text(f"  {test}: {why}"), soft_wrap=True)
    if note := result.cache_note:
        console.print(Text(note), soft_wrap=True)
    console.print(score_line(result), soft_wrap=True)
