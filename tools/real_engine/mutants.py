"""One mutant per operator of the fixed release's platform file, staged where the mutation run's overlay reads it.

The site is the one this CPU runs (its kernel module, `scenario.kernel_module`), found by discovery; the operator
is applied by `mutations.operators.mutate_try`, bound to that site's anchor as in a mutation run, and the whole
file, with that one call changed, is written to the workspace's `mutants/` (`mutations.engine.layout.mutated`).
The installed vLLM is never written to: the scenario imports the copy through `mutations.engine.overlay.Overlay`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
from warnonce_guard.mutations.engine import layout
from warnonce_guard.mutations.operators import OPERATORS, anchors_of, mutate_try
from warnonce_guard.mutations.workspace import Workspace
from warnonce_guard.rule.site_row import Site
from warnonce_guard.rule.site_rule import TryNode, anchor, walk
from warnonce_guard.rule.sites import sites_in_source

from tools.real_engine.row import PLATFORM_FILE

MODULE = "vllm.platforms.cpu"


class NoSuchSite(LookupError):
    """The platform file has no cached site for the kernel module."""


@dataclass(frozen=True)
class Mutant:
    operator: str
    workspace: Path
    before: str  # the changed line(s) of the site, as released
    after: str  # and as the mutant has them


def site_for(source: str, kernel_module: str) -> Site:
    """The cached kernel-import site of the platform file that imports `kernel_module`."""
    for site in sites_in_source(source, PLATFORM_FILE, MODULE):
        if site.cached and site.kernel_module == kernel_module:
            return site
    raise NoSuchSite(f"{PLATFORM_FILE} has no cached site importing {kernel_module}")


def mutated_source(source: str, site: Site, operator: str) -> str | None:
    """The file with `operator` applied to the site's call, or None where the operator does not apply to it."""
    module = cst.parse_module(source)
    for node in walk(module):
        if isinstance(node, TryNode) and anchor(node) == site.anchor:
            made = next(mutate_try(OPERATORS[operator].function, node, "vllm", anchors_of([site])), None)
            return None if made is None else module.deep_replace(node, made).code  # type: ignore[union-attr]
    raise NoSuchSite(f"no try statement of {PLATFORM_FILE} has the anchor of {site.id}")


def stage(platform_file: Path, kernel_module: str, operator: str, workspace: Path) -> Mutant | None:
    """Write the operator's mutant of the installed `platform_file` into `workspace`; None where it does not apply."""
    source = platform_file.read_text(encoding="utf-8")
    mutated = mutated_source(source, site_for(source, kernel_module), operator)
    if mutated is None:
        return None
    ws = Workspace(workspace)
    ws.create()
    target = layout.mutated(ws, PLATFORM_FILE)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(mutated, encoding="utf-8")
    removed, added = changed_lines(source, mutated)
    return Mutant(operator, workspace, removed, added)


def changed_lines(before: str, after: str) -> tuple[str, str]:
    """The lines a mutant removes and adds, each joined and stripped."""
    diff = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0))
    removed = " ".join(line[1:].strip() for line in diff if line.startswith("-") and not line.startswith("---"))
    added = " ".join(line[1:].strip() for line in diff if line.startswith("+") and not line.startswith("+++"))
    return removed, added
