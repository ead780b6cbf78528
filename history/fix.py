"""`history --with-fix`: an exposed release's guards again, with the cache-level fix applied to its `vllm/logger.py`
and no site changed.

The fixed tree is a copy of the release's `vllm/` (hard links where the disk allows) in a temporary directory of the
work directory's `trees/`, marked as ours and removed when its guards are done; only its `logger.py` is a new file
(`caches.cache_fix.patched` of the release's own), so the fetched tree is never written.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from warnonce_guard.caches.cache_fix import patched
from warnonce_guard.common.errors import GuardError
from warnonce_guard.common.files import scratch
from warnonce_guard.history.records import FixVerdict, GuardRun, ReleaseMeta, Survey, Verdict
from warnonce_guard.history.verdict import fix_verdict, release_verdict
from warnonce_guard.rule.target import PACKAGE, read_source

LOGGER = f"{PACKAGE}/logger.py"


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)
    except OSError:  # a disk without hard links
        shutil.copy2(source, destination)


def fixed_text(tree: Path) -> str:
    """The release's `vllm/logger.py` with the fix (`LoggerNotPatchable` or `NothingToCheck` when it cannot be)."""
    return patched(read_source(tree / LOGGER), LOGGER)


def check_with_fix(
    tree: Path,
    meta: ReleaseMeta,
    survey: Callable[[Path], Survey],
    run_guards: Callable[[Path, Path, float], GuardRun],
    log: Path,
    timeout_s: float,
) -> FixVerdict:
    """The guards on `tree` (a release's, holding `vllm/`) with its logger module fixed; `not checked` with the
    reason when the fix does not apply."""
    try:
        text = fixed_text(tree)
    except GuardError as err:
        return FixVerdict(Verdict.NOT_CHECKED, reason=f"the fix does not apply: {err}")
    with scratch(tree.with_name(f"{tree.name}+fix"), "fix") as folder:
        shutil.copytree(
            tree / PACKAGE, folder / PACKAGE, copy_function=_link_or_copy, ignore=shutil.ignore_patterns("__pycache__")
        )
        (folder / LOGGER).unlink()  # a link to the fetched tree's file: replaced, never written through
        (folder / LOGGER).write_text(text, encoding="utf-8")
        found = survey(folder)
        guards = run_guards(folder, log, timeout_s) if found.cached and not found.error else None
        return fix_verdict(release_verdict(meta, found, guards))
