"""What each run must show: the user's symptom where the bug is, a clean shutdown where it is not.

| run | LLM after del + gc | EngineCore after del | warnings |
|---|---|---|---|
| before the fix, kernel module refused | alive | still running after the wait | more than one |
| the fix, or nothing refused | collected | exits within `SHUTDOWN_BOUND_S` | one if refused, else none |
| a mutant that passes the exception (`eager-repr-revert`, `live-arg`) | alive | still running | more than one |
| a mutant that drops the cache (`once-dropped`) | collected | exits | more than one |

A row whose parent never imported the kernel module while the LLM was built says nothing: vLLM's model-info cache
(`modelinfos/` under VLLM_CACHE_ROOT) spares the parent `vllm._custom_ops` on a hit, `import_kernels` never runs
there, and the release before the fix looks healthy. `problems` reports that before anything else.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from packaging.version import Version

from tools.real_engine.row import Row

FIXED_IN = Version("0.30.0")  # the first release whose kernel-import sites log `"...: %s", repr(e)`
SHUTDOWN_BOUND_S = 12.0  # vLLM's own shutdown: SIGTERM, the worker leaves in ~3 s, EngineCore killed at 5 s
PINNED_WAIT_S = 15.0  # a pinned engine must still run this long after `del llm` (the scenario's --wait)
PINNING_OPERATORS = ("eager-repr-revert", "live-arg")
REPEATING_OPERATORS = ("once-dropped",)


class Warned(StrEnum):
    """How often the failed kernel import must have been reported."""

    NEVER = "0"
    ONCE = "1"
    REPEATED = ">1"

    def holds(self, count: int) -> bool:
        return {Warned.NEVER: count == 0, Warned.ONCE: count == 1, Warned.REPEATED: count > 1}[self]


@dataclass(frozen=True)
class Expected:
    pinned: bool  # the LLM alive after del + gc, its EngineCore still running after the wait
    warned: Warned

    def __str__(self) -> str:
        state = "alive, EngineCore running" if self.pinned else "collected, EngineCore exited"
        return f"{state}, {self.warned} warning(s)"


def expected(version: str, refused: bool, mutant: str = "") -> Expected:
    """The row a run must give: by the release (before or after the fix), the refusal and the mutant."""
    if not refused:
        return Expected(pinned=False, warned=Warned.NEVER)
    if mutant in PINNING_OPERATORS or (not mutant and Version(version) < FIXED_IN):
        return Expected(pinned=True, warned=Warned.REPEATED)
    if mutant in REPEATING_OPERATORS:
        return Expected(pinned=False, warned=Warned.REPEATED)
    if mutant:
        raise ValueError(f"no expectation for the mutant {mutant!r}")
    return Expected(pinned=False, warned=Warned.ONCE)


def cache_trap(row: Row) -> str | None:
    """Why the row cannot be trusted, if the parent never imported the kernel module while the LLM was built."""
    if row.kernel_imports:
        return None
    return (
        f"import_kernels was not reached in the parent while the LLM was built (no import of {row.kernel_module}): "
        "a warm model-info cache under VLLM_CACHE_ROOT (modelinfos/) spares the parent vllm._custom_ops; each run "
        "needs a cache root of its own, or the release before the fix looks healthy"
    )


def problems(row: Row, want: Expected) -> list[str]:
    """How the row differs from what was expected (empty: as expected); the cache trap first and alone."""
    if (trap := cache_trap(row)) is not None:
        return [trap]
    found = []
    if want.pinned and not row.llm_alive:
        found.append("the LLM was collected after del + gc.collect(), expected it pinned")
    if not want.pinned and row.llm_alive:
        held = " <- ".join(row.referrers) or "an unknown referrer"
        found.append(f"the LLM is still alive after del + gc.collect(); held by {held}")
    if want.pinned and row.engine_core_exit_s is not None:
        found.append(f"EngineCore exited {row.engine_core_exit_s:.1f} s after del, expected it still running")
    if not want.pinned and (row.engine_core_exit_s is None or row.engine_core_exit_s > SHUTDOWN_BOUND_S):
        found.append(f"EngineCore {row.engine_core}, expected it gone within {SHUTDOWN_BOUND_S:.0f} s")
    if not row.engine_cores:
        found.append("no EngineCore process was seen")
    if not want.warned.holds(row.warnings):
        found.append(f"{row.warnings} warning(s) about the failed import, expected {want.warned}")
    return found
