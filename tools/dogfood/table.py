"""The dogfood run's table: one row per module (mutants, killed, equivalent, survived, percent killed), then all."""

from __future__ import annotations

from collections.abc import Sequence

from tools.dogfood.run import Score

HEADER = ("module", "mutants", "killed", "equivalent", "survived", "killed %")


def render(scores: Sequence[Score]) -> str:
    """The table as Markdown (it reads on a terminal and pastes into a note); the last row sums every module."""
    every = Score("all", *(sum(getattr(s, f) for s in scores) for f in ("mutants", "killed", "equivalent")))
    rows = [(s.module, s.mutants, s.killed, s.equivalent, s.survived, f"{s.percent:.1f}") for s in [*scores, every]]
    lines = [f"| {' | '.join(HEADER)} |", f"|{'---|' * len(HEADER)}"]
    lines += [f"| {' | '.join(str(cell) for cell in row)} |" for row in rows]
    return "\n".join(lines)
