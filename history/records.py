"""The typed records passed between the history stages; statuses are enums, never magic strings (and the sweep's
default work directory, which the command line and `run.Options` share).

A release's sites are the rule's `Site` records and a guard's result the guards' `RecordKind`: history adds only
what it makes of them (the survey, the guard run, the verdict).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from warnonce_guard.guards.sessions import RecordKind

if TYPE_CHECKING:  # rule.sites needs libcst (the mutation extra); every command imports this module
    from warnonce_guard.rule.site_row import Site


class Verdict(StrEnum):
    """What a release's table row says."""

    EXPOSED = "exposed"  # cached kernel-import sites, and their guards fail (a detector fired)
    GUARDED = "guarded"  # cached kernel-import sites, and every guard passes
    NO_SITES = "no sites"  # no `*_once` kernel-import site: nothing can leak into the cache
    NOT_CHECKED = "not checked"  # no verdict, with the one-line reason (and what it would take)


@dataclass(frozen=True)
class Survey:
    """Discovery on one release's tree."""

    sites: tuple[Site, ...]
    hooks: tuple[str, ...]  # where `import_kernels` is defined: `vllm/platforms/interface.py::Platform`
    has_platforms: bool  # the tree has a `vllm/platforms/` package
    error: str | None = None  # discovery could not run on this tree (why, in one line)
    live_calls: int | None = None  # `*_once` calls anywhere in the tree passing a live exception (the audit's WOG001)

    @property
    def cached(self) -> tuple[Site, ...]:
        return tuple(site for site in self.sites if site.cached)

    @property
    def plain(self) -> tuple[Site, ...]:
        """The sites whose handler logs through a plain method (not those whose call is not recognised)."""
        return tuple(site for site in self.sites if not site.cached and site.recognised)


@dataclass(frozen=True)
class SiteOutcome:
    """One guard's result on one site; `outcome` None: discovery found the site, the guard run left no record of it."""

    site_id: str
    outcome: RecordKind | None
    detectors: tuple[str, ...] = ()
    message: str = ""
    missing_module: str | None = None  # the module a failed platform import named

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SiteOutcome:
        outcome = None if data["outcome"] is None else RecordKind(data["outcome"])
        return cls(**data | {"outcome": outcome, "detectors": tuple(data["detectors"])})


@dataclass(frozen=True)
class GuardRun:
    """The guards run against one tree in a fresh interpreter."""

    exit_code: int
    outcomes: tuple[SiteOutcome, ...]
    error: str | None = None  # the run as a whole failed (usage error, crash, timeout): one line
    duration_s: float = 0.0
    timed_out: bool = False
    stopped: bool = False  # killed or interrupted by a signal from outside (OOM killer, kill): not the tree's doing

    def outcome_of(self, site_id: str) -> SiteOutcome:
        found = [o for o in self.outcomes if o.site_id == site_id]
        return found[0] if found else SiteOutcome(site_id, None, message="no record from the guard run")


@dataclass(frozen=True)
class ReleaseMeta:
    """Which release, from the index, and which file of it was checked."""

    version: str
    date: str  # upload date of the release's first file, YYYY-MM-DD
    yanked: str | None = None  # the yank reason ("" when yanked without one); None when not yanked
    source: str | None = None  # the file checked: an sdist, or a wheel when there is no usable sdist
    fallback: str = ""  # why a wheel was checked: "no sdist on the index", or why the sdist failed


@dataclass(frozen=True)
class FixVerdict:
    """A release's guards with the cache-level fix applied to its `vllm/logger.py` and no site changed
    (`history --with-fix`; `caches.cache_fix`)."""

    verdict: Verdict  # guarded, exposed or not checked (the patch did not apply, or the guards did not run)
    neutralized: int = 0  # sites whose guard passed by the fixed cache alone: with vLLM's stock cache they leak
    detectors: tuple[str, ...] = ()  # what fired, when still exposed
    reason: str = ""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FixVerdict:
        return cls(**data | {"verdict": Verdict(data["verdict"]), "detectors": tuple(data["detectors"])})


@dataclass(frozen=True)
class ReleaseVerdict:
    """One release's row: the verdict and the evidence behind it."""

    meta: ReleaseMeta
    verdict: Verdict
    sites: int = 0  # cached (`*_once`) kernel-import sites: the guarded ones
    plain_sites: int = 0  # kernel-import sites logging through a plain, uncached method
    live: int = 0
    eager: int = 0
    live_calls: int | None = None  # the audit's WOG001 over the whole release (None: not counted)
    detectors: tuple[str, ...] = ()
    reason: str = ""
    site_outcomes: tuple[SiteOutcome, ...] = field(default=())
    duration_s: float = 0.0
    retry: bool = False  # a passing failure (download, timeout): not cached, the next run tries again
    with_fix: FixVerdict | None = None  # the guards again with the cache-level fix (an exposed release, --with-fix)

    @property
    def version(self) -> str:
        return self.meta.version

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # its enums are strings

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReleaseVerdict:
        """The verdict `to_json` wrote (`TypeError`, `KeyError` or `ValueError` for what it cannot have written)."""
        return cls(
            **data
            | {
                "meta": ReleaseMeta(**data["meta"]),
                "verdict": Verdict(data["verdict"]),
                "detectors": tuple(data["detectors"]),
                "site_outcomes": tuple(SiteOutcome.from_json(o) for o in data["site_outcomes"]),
                "with_fix": FixVerdict.from_json(data["with_fix"]) if data.get("with_fix") else None,
            }
        )


@dataclass(frozen=True)
class HistoryReport:
    """A sweep: its verdicts (newest first) and how it was made."""

    command: str  # the command that produced it
    generated: str  # when, ISO 8601 (UTC)
    fingerprint: str  # the tool fingerprint the verdicts were made with
    environment: str  # Python and torch versions, for the header
    verdicts: tuple[ReleaseVerdict, ...]
    prereleases_left_out: tuple[str, ...] = ()
    checked: int = 0  # releases checked in this run
    from_cache: int = 0  # releases whose kept verdict was reused
    duration_s: float = 0.0
    with_fix: bool = False  # each exposed release was checked again with the cache-level fix (`--with-fix`)

    def count(self, verdict: Verdict) -> int:
        return sum(1 for v in self.verdicts if v.verdict is verdict)
