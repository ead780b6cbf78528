"""Turn what a mutmut run left behind into verdicts: baselines per site and a status per mutant.

Sources, all in the work directory: `mutants/<file>.meta` (mutmut's exit code per mutant),
`identities.json` (site and operator per mutant, from mutations.identify) and `attribution/*.jsonl`
(one line per guard outcome, written by the guards' conftest: which guard failed and which detectors
fired). mutmut records no killed-by; the attribution lines are where it comes from.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from guards.sites import Site
from mutations.identify import MutantsUnaccounted
from mutations.verdicts import (
    CRASHED,
    EXPOSED,
    GUARDED,
    KILLED,
    NO_TESTS,
    SKIPPED,
    SURVIVED,
    TIMEOUT,
    UNREACHED,
    Location,
    MutantVerdict,
    SiteBaseline,
)

BASELINE_PHASES = ("", "stats")  # mutmut's clean run and its stats run both run the unmutated code
_TIMEOUT_CODES = {36, 24, -24, 152, 255}
_NO_TEST_CODES = {5, 33}


@dataclass(frozen=True)
class GuardRecord:
    run: str
    mutant: str
    test: str
    site: str | None
    outcome: str
    detectors: tuple[str, ...]
    message: str

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"

    @property
    def guard_failure(self) -> bool:
        """A failure raised by a guard's detectors (not an error of the guard itself)."""
        return self.failed and bool(self.detectors) and not self.detectors[0].startswith("error:")


def read_records(folder: Path) -> list[GuardRecord]:
    records = []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            data = json.loads(line)
            records.append(
                GuardRecord(
                    data["run"],
                    data["mutant"],
                    data["test"],
                    data.get("site"),
                    data["outcome"],
                    tuple(data["detectors"]),
                    data["message"],
                )
            )
    return records


def baselines(sites: list[Site], records: list[GuardRecord], run_id: str) -> list[SiteBaseline]:
    """Each site's guard on the unmutated code in this run: guarded, exposed or unreached."""
    by_site: dict[str, list[GuardRecord]] = defaultdict(list)
    for record in records:
        if record.run == run_id and record.mutant in BASELINE_PHASES and record.site:
            by_site[record.site].append(record)
    out = []
    for site in sites:
        seen = by_site.get(site.id, [])
        failed = [r for r in seen if r.failed]
        guard = seen[0].test if seen else ""
        if not seen:
            out.append(SiteBaseline(site, UNREACHED, guard, ("unreached",), "the guard did not run"))
        elif not failed:
            out.append(SiteBaseline(site, GUARDED, guard))
        elif failed[0].detectors == ("unreached",) or not failed[0].guard_failure:
            out.append(SiteBaseline(site, UNREACHED, guard, failed[0].detectors, failed[0].message))
        else:
            out.append(SiteBaseline(site, EXPOSED, guard, failed[0].detectors, failed[0].message))
    return out


def read_exit_codes(mutants_dir: Path, files: list[str]) -> tuple[dict[str, int | None], dict[str, float]]:
    codes: dict[str, int | None] = {}
    durations: dict[str, float] = {}
    for file in files:
        meta = mutants_dir / f"{file}.meta"
        if meta.is_file():
            data = json.loads(meta.read_text(encoding="utf-8"))
            codes.update(data["exit_code_by_key"])
            durations.update(data.get("durations_by_key", {}))
    return codes, durations


def _latest_records(records: list[GuardRecord]) -> dict[str, list[GuardRecord]]:
    """Per mutant, the records of the last run that tested it (a cached verdict keeps its old records)."""
    runs: dict[str, dict[str, list[GuardRecord]]] = defaultdict(lambda: defaultdict(list))
    order: dict[str, list[str]] = defaultdict(list)
    for record in records:
        if record.mutant in BASELINE_PHASES:
            continue
        if record.run not in order[record.mutant]:
            order[record.mutant].append(record.run)
        runs[record.mutant][record.run].append(record)
    return {mutant: runs[mutant][order[mutant][-1]] for mutant in runs}


def _status(code: int | None, records: list[GuardRecord]) -> tuple[str, str, GuardRecord | None]:
    """(status, reason, the killing record) for one mutant."""
    killer = next((r for r in records if r.guard_failure), None)
    if code == 1 and killer is not None:
        return KILLED, killer.message, killer
    if code == 0:
        return SURVIVED, "every guard passed with the bug put back", None
    if code in _TIMEOUT_CODES:
        return TIMEOUT, f"the guards ran past their time limit (exit code {code})", None
    if code in _NO_TEST_CODES:
        return NO_TESTS, "no guard covers the mutated function", None
    if code is None:
        return SKIPPED, "not run: mutmut stopped before the mutants (see the site baselines)", None
    failed = next((r for r in records if r.failed), None)
    why = f"; {failed.message}" if failed else ""
    return CRASHED, f"the guard run ended without a guard's verdict (exit code {code}){why}", None


def verdicts(
    identities: list[dict[str, object]],
    sites: list[Site],
    site_baselines: list[SiteBaseline],
    codes: dict[str, int | None],
    durations: dict[str, float],
    records: list[GuardRecord],
) -> list[MutantVerdict]:
    """One verdict per mutant; mutants at a site that is not guarded at baseline are skipped, never killed."""
    by_id = {site.id: site for site in sites}
    status_of_site = {b.site.id: b for b in site_baselines}
    named = {str(i["mutant_id"]) for i in identities}
    if named != set(codes):
        raise MutantsUnaccounted(
            f"mutmut's mutants and ours differ: only mutmut {sorted(set(codes) - named)}, "
            f"only ours {sorted(named - set(codes))}"
        )
    latest = _latest_records(records)
    out = []
    for identity in identities:
        mutant_id = str(identity["mutant_id"])
        site = by_id[str(identity["site"])]
        seen = latest.get(mutant_id, [])
        baseline = status_of_site[site.id]
        if baseline.status != GUARDED:
            status, reason, killer = SKIPPED, f"not counted: the site is {baseline.status} at baseline", None
        else:
            status, reason, killer = _status(codes[mutant_id], seen)
        out.append(
            MutantVerdict(
                mutant_id=mutant_id,
                site=site,
                operator=str(identity["operator"]),
                status=status,
                location=Location(site.line, site.column + 1, site.end_line, site.end_column + 1),
                original=str(identity["original"]),
                replacement=str(identity["replacement"]),
                killed_by=killer.test if killer else None,
                detectors=killer.detectors if killer else (),
                reason=reason,
                covered_by=tuple(dict.fromkeys(r.test for r in seen)),
                duration_s=durations.get(mutant_id),
            )
        )
    return out
