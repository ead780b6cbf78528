"""summary.md: target, score, counts, the baseline table and one mutant table per site."""

from __future__ import annotations

import pytest
from warnonce_guard.guards.detectors import EXCEPTION_RETAINED, OWNER_PINNED
from warnonce_guard.mutations.records import RunResult
from warnonce_guard.mutations.report import summary

from tests.records_support import (
    CPU_SITE,
    CUDA_SITE,
    OPS,
    RERUN,
    RUN,
    every_status_result,
    guard_id,
    run_result,
    sample_result,
)


def test_summary_names_the_target_and_the_score() -> None:
    text = summary.render(sample_result())
    assert text.startswith("# warnonce-guard mutation report: vLLM 0.33.0 (vllm==0.33.0 from PyPI)\n")
    assert "vLLM 0.33.0 at commit `0123456789abcdef0123456789abcdef01234567`, vllm==0.33.0 from PyPI" in text
    assert "**Mutation score:** 33.33% (1 killed of 3 reached)" in text


@pytest.mark.parametrize("origin", ["installed", "source tree", "staged copy"])
def test_summary_names_the_target_as_the_command_line_does_never_from_installed(origin: str) -> None:
    """A run's target reads "installed at <dir>"; summary.md said "from installed at <dir>"."""
    result = sample_result()
    result.target = f"{origin} at /site-packages/vllm"
    text = summary.render(result)
    assert f"**Target:** vLLM 0.33.0 at commit `{result.vllm_commit}`, {origin} at /site-packages/vllm\n" in text
    assert "from installed" not in text and ", from " not in text


def test_summary_explains_why_the_viewer_shows_another_score() -> None:
    assert "The Stryker viewer shows 66.67%" in summary.render(sample_result())


def test_summary_counts_every_status() -> None:
    text = summary.render(sample_result())
    for row in ("| killed | 1 |", "| survived | 1 |", "| timeout | 1 |", "| crashed | 0 |", "| not reached | 0 |"):
        assert row in text
    assert "| skipped | 3 |" in text


def test_summary_tables_sites_at_baseline_with_detectors() -> None:
    text = summary.render(sample_result())
    detectors = f"{EXCEPTION_RETAINED}, {OWNER_PINNED}"
    assert f"| `{CUDA_SITE.id}` | {CUDA_SITE.line} | {CUDA_SITE.form} | **exposed** | {detectors} |" in text
    assert f"| `{CPU_SITE.id}` | {CPU_SITE.line} | {CPU_SITE.form} | guarded | – |" in text


def test_summary_has_one_mutant_table_per_site() -> None:
    text = summary.render(sample_result())
    assert text.count("| Mutant | Operator | Status | Killed by | Detectors |") == 2
    killed = f"| {OPS[0]} | killed | `{guard_id(CPU_SITE)}` | {EXCEPTION_RETAINED} |"
    assert killed in text and f"| {OPS[1]} | **survived** | – | – |" in text


def test_score_is_na_when_no_mutant_ran() -> None:
    result = sample_result()
    result.mutants = [m for m in result.mutants if m.status == "skipped"]
    text = summary.render(result)
    assert "**Mutation score:** n/a (0 killed of 0 reached)" in text and "viewer" not in text


def test_pipes_in_cells_do_not_break_the_table() -> None:
    result = sample_result()
    result.baselines[1] = type(result.baselines[1])(CUDA_SITE, "exposed", "g", detectors=("a|b",))
    assert "a\\|b" in summary.render(result)


def test_empty_run_still_renders() -> None:
    text = summary.render(RunResult("0.1", None, "somewhere", {}, [], []))
    assert "n/a" in text and "No mutant was made." in text and "vLLM 0.1, somewhere" in text


def test_the_first_line_names_the_target_the_run_its_start_and_the_tool_version() -> None:
    first = summary.render(run_result()).splitlines()[0]
    assert first == (
        f"# warnonce-guard mutation report: vLLM 0.33.0 (vllm==0.33.0 from PyPI), run {RUN.run_id} started "
        "2026-05-01T12:34:56Z, warnonce-guard 1.2.3"
    )


def test_a_report_of_reused_verdicts_names_the_run_writing_it_and_the_run_that_found_them() -> None:
    lines = summary.render(run_result(RERUN, verdicts_from=RUN)).splitlines()
    assert f"run {RERUN.run_id} started {RERUN.started}" in lines[0]
    assert lines[2] == (
        f"> The verdicts are those of run {RUN.run_id} (started {RUN.started}), reused unchanged: nothing that keys "
        "them changed since."
    )


def test_flaky_tests_and_the_confirmation_are_said() -> None:
    result = every_status_result()
    result.confirmed_by = 2
    text = summary.render(result)
    assert "Each kill was confirmed: its tests re-run 2 time(s) and did the same." in text
    assert "1 flaky test(s): a re-run did otherwise; none of their kills is counted." in text
    assert "| `tests/test_x.py::test_flaky` | passed when re-run on a mutant |" in text
