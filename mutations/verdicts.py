"""The records a mutation run produces: one per site at baseline, one per mutant, and the run around them.

Everything downstream (score, reports) reads only these; nothing here knows mutmut or pytest.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from guards.sites import Site

# Mutant statuses (lowercase here; the Stryker report maps them to its own names).
KILLED = "killed"
SURVIVED = "survived"
TIMEOUT = "timeout"
CRASHED = "crashed"  # the test process died (segfault, out of memory, a crash of the runner itself)
NO_TESTS = "no tests"  # no guard covers the mutated function
SKIPPED = "skipped"  # not run: its site is exposed or unreached at baseline

# Site statuses at baseline (guards run on the unmutated target).
GUARDED = "guarded"  # the guard passes: the site is eager and reached
EXPOSED = "exposed"  # the guard fails: the bug is live in the target
UNREACHED = "unreached"  # no guard could drive execution to the site


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
    status: str  # GUARDED, EXPOSED or UNREACHED
    guard: str  # the guard's pytest node id
    detectors: tuple[str, ...] = ()  # what fired, when EXPOSED
    detail: str = ""  # the guard's failure message, when not GUARDED


@dataclass(frozen=True)
class MutantVerdict:
    mutant_id: str  # mutmut's name, e.g. vllm.platforms.cpu.xǁCpuPlatformǁimport_kernels__mutmut_3
    site: Site
    operator: str  # e.g. "eager-repr-revert"
    status: str  # KILLED, SURVIVED, TIMEOUT, CRASHED, NO_TESTS or SKIPPED
    location: Location  # of the replaced code in the original file
    original: str  # source text that was replaced
    replacement: str  # source text it was replaced with
    killed_by: str | None = None  # the guard's pytest node id, when KILLED
    detectors: tuple[str, ...] = ()  # what fired in that guard, when KILLED
    reason: str = ""  # one line: why it has this status (the guard's first finding, exit code, ...)
    covered_by: tuple[str, ...] = ()  # guards that ran against it
    duration_s: float | None = None


@dataclass(frozen=True)
class Operator:
    name: str
    description: str


@dataclass
class RunResult:
    """One mutation run of one target."""

    vllm_version: str
    vllm_commit: str | None
    target: str  # where the target came from, e.g. "installed at /.../site-packages/vllm"
    sources: dict[str, str]  # file (as in Site.file) -> original source text
    operators: list[Operator]
    baselines: list[SiteBaseline]
    mutants: list[MutantVerdict] = field(default_factory=list)
    duration_s: float = 0.0

    def count(self, status: str) -> int:
        return sum(1 for m in self.mutants if m.status == status)

    @property
    def scored(self) -> list[MutantVerdict]:
        """The mutants the score counts: every one that ran (skipped ones did not)."""
        return [m for m in self.mutants if m.status != SKIPPED]

    @property
    def score(self) -> float | None:
        """Killed / scored, in percent; None when there is nothing to score (never a vacuous 100%)."""
        scored = self.scored
        if not scored:
            return None
        return 100.0 * sum(1 for m in scored if m.status == KILLED) / len(scored)

    def sites_with(self, status: str) -> list[SiteBaseline]:
        return [b for b in self.baselines if b.status == status]
