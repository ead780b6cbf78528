"""The terminal table: one row per mutant and per site without mutants, then the score."""

from __future__ import annotations

from records_support import CPU_SITE, sample_result
from rich.console import Console
from warnonce_guard.guards.detectors import OWNER_PINNED
from warnonce_guard.mutations.records import RunResult
from warnonce_guard.mutations.report import print_table
from warnonce_guard.mutations.report.terminal import guard_label


def printed(result: RunResult, color: bool = False) -> str:
    console = Console(width=400, record=True, color_system="truecolor" if color else None, force_terminal=color)
    print_table(result, console)
    return console.export_text(styles=color)


def test_table_lists_every_mutant_and_the_exposed_site() -> None:
    text = printed(sample_result())
    for word in ("killed", "survived", "timeout", "skipped", "exposed", "baseline", OWNER_PINNED):
        assert word in text
    killers = [v.killed_by for v in sample_result().mutants if v.killed_by]
    assert killers and all(guard_label(k) in text and f"[{guard_label(k)}]" not in text for k in killers)
    assert f"cpu.py:{CPU_SITE.line} {CPU_SITE.kernel_module}#0" in text  # short site label


def test_score_line_follows_the_table() -> None:
    lines = printed(sample_result()).rstrip().splitlines()
    assert lines[-1] == "Mutation score: 33.33% (1 killed of 3 run; sites exposed: 1, unreached: 0)"


def test_statuses_are_coloured() -> None:
    text = printed(sample_result(), color=True)
    assert "\x1b[" in text and "survived" in text


def test_nothing_run_reads_na() -> None:
    result = sample_result()
    result.mutants = []
    assert "Mutation score: n/a" in printed(result)
