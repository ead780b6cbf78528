"""`summary.md`: the run in GitHub-flavoured Markdown, ready to append to `$GITHUB_STEP_SUMMARY`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from warnonce_guard.mutations.records import (
    GUARDED,
    KILLED,
    NEUTRALIZED,
    SKIPPED,
    UNREACHED,
    MutantStatus,
    MutantVerdict,
    RunResult,
    SiteStatus,
    percent,
)
from warnonce_guard.mutations.report import provenance


def cell(text: str) -> str:
    """A table cell: pipes and newlines would break the row."""
    return text.replace("|", "\\|").replace("\n", " ") or "–"


def code(text: str | None) -> str:
    return f"`{cell(text)}`" if text else "–"


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def render(result: RunResult) -> str:
    commit = f" at commit `{result.vllm_commit}`" if result.vllm_commit else ""
    scored, neutralized = len(result.scored), result.count(NEUTRALIZED)
    out = [f"# {provenance.headline(result)}", ""]  # the first line names the target and the run that wrote it
    if reused := provenance.reuse_note(result):
        out += [f"> {reused}", ""]
    out += [
        f"**Target:** vLLM {result.vllm_version}{commit}, {result.target}",  # "installed at ...", as `sites` says it
        "",
        f"**Scored by:** {cell(result.scored_by)}",
        "",
        f"**Mutation score:** {percent(result.score)} ({result.count(KILLED)} killed of {scored} mutants run"
        + (f"; {neutralized} more neutralized by the target's cache, not scored)" if neutralized else ")"),
        "",
    ]
    if note := result.cache_note:
        out += [f"> {note}", ""]
    if result.suite is not None and (failing := sorted(result.suite.failing.items())):
        out += [f"{len(failing)} test(s) fail on the unmutated code: left out, never counted as kills.", ""]
        out += [*table(["Test", "Failure"], ((code(test), cell(why)) for test, why in failing)), ""]
    note = result.score_note
    if note:
        out += [f"> {note}", ""]
    out += table(["Status", "Mutants"], [(s, str(result.count(s))) for s in MutantStatus])
    if result.suite is None:
        out += _sites_at_baseline(result)
    out += ["", "## Mutants", ""]
    if not result.mutants:
        out += ["No mutant was made.", ""]
    for site_id, verdicts in by_site(result.mutants).items():
        out += [f"### `{cell(site_id)}`", ""]
        out += table(
            ["Mutant", "Operator", "Status", "Killed by", "Detectors"],
            (
                (
                    code(v.mutant_id),
                    cell(v.operator),
                    v.status if v.status in (KILLED, SKIPPED, NEUTRALIZED) else f"**{v.status}**",
                    code(v.killed_by),
                    cell(_detectors(v)),
                )
                for v in sorted(verdicts, key=lambda v: (v.operator, v.mutant_id))
            ),
        )
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def _sites_at_baseline(result: RunResult) -> list[str]:
    """The guards' verdict on each site of the unmutated target (a suite's run has none)."""
    counts = ", ".join(f"{len(result.sites_with(s))} {s}" for s in SiteStatus)
    out = ["", "## Sites at baseline", "", f"{len(result.baselines)} sites: {counts}.", ""]
    return out + table(
        ["Site", "Line", "Status", "Detectors"],
        (
            (
                code(b.site.id),
                str(b.site.line),
                b.status if b.status == GUARDED else f"**{b.status}**",
                cell(", ".join(b.detectors)) if b.status != UNREACHED else cell(b.reason),
            )
            for b in result.baselines
        ),
    )


def _detectors(verdict: MutantVerdict) -> str:
    """What fired: in the guard that killed it, or, for a neutralized mutant, with vLLM's stock cache."""
    fired = ", ".join(verdict.detectors)
    return f"with vLLM's stock cache: {fired}" if verdict.status == NEUTRALIZED and fired else fired


def by_site(verdicts: Iterable[MutantVerdict]) -> dict[str, list[MutantVerdict]]:
    grouped: dict[str, list[MutantVerdict]] = {}
    for verdict in verdicts:
        grouped.setdefault(verdict.site.id, []).append(verdict)
    return grouped
