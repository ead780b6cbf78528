"""A release's verdict from its discovery survey and its guard run: a pure function, no I/O."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import PurePosixPath

from warnonce_guard.guards.detectors import DETECTORS
from warnonce_guard.guards.sessions import RecordKind
from warnonce_guard.history.records import (
    FixVerdict,
    GuardRun,
    ReleaseMeta,
    ReleaseVerdict,
    SiteOutcome,
    Survey,
    Verdict,
)
from warnonce_guard.rule.platforms import IMPORT_KERNELS
from warnonce_guard.rule.site_row import Site

# The guards' detectors in their registry's order, then what an unreached guard reports
DETECTOR_ORDER = (*(detector.name for detector in DETECTORS), RecordKind.UNREACHED.value)
REQUIREMENTS = "requirements/history-env.txt"
# Import names whose distribution is named otherwise; the rest install under their own name.
DISTRIBUTIONS = {
    "zmq": "pyzmq",
    "yaml": "pyyaml",
    "cv2": "opencv-python-headless",
    "PIL": "pillow",
    "google": "protobuf",
    "sklearn": "scikit-learn",
    "cpuinfo": "py-cpuinfo",
}
MAX_LISTED = 3


def release_verdict(
    meta: ReleaseMeta, survey: Survey, guards: GuardRun | None, duration_s: float = 0.0
) -> ReleaseVerdict:
    """exposed / guarded / no sites / not checked, with the detectors and the one-line reason."""
    cached = survey.cached
    unjudged = ReleaseVerdict(
        meta,
        Verdict.NOT_CHECKED,
        sites=len(cached),
        plain_sites=len(survey.plain),
        live=sum(1 for s in cached if s.form == "live"),
        eager=sum(1 for s in cached if s.form == "eager"),
        live_calls=survey.live_calls,
        duration_s=duration_s,
    )
    if survey.error:
        return replace(unjudged, reason=f"discovery failed: {survey.error}")
    if not cached:
        return replace(unjudged, verdict=Verdict.NO_SITES, reason=what_instead(survey))
    if guards is None:
        raise ValueError(f"{meta.version}: {len(cached)} cached site(s) but no guard run to judge them by")
    if guards.error:
        retry = guards.timed_out or guards.stopped
        return replace(unjudged, reason=f"guards did not run: {guards.error}", retry=retry)
    outcomes = tuple(guards.outcome_of(site.id) for site in cached)
    judged = replace(unjudged, site_outcomes=outcomes)
    leaks = [o for o in outcomes if o.outcome is RecordKind.LEAK]
    unproven = [o for o in outcomes if o.outcome not in (RecordKind.LEAK, RecordKind.PASSED, RecordKind.NEUTRALIZED)]
    if leaks:
        fired = ordered(
            d for o in (*leaks, *unproven) if o.outcome in (RecordKind.LEAK, RecordKind.UNREACHED) for d in o.detectors
        )
        reason = f"{len(unproven)} of {len(cached)} site(s) not checked: {why(unproven)}" if unproven else ""
        return replace(judged, verdict=Verdict.EXPOSED, detectors=fired, reason=reason)
    if unproven:
        detectors = ordered(d for o in unproven for d in o.detectors if d in DETECTOR_ORDER)
        return replace(judged, detectors=detectors, reason=why(unproven))
    return replace(judged, verdict=Verdict.GUARDED)


def fix_verdict(fixed: ReleaseVerdict) -> FixVerdict:
    """The `--with-fix` column's verdict from the verdict of a release's tree with the fix applied."""
    neutralized = sum(1 for o in fixed.site_outcomes if o.outcome is RecordKind.NEUTRALIZED)
    return FixVerdict(fixed.verdict, neutralized, fixed.detectors, fixed.reason)


def not_checked(meta: ReleaseMeta, reason: str, retry: bool, duration_s: float = 0.0) -> ReleaseVerdict:
    """A release that could not be brought to discovery (e.g. its download failed)."""
    return ReleaseVerdict(meta, Verdict.NOT_CHECKED, reason=reason, duration_s=duration_s, retry=retry)


def ordered(detectors: Iterable[str]) -> tuple[str, ...]:
    """Each detector once, in the guards' order (unknown ones last, alphabetically)."""
    found = set(detectors)
    known = [d for d in DETECTOR_ORDER if d in found]
    return (*known, *sorted(found - set(known)))


def why(outcomes: list[SiteOutcome]) -> str:
    """What kept sites from a verdict, and what would fix it, one clause per cause."""
    clauses: list[str] = []
    missing = sorted({o.missing_module for o in outcomes if o.missing_module})
    for name in missing:
        top = name.split(".")[0]
        if top == "vllm":
            clauses.append(f"the release's tree lacks `{name}` (not in the archive's vllm/ package)")
        else:
            clauses.append(f"needs module `{name}`: add `{DISTRIBUTIONS.get(top, top)}` (pinned) to {REQUIREMENTS}")
    for o in outcomes:
        if o.missing_module:
            continue
        if o.outcome is RecordKind.UNREACHED:
            clauses.append(f"{o.site_id} unreached: {o.message.split(' unreached: ', 1)[-1]}")
        elif o.outcome is None:
            clauses.append(f"{o.site_id}: {o.message}")
        else:
            clauses.append(f"{o.site_id}: {o.message or ', '.join(o.detectors)}")
    return "; ".join(dict.fromkeys(clauses))


def _files(sites: Iterable[Site]) -> str:
    names = list(dict.fromkeys(PurePosixPath(s.file).relative_to("vllm").as_posix() for s in sites))
    more = f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else ""
    return ", ".join(names[:MAX_LISTED]) + more


def _methods(sites: Iterable[Site]) -> str:
    return "/".join(f"logger.{m}" for m in dict.fromkeys(s.log_method for s in sites))


def what_instead(survey: Survey) -> str:
    """For a release with no `*_once` kernel-import site: what it does instead, in one line."""
    in_hook = [s for s in survey.plain if s.function_name == IMPORT_KERNELS]
    elsewhere = [s for s in survey.plain if s not in in_hook]
    if in_hook:
        head = f"import_kernels logs with plain {_methods(in_hook)} (not cached)"
        tail = f"{len(in_hook)} site(s) in {_files(in_hook)}"
        more = f"; {len(elsewhere)} more outside it in {_files(elsewhere)}" if elsewhere else ""
        return f"{head}: {tail}{more}"
    if not survey.has_platforms:
        head = "no vllm/platforms package (no Platform.import_kernels)"
    elif not survey.hooks:
        head = "no import_kernels in vllm/platforms"
    else:
        head = "import_kernels logs no caught kernel-import exception"
    if elsewhere:
        plain = f"kernel imports log with plain {_methods(elsewhere)} (not cached)"
        return f"{head}; {plain}: {len(elsewhere)} site(s) in {_files(elsewhere)}"
    return head if survey.hooks else f"{head}; no kernel-import site logs a caught exception"
