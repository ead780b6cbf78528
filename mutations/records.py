"""The records a mutation run produces: one per site at baseline, one per mutant, and the run around them.

Everything downstream (score, reports) reads only these; nothing here knows mutmut or pytest.
"""

from __future__ import annotations

import secrets
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from importlib import metadata
from typing import Any

from warnonce_guard.rule.site_row import Site


class MutantStatus(StrEnum):
    """What happened to one mutant (the Stryker report maps these to its own names)."""

    KILLED = "killed"  # a guard's detectors fired with the mutant in place
    SURVIVED = "survived"  # every guard passed with the mutant in place
    TIMEOUT = "timeout"  # its tests ran past their time limit (mutmut's, or --timeout's: the test is named)
    CRASHED = "crashed"  # the guard run ended without a guard's verdict (segfault, error in a guard, ...)
    NO_TESTS = "not reached"  # no guard (or test of a suite) runs the mutated function
    SKIPPED = "skipped"  # not counted: its site is exposed or unreached at baseline
    NOT_RUN = "not run"  # no finished run of it yet (interrupted, or mutmut stopped first): re-tested next run
    UNATTRIBUTED = "unattributed"  # no discovered site explains it: a bug of the site rule, never counted
    FLAKY = "flaky"  # killed only by a test that is flaky (a re-run did not agree): counted as not killed
    # The guards passed, and the same drive with vLLM's stock cache leaked: the bug is back at the site, and the
    # target's *_once cache, which renders first, keeps it harmless. Neither survived nor a kill: not scored.
    NEUTRALIZED = "neutralized"


class SiteStatus(StrEnum):
    """A site's guard on the unmutated target."""

    GUARDED = "guarded"  # the guard passes: the site is eager and reached
    EXPOSED = "exposed"  # the guard fails: the bug is live in the target
    UNREACHED = "unreached"  # no guard could drive execution to the site


KILLED, SURVIVED, TIMEOUT, CRASHED, NO_TESTS, SKIPPED, NOT_RUN, UNATTRIBUTED, FLAKY, NEUTRALIZED = MutantStatus
GUARDED, EXPOSED, UNREACHED = SiteStatus


@dataclass(frozen=True)
class Location:
    """1-based line and column, as the Stryker schema counts them; `end` is exclusive."""

    start_line: int
    start_column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class SiteBaseline:
    site: Site
    status: SiteStatus
    guard: str  # the guard's pytest node id
    detectors: tuple[str, ...] = ()  # what fired, when EXPOSED
    detail: str = ""  # the guard's failure message, when not GUARDED

    @property
    def reason(self) -> str:
        """One line: why the site has no counted mutants (every report says it the same way)."""
        if self.status == EXPOSED:
            return f"site exposed at baseline: {', '.join(self.detectors) or self.detail or 'the guard failed'}"
        if self.status == UNREACHED:
            return f"site unreached at baseline: {self.detail or 'no guard could drive execution to it'}"
        return "site guarded at baseline"


@dataclass(frozen=True)
class MutantVerdict:
    mutant_id: str  # mutmut's name, e.g. vllm.platforms.cpu.xǁCpuPlatformǁimport_kernels__mutmut_3
    site: Site
    operator: str  # e.g. "eager-repr-revert"
    status: MutantStatus
    location: Location  # of the replaced code in the original file
    original: str  # source text that was replaced
    replacement: str  # source text it was replaced with
    killed_by: str | None = None  # the guard's pytest node id, when KILLED
    detectors: tuple[str, ...] = ()  # what fired in that guard, when KILLED; with vLLM's stock cache, NEUTRALIZED
    reason: str = ""  # one line: why it has this status (the guard's first finding, exit code, ...)
    covered_by: tuple[str, ...] = ()  # guards that ran against it
    duration_s: float | None = None


@dataclass(frozen=True)
class SuiteInfo:
    """The pytest suite that scored the mutants (`mutate --tests`), and its tests that fail on the unmutated code:
    listed, left out of every mutant's run, never counted as a kill."""

    name: str  # as every report names it (`mutations.suite.Suite.describe`)
    failing: dict[str, str] = field(default_factory=dict)  # node id -> the first line of its failure

    @classmethod
    def from_json(cls, data: Any) -> SuiteInfo | None:
        return None if data is None else cls(str(data["name"]), {str(k): str(v) for k, v in data["failing"].items()})


GUARDS_NAME = "the guards of warnonce-guard"  # what scores the mutants without --tests


@dataclass(frozen=True)
class OperatorInfo:
    name: str
    description: str


def tool_version() -> str:
    """This tool's version, from its package metadata ("unknown" when run from a tree that is not installed)."""
    try:
        return metadata.version("warnonce-guard")
    except metadata.PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True)
class RunInfo:
    """Which run of `warnonce-guard mutate` this is: every report says which run wrote it."""

    run_id: str  # also the id the run gives its mutmut session (generation.json records it)
    started: str  # UTC, ISO 8601 to the second: 2026-05-01T12:34:56Z
    tool_version: str

    @classmethod
    def begin(cls) -> RunInfo:
        """A new run, starting now."""
        return cls(secrets.token_hex(16), datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), tool_version())

    @classmethod
    def from_json(cls, data: Any) -> RunInfo | None:
        return None if data is None else cls(str(data["run_id"]), str(data["started"]), str(data["tool_version"]))


@dataclass
class RunResult:
    """One mutation run of one target."""

    vllm_version: str
    vllm_commit: str | None
    target: str  # where the target came from, e.g. "installed at /.../site-packages/vllm"
    sources: dict[str, str]  # file (as in Site.file) -> original source text
    operators: list[OperatorInfo]
    baselines: list[SiteBaseline]
    mutants: list[MutantVerdict] = field(default_factory=list)
    duration_s: float = 0.0
    run: RunInfo | None = None  # the run that wrote this result (for reused verdicts: the run reusing them)
    verdicts_from: RunInfo | None = None  # the earlier run whose verdicts these are, when they were reused
    suite: SuiteInfo | None = None  # the suite of --tests that scored the mutants; None: the guards
    flaky: dict[str, str] = field(default_factory=dict)  # tests whose re-run did not agree (node id -> how): no kills
    confirmed_by: int = 0  # how many times each kill's tests were re-run to confirm it (`mutate --confirm`)
    # site id -> operator -> why it made no mutant there (what it needs of the call): never skipped in silence
    not_applied: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def scored_by(self) -> str:
        """What ran against the mutants, as every report names it."""
        return self.suite.name if self.suite is not None else GUARDS_NAME

    def count(self, status: MutantStatus) -> int:
        return sum(1 for m in self.mutants if m.status == status)

    @property
    def scored(self) -> list[MutantVerdict]:
        """The mutants the score counts: every one that ran (skipped and not-run ones did not), but those the
        target's cache neutralized (nothing of them can leak: no guard could kill them, and none need to)."""
        return [m for m in self.mutants if m.status not in (SKIPPED, NOT_RUN, UNATTRIBUTED, NEUTRALIZED)]

    @property
    def counts(self) -> str:
        """The score's counts as every report says them: `5 killed of 15 reached, 3 not reached`; a mutant no test
        reaches counts against the score, and is counted apart from those a test ran."""
        not_reached = self.count(NO_TESTS)
        reached = len(self.scored) - not_reached
        apart = f", {not_reached} not reached" if not_reached else ""
        flaky = f", {self.count(FLAKY)} killed only by flaky tests (not counted)" if self.count(FLAKY) else ""
        neutralized = self.count(NEUTRALIZED)
        cache = f"; {neutralized} more neutralized by the target's cache, not scored" if neutralized else ""
        return f"{self.count(KILLED)} killed of {reached} reached{apart}{flaky}{cache}"

    @property
    def score(self) -> float | None:
        """Killed / scored, in percent; None when there is nothing to score (never a vacuous 100%)."""
        scored = self.scored
        if not scored:
            return None
        return 100.0 * sum(1 for m in scored if m.status == KILLED) / len(scored)

    @property
    def cache_note(self) -> str | None:
        """A sentence for a run in which the target's cache neutralized mutants, else None."""
        neutralized = self.count(NEUTRALIZED)
        if not neutralized:
            return None
        return (
            f"The target's *_once cache renders the message first and keeps only text: {neutralized} mutant(s) put a "
            "live exception back into a *_once call and leaked nothing, where the same drive with vLLM's stock cache "
            "kept it (not scored: neither survived nor killed). The cache closes the class."
        )

    def sites_with(self, status: SiteStatus) -> list[SiteBaseline]:
        return [b for b in self.baselines if b.status == status]

    @property
    def final(self) -> bool:
        """Every verdict stands on its own: no mutant waits for a run, no site waits for its environment."""
        return not self.count(NOT_RUN) and not self.sites_with(UNREACHED)

    def to_json(self) -> dict[str, Any]:
        """The whole result as JSON values (sites as `Site.to_json`, enums as their values)."""
        data = asdict(replace(self, baselines=[], mutants=[]))  # each record once, its site as Site.to_json says
        data["baselines"] = [asdict(replace(b, site=None)) | {"site": b.site.to_json()} for b in self.baselines]
        data["mutants"] = [asdict(replace(m, site=None)) | {"site": m.site.to_json()} for m in self.mutants]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResult:
        """The inverse of `to_json`; raises KeyError, TypeError or ValueError on anything else."""
        baselines = [
            SiteBaseline(
                **(
                    b
                    | {
                        "site": Site.from_json(b["site"]),
                        "status": SiteStatus(b["status"]),
                        "detectors": tuple(b["detectors"]),
                    }
                )
            )
            for b in data["baselines"]
        ]
        mutants = [
            MutantVerdict(
                **(
                    m
                    | {
                        "site": Site.from_json(m["site"]),
                        "status": MutantStatus(m["status"]),
                        "location": Location(**m["location"]),
                        "detectors": tuple(m["detectors"]),
                        "covered_by": tuple(m["covered_by"]),
                    }
                )
            )
            for m in data["mutants"]
        ]
        operators = [OperatorInfo(**o) for o in data["operators"]]
        fields = {k: data[k] for k in ("vllm_version", "vllm_commit", "target", "sources", "duration_s")}
        runs = {k: RunInfo.from_json(data.get(k)) for k in ("run", "verdicts_from")}
        suite = SuiteInfo.from_json(data.get("suite"))
        confirmation = {
            "flaky": {str(k): str(v) for k, v in data["flaky"].items()},
            "confirmed_by": data["confirmed_by"],
            "not_applied": {str(k): {str(o): str(w) for o, w in v.items()} for k, v in data["not_applied"].items()},
        }
        return cls(
            **fields, operators=operators, baselines=baselines, mutants=mutants, **runs, suite=suite, **confirmation
        )

    @property
    def viewer_score(self) -> float | None:
        """The score the Stryker viewer shows: (Killed + Timeout) / (those + Survived + NoCoverage)."""
        detected = self.count(KILLED) + self.count(TIMEOUT)
        valid = detected + self.count(SURVIVED) + self.count(NO_TESTS)
        return 100.0 * detected / valid if valid else None

    @property
    def score_note(self) -> str | None:
        """A sentence for when the viewer's score differs from the run's, else None."""
        ours, shown = self.score, self.viewer_score
        if ours is None or shown is None or abs(ours - shown) < 0.005:
            return None
        return (
            f"The mutation score is {ours:.2f}% (killed / mutants run). The Stryker viewer shows {shown:.2f}%:"
            " it counts timeouts as detected and leaves crashes out."
        )


def percent(score: float | None) -> str:
    """A score as every report prints it: `66.67%`, or `n/a` when nothing was scored."""
    return "n/a" if score is None else f"{score:.2f}%"
