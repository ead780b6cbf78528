"""Verdicts from what a mutation run left behind: a status per site at baseline and per mutant.

A mutant is killed or survived only when mutmut's exit code and a finished guard session for it were both written,
and agree (`judge`); anything else is NOT_RUN, tested again by the next run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from warnonce_guard.guards.sessions import GuardRecord, GuardSession, RecordKind
from warnonce_guard.mutations.engine.attempts import REPEATS, Outcome, describe, outcome
from warnonce_guard.mutations.engine.confirm import Ledger
from warnonce_guard.mutations.engine.seam import MUTANT_MARK
from warnonce_guard.mutations.engine.status import PYTEST_NO_TESTS, EngineStatus, engine_status
from warnonce_guard.mutations.identify import NamedMutant
from warnonce_guard.mutations.records import (
    CRASHED,
    EXPOSED,
    FLAKY,
    GUARDED,
    KILLED,
    NEUTRALIZED,
    NO_TESTS,
    NOT_RUN,
    SKIPPED,
    SURVIVED,
    TIMEOUT,
    UNATTRIBUTED,
    UNREACHED,
    Location,
    MutantStatus,
    MutantVerdict,
    SiteBaseline,
)
from warnonce_guard.mutations.suite import SuiteBaseline
from warnonce_guard.rule.liveness import LIVE
from warnonce_guard.rule.site_row import Site


@dataclass(frozen=True)
class Judgement:
    status: MutantStatus
    reason: str
    killer: GuardRecord | None = None
    stock: tuple[str, ...] = ()  # NEUTRALIZED: what fired on the same drive with vLLM's stock cache


def judge(
    code: int | None,
    session: GuardSession | None,
    attempts: int = 0,
    site: str | None = None,
    running: str | None = None,
) -> Judgement:
    """One mutant's status from mutmut's exit code, the finished guard session that tested it (if any), how
    many attempts in a row ended abnormally (the ledger), the id of the mutant's own site, and the test its last
    session was running when it ended without finishing (`engine.running`)."""
    engine = engine_status(code)
    kind = outcome(code)
    if code is None:
        return Judgement(NOT_RUN, "not run yet")
    if kind is Outcome.STOPPED:
        return Judgement(NOT_RUN, f"its run was interrupted (exit code {code}); tested again next run")
    if kind is not Outcome.OWN and attempts < REPEATS:
        what = {Outcome.TIMEOUT: "ran past its time limit", Outcome.INTERRUPTED: "was interrupted by its tests"}.get(
            kind, "was killed from outside"
        )
        return Judgement(
            NOT_RUN,
            f"its worker {what} ({describe(code)}) on {attempts} of the "
            f"{REPEATS} attempts a verdict needs; tested again next run",
        )
    if kind is Outcome.TIMEOUT:
        during = f"; {running} was running" if running else ""
        return Judgement(
            TIMEOUT, f"its tests ran past mutmut's time limit on {attempts} attempts (exit code {code}){during}"
        )
    if kind is Outcome.KILLED:
        return Judgement(CRASHED, f"its worker was killed ({describe(code)}) on {attempts} attempts in a row")
    if kind is Outcome.INTERRUPTED:  # no stop of the run's: it stops the session before it reads a worker's status
        who = f"{running} interrupted its session" if running else "its session was interrupted"
        how = "KeyboardInterrupt or pytest.exit" if running else "KeyboardInterrupt, pytest.exit or a collection error"
        return Judgement(CRASHED, f"{who} on {attempts} attempts in a row (exit code {code}: {how})")
    if engine is EngineStatus.NO_TESTS:
        return Judgement(NO_TESTS, "no guard covers the mutated function")
    failed = next((r for r in session.records if r.failed), None) if session else None
    if code not in (0, 1):
        why = f"; {failed.message}" if failed else ""
        return Judgement(CRASHED, f"the guard run ended without a guard's verdict (exit code {code}, {engine}){why}")
    if session is None and running:  # its own exit code, mid-test: the test ended its process (os._exit)
        return Judgement(CRASHED, f"{running} ended its test process (exit code {code}) before the session finished")
    if session is None:
        return Judgement(NOT_RUN, f"exit code {code} but no finished guard record (an interrupted run?); tested again")
    if session.exit_status != code:
        return Judgement(
            NOT_RUN, f"exit code {code} but its guard record says {session.exit_status}; tested again next run"
        )
    if code == 0 and (cache := neutralized_by(session.records, site)) is not None:
        return Judgement(NEUTRALIZED, cache.message, stock=cache.detectors)
    if code == 0:
        return Judgement(SURVIVED, "every guard passed with the bug put back")
    if (killer := killed_by(session.records, site)) is not None:
        return Judgement(KILLED, killer.message, killer)
    if (late := next((r for r in session.records if r.kind is RecordKind.TIMEOUT), None)) is not None:
        return Judgement(TIMEOUT, f"{late.test} ran past --timeout ({late.message})", late)
    why = f"{failed.kind}: {failed.message}" if failed else "no guard failed"
    return Judgement(CRASHED, f"the guards failed without a detector firing ({why})")


def neutralized_by(records: Iterable[GuardRecord], site: str | None) -> GuardRecord | None:
    """The record of the mutant's own site's guard when it passed only by the target's cache (`NEUTRALIZED`)."""
    return next((r for r in records if r.kind is RecordKind.NEUTRALIZED and r.site == site), None)


def killed_by(records: Iterable[GuardRecord], site: str | None) -> GuardRecord | None:
    """The killer, whatever order the tests ran in: the guard of the mutant's own site if its detectors fired, else
    the first guard by node id that fired; for a suite (`mutate --tests`), the first of its tests by node id that
    failed."""
    kills = (r for r in records if r.kind in (RecordKind.LEAK, RecordKind.FAILED))
    ordered = sorted(kills, key=lambda r: (r.kind is not RecordKind.LEAK, r.site != site, r.test))
    return ordered[0] if ordered else None


def retest(
    codes: Mapping[str, int | None],
    sessions: Mapping[str, GuardSession],
    attempts: Mapping[str, tuple[int, ...]] | None = None,
    running: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Mutants with an exit code that no verdict stands on, and why: their codes are cleared before a run (`running`:
    the test each unfinished session was running, as `verdicts` takes it)."""
    out = {}
    for mutant, code in codes.items():
        if code is None:
            continue
        tries, last = len((attempts or {}).get(mutant, ())), (running or {}).get(mutant)
        judgement = judge(code, sessions.get(mutant), tries, running=last)
        if judgement.status is NOT_RUN:
            out[mutant] = judgement.reason
    return out


LIVE_BUT_PASSED = "its call passes the live exception (form live), though its guard saw no leak"


def site_baselines(sites: Iterable[Site], sessions: Iterable[GuardSession]) -> list[SiteBaseline]:
    """Each site's guard on the unmutated code: guarded, exposed or unreached (a failure anywhere wins); a site whose
    form is live is exposed whatever its guard says."""
    by_site: dict[str, list[GuardRecord]] = defaultdict(list)
    for session in sessions:
        for record in session.records:
            if record.site:
                by_site[record.site].append(record)
    out = []
    for site in sites:
        seen = by_site.get(site.id, [])
        failed = next((r for r in seen if r.failed), None)
        guard = seen[0].test if seen else ""
        if not seen:
            out.append(SiteBaseline(site, UNREACHED, guard, (), "the guard did not run on the unmutated code"))
        elif failed is None and site.form == LIVE:  # the source says it leaks: a passing guard does not outvote it
            out.append(SiteBaseline(site, EXPOSED, guard, (), LIVE_BUT_PASSED))
        elif failed is None:
            out.append(SiteBaseline(site, GUARDED, guard))
        elif failed.kind is RecordKind.LEAK:
            out.append(SiteBaseline(site, EXPOSED, guard, failed.detectors, failed.message))
        else:
            out.append(SiteBaseline(site, UNREACHED, guard, (), failed.message))
    return out


def judge_in_suite(
    baseline: SuiteBaseline,
    mutant: str,
    code: int | None,
    session: GuardSession | None,
    attempts: int,
    site: str,
    running: str | None = None,
) -> Judgement:
    """`judge` for a suite's run (`mutate --tests`), its reasons in the suite's words."""
    judgement = judge(code, session, attempts, site, running)
    if judgement.status is SURVIVED:
        return Judgement(SURVIVED, "every test of the suite that runs the mutated function passed")
    if judgement.status is not NO_TESTS:
        return judgement
    if code == PYTEST_NO_TESTS:  # every test that reaches it was left out
        return Judgement(NO_TESTS, "only tests that fail (or are flaky) on the unmutated code run the mutated function")
    why = "no test of the suite runs the mutated function"
    if mutant.partition(MUTANT_MARK)[0] in baseline.outside:
        why += "; it runs only while the suite is collected (on import), which no test sees"
    return Judgement(NO_TESTS, why)


def confirmed(judgement: Judgement, mutant: str, session: GuardSession | None, ledger: Ledger) -> Judgement:
    """A kill as its confirmation (`engine.confirm`) left it: killed when every re-run agreed and none of its tests is
    flaky anywhere, flaky (not counted) otherwise, not run while it waits for its re-runs."""
    if judgement.status is not KILLED or session is None:
        return judgement
    check = ledger.kills.get(mutant)
    if check is None or not check.confirms(session):
        return Judgement(NOT_RUN, "killed, not confirmed yet: its tests are re-run by the next run")
    if check.flaky:
        test, why = sorted(check.flaky.items())[0]
        return Judgement(FLAKY, f"not counted: the kill did not hold, {test} {why}", judgement.killer)
    flaky = ledger.flaky()
    if shaky := [test for test in check.killers if test in flaky]:
        return Judgement(
            FLAKY, f"not counted: killed by {shaky[0]}, which is flaky ({flaky[shaky[0]]})", judgement.killer
        )
    return judgement


def verdicts(
    named: Iterable[NamedMutant],
    sites: Iterable[Site],
    site_baselines: Iterable[SiteBaseline],
    codes: Mapping[str, int | None],
    durations: Mapping[str, float],
    sessions: Mapping[str, GuardSession],
    attempts: Mapping[str, tuple[int, ...]] | None = None,
    suite: SuiteBaseline | None = None,
    ledger: Ledger | None = None,
    running: Mapping[str, str] | None = None,
) -> list[MutantVerdict]:
    """One verdict per named mutant; mutants at a site that is not guarded at baseline are skipped, never killed. A
    suite's run (`suite`: what it did on the unmutated code) has no site baselines: every mutant is judged. With the
    confirmations' `ledger`, a kill counts once confirmed (`confirmed`); `running` names the test each mutant's
    unfinished session was running."""
    by_id = {site.id: site for site in sites}
    status_of_site = {b.site.id: b for b in site_baselines}
    out = []
    for mutant in named:
        site = mutant.orphan_site or by_id[mutant.site_id]
        session = sessions.get(mutant.mutant_id)
        baseline = status_of_site.get(site.id)
        tries = len((attempts or {}).get(mutant.mutant_id, ()))
        if mutant.unattributed:
            judgement = Judgement(UNATTRIBUTED, f"not counted: {mutant.unattributed}")
        elif suite is not None:
            code, last = codes.get(mutant.mutant_id), (running or {}).get(mutant.mutant_id)
            judgement = judge_in_suite(suite, mutant.mutant_id, code, session, tries, mutant.site_id, last)
        elif baseline is None or baseline.status != GUARDED:
            status = baseline.status if baseline else "not guarded"
            judgement = Judgement(SKIPPED, f"not counted: the site is {status} at baseline")
        else:
            judgement = judge(codes.get(mutant.mutant_id), session, tries, mutant.site_id)
        if ledger is not None:
            judgement = confirmed(judgement, mutant.mutant_id, session, ledger)
        killer = judgement.killer
        out.append(
            MutantVerdict(
                mutant_id=mutant.mutant_id,
                site=site,
                operator=mutant.operator,
                status=judgement.status,
                location=Location(site.line, site.column + 1, site.end_line, site.end_column + 1),
                original=mutant.original,
                replacement=mutant.replacement,
                killed_by=killer.test if killer else None,
                detectors=killer.detectors if killer else judgement.stock,
                reason=judgement.reason,
                covered_by=tuple(dict.fromkeys(r.test for r in session.records)) if session else (),
                duration_s=durations.get(mutant.mutant_id),
            )
        )
    return out
