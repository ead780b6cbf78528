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
    out = [f"# {provenance.headline(result)}", ""]  # the first line names the target and the run that wrote it
    if reused := provenance.reuse_note(result):
        out += [f"> {reused}", ""]
    out += [
        f"**Target:** vLLM {result.vllm_version}{commit}, {result.target}",  # "installed at ...", as `sites` says it
        "",
        f"**Scored by:** {cell(result.scored_by)}",
        "",
        f"**Mutation score:** {percent(result.score)} ({result.counts})",
        "",
    ]
    if result.confirmed_by:
        out += [f"Each kill was confirmed: its tests re-run {result.confirmed_by} time(s) and did the same.", ""]
    if note := result.cache_note:
        out += [f"> {note}", ""]
    if result.suite is not None and (failing := sorted(result.suite.failing.items())):
        out += [f"{len(failing)} test(s) fail on the unmutated code: left out, never counted as kills.", ""]
        out += [*table(["Test", "Failure"], ((code(test), cell(why)) for test, why in failing)), ""]
    if result.flaky:
        out += [f"{len(result.flaky)} flaky test(s): a re-run did otherwise; none of their kills is counted.", ""]
        out += [*table(["Test", "How"], ((code(test), cell(why)) for test, why in result.flaky.items())), ""]
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
        ["Site", "Line", "Form", "Status", "Detectors", "Operators without a mutant"],
        (
            (
                code(b.site.id),
                str(b.site.line),
                b.site.form if b.site.form == "eager" else f"**{b.site.form}**",
                b.status if b.status == GUARDED else f"**{b.status}**",
                cell(", ".join(b.detectors) or b.detail) if b.status != UNREACHED else cell(b.reason),
                cell("; ".join(f"{op} ({why})" for op, why in result.not_applied.get(b.site.id, {}).items())),
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
