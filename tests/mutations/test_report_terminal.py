"""The terminal table: one row per mutant and per site without mutants, then the score."""

from __future__ import annotations

from rich.console import Console
from warnonce_guard.guards.detectors import OWNER_PINNED
from warnonce_guard.mutations.records import RunResult
from warnonce_guard.mutations.report import print_table, summary

from tests.records_support import CPU_SITE, every_status_result, sample_result


def printed(result: RunResult, color: bool = False) -> str:
    console = Console(width=400, record=True, color_system="truecolor" if color else None, force_terminal=color)
    print_table(result, console)
    return console.export_text(styles=color)


def test_table_lists_every_mutant_and_the_exposed_site() -> None:
    text = printed(sample_result())
    for word in ("killed", "survived", "timeout", "skipped", "exposed", "baseline", OWNER_PINNED):
        assert word in text
    killers = [v.killed_by for v in sample_result().mutants if v.killed_by]
    assert killers and all(k in text for k in killers)
    assert f"cpu.py:{CPU_SITE.line} {CPU_SITE.kernel_module} " in text  # short site label


def test_killed_by_is_the_guards_node_id_as_summary_md_names_it() -> None:
    """The terminal showed the parametrised part of the id (`cpu-CpuPlatform...-0`) where summary.md shows the
    whole node id: a reader could not find one in the other."""
    result = sample_result()
    (killer,) = {v.killed_by for v in result.mutants if v.killed_by}
    assert "::" in killer and killer.endswith("]")  # a parametrised node id
    assert f"`{killer}`" in summary.render(result) and f" {killer} " in printed(result)


def test_score_line_follows_the_table() -> None:
    lines = printed(sample_result()).rstrip().splitlines()
    assert lines[-1] == "Mutation score: 33.33% (1 killed of 3 reached; sites exposed: 1, unreached: 0)"


def test_statuses_are_coloured() -> None:
    text = printed(sample_result(), color=True)
    assert "\x1b[" in text and "survived" in text


def test_nothing_run_reads_na() -> None:
    result = sample_result()
    result.mutants = []
    assert "Mutation score: n/a" in printed(result)


def test_flaky_tests_are_listed_and_the_mutants_they_alone_killed_counted_apart() -> None:
    text = printed(every_status_result())
    assert "1 flaky test(s), none of their kills counted:" in text
    assert "  tests/test_x.py::test_flaky: passed when re-run on a mutant" in text
    assert "1 killed only by flaky tests (not counted)" in text.splitlines()[-1]
