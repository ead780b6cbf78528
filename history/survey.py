"""Discovery on one release's tree, plus where that release defines `import_kernels` (for `no sites` rows)."""

from __future__ import annotations

import ast
from pathlib import Path

from warnonce_guard.audit.paths import tree_files
from warnonce_guard.audit.run import audit_files
from warnonce_guard.caches.model import DEFAULT_MODEL
from warnonce_guard.caches.renders_first import renders_first
from warnonce_guard.common.errors import GuardError
from warnonce_guard.history.records import Survey
from warnonce_guard.rule.platforms import IMPORT_KERNELS
from warnonce_guard.rule.sites import discover
from warnonce_guard.rule.target import PACKAGE

LIVE_EXCEPTION = "WOG001"  # the audit's rule: a live exception into a *_once cache that keeps it


def survey(tree: Path) -> Survey:
    """Every kernel-import site of the tree (cached or not), the classes that define `import_kernels` and the live
    once-calls of the whole tree; a tree discovery cannot run on (a file does not parse) is a survey with its error,
    and the release `not checked`."""
    platforms = tree / PACKAGE / "platforms"
    hooks = kernel_hooks(tree)
    try:
        sites = tuple(discover(tree))
    except GuardError as err:
        return Survey((), hooks, platforms.is_dir(), str(err))
    return Survey(sites, hooks, platforms.is_dir(), live_calls=live_once_calls(tree))


def live_once_calls(tree: Path) -> int:
    """How many `*_once` calls of the tree's vLLM package pass a live exception to a cache that keeps it: the audit's
    WOG001 findings, by the caches it knows (vLLM's as the tree's `vllm/logger.py` is written)."""
    files = tree_files(tree)
    logger = tree / PACKAGE / "logger.py"
    model = DEFAULT_MODEL
    if logger.is_file() and renders_first(logger.read_text(encoding="utf-8", errors="replace")):
        model = model.with_vllm(True, f"read from {logger}")
    return sum(1 for finding in audit_files(files, model).findings if finding.code == LIVE_EXCEPTION)


def kernel_hooks(tree: Path) -> tuple[str, ...]:
    """`vllm/platforms/<file>::<Class>` for every class in vllm/platforms that defines `import_kernels`."""
    found = []
    for path in sorted((tree / PACKAGE / "platforms").glob("*.py")):
        try:
            module = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue  # discovery names the file that does not parse
        relative = path.relative_to(tree).as_posix()
        for node in module.body:
            if isinstance(node, ast.ClassDef) and any(
                isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == IMPORT_KERNELS
                for item in node.body
            ):
                found.append(f"{relative}::{node.name}")
    return tuple(found)
