"""Where mutmut 3.8.1 keeps its state under a workspace's `mutants/` folder (the folder the guards import)."""

from __future__ import annotations

from pathlib import Path

from warnonce_guard.mutations.workspace import Workspace

STATS = "mutmut-stats.json"


def mutated(ws: Workspace, file: str) -> Path:
    """mutmut's copy of a site file, holding its mutants."""
    return ws.mutants / file


def meta(ws: Workspace, file: str) -> Path:
    """mutmut's state for one site file: an exit code per mutant."""
    return ws.mutants / f"{file}.meta"


def spans(ws: Workspace, file: str) -> Path:
    return ws.mutants / f"{file}.spans"


def stats(ws: Workspace) -> Path:
    return ws.mutants / STATS
