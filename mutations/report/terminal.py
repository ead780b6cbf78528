"""The run as a table on the terminal (rich): one row per mutant and per site with no mutants, then the score."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from mutations.report.summary import percent
from mutations.verdicts import EXPOSED, KILLED, UNREACHED, RunResult

STYLES = {
    "killed": "green",
    "survived": "bold red",
    "timeout": "yellow",
    "crashed": "magenta",
    "no tests": "red",
    "skipped": "dim",
    "exposed": "bold red",
    "unreached": "yellow",
}


def status_text(status: str) -> Text:
    return Text(status, style=STYLES.get(status, ""))


def build(result: RunResult) -> Table:
    # Cells are Text, not str, so ids with brackets (parametrized node ids) are not read as markup.
    table = Table(title=f"Mutation run: vLLM {result.vllm_version}", title_justify="left")
    for column in ("Site", "Operator", "Status", "Killed by", "Detectors"):
        table.add_column(column, overflow="fold")
    for verdict in result.mutants:
        table.add_row(
            Text(verdict.site.id),
            Text(verdict.operator),
            status_text(verdict.status),
            Text(verdict.killed_by or ""),
            Text(", ".join(verdict.detectors)),
        )
    for baseline in result.baselines:
        if baseline.status in (EXPOSED, UNREACHED):
            table.add_row(
                Text(baseline.site.id),
                Text("baseline", style="italic"),
                status_text(baseline.status),
                Text(""),
                Text(", ".join(baseline.detectors)),
            )
    return table


def score_line(result: RunResult) -> Text:
    line = Text("Mutation score: ")
    line.append(percent(result.score), style="bold")
    line.append(f" ({result.count(KILLED)} killed of {len(result.scored)} run")
    line.append(f"; sites exposed: {len(result.sites_with(EXPOSED))}, unreached: {len(result.sites_with(UNREACHED))})")
    return line


def print_table(result: RunResult, console: Console) -> None:
    console.print(build(result))
    console.print(score_line(result))
