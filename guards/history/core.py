"""The adapter: everything the history knows about the rest of warnonce-guard, in this one module.

When the core changes, re-point what is here and nothing else:
- `discover_sites(tree)`: discovery (`guards.sites.discover`) turned into `SiteInfo` records;
- `run_guards(tree, log)`: the guards against a tree in a fresh interpreter (`warnonce-guard guards`),
  read back from the attribution records the guards' conftest writes (WARNONCE_GUARD_ATTRIBUTION);
- `ToolError`: the base class the command line turns into one line and an exit code;
- `TOOL_DIRS`: the code whose change invalidates cached verdicts.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from guards.errors import GuardError as ToolError
from guards.history.records import GuardRun, Outcome, SiteInfo, SiteOutcome
from guards.sites import discover

__all__ = ["PROJECT_ROOT", "TOOL_DIRS", "ToolError", "TreeNotUsable", "discover_sites", "run_guards"]

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TOOL_DIRS = ("guards", "mutations")
GUARD_TIMEOUT_S = 900.0
LEAK_DETECTORS = ("exception retained", "owner pinned", "warning repeated", "message changed")
_MISSING_MODULE = re.compile(r"no module named '([^']+)'", re.IGNORECASE)
# Settings a caller's environment may carry that would point the guards somewhere else.
_INHERITED = (
    "WARNONCE_GUARD_VLLM_SRC",
    "WARNONCE_GUARD_SITES",
    "WARNONCE_GUARD_PLATFORM",
    "WARNONCE_GUARD_EXPECT_VLLM",
    "WARNONCE_GUARD_RUN_ID",
    "MUTANT_UNDER_TEST",
)


class TreeNotUsable(Exception):
    """Discovery cannot run on a tree (a file does not parse): the release is `not checked`."""


def discover_sites(tree: Path) -> tuple[SiteInfo, ...]:
    """Every kernel-import site under `tree/vllm`, cached or not."""
    try:
        sites = discover(tree)
    except ToolError as err:
        raise TreeNotUsable(str(err)) from None
    return tuple(
        SiteInfo(s.id, s.file, s.qualname, s.kernel_module, s.line, s.log_method, s.cached, s.form) for s in sites
    )


def run_guards(tree: Path, log: Path, timeout: float = GUARD_TIMEOUT_S) -> GuardRun:
    """`warnonce-guard guards --vllm-src TREE` in a subprocess (its output to `log`), one outcome per site."""
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=".attribution-", dir=log.parent) as attribution:
        env = {k: v for k, v in os.environ.items() if k not in _INHERITED}
        env["WARNONCE_GUARD_ATTRIBUTION"] = attribution
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
        options = ["--vllm-src", str(tree), "-q", "--tb=line", "-p", "no:cacheprovider"]
        command = [sys.executable, "-m", "mutations.cli", "guards", *options]
        with log.open("w", encoding="utf-8") as out:
            try:
                done = subprocess.run(
                    command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=log.parent, timeout=timeout, check=False
                )
            except subprocess.TimeoutExpired:
                error = f"the guards timed out after {timeout:.0f} s (log: {log})"
                return GuardRun(-1, (), error, time.monotonic() - started, timed_out=True)
        records = [
            json.loads(line)
            for path in sorted(Path(attribution).glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
    outcomes = _merge([_outcome(record) for record in records if record.get("site")])
    error = None if outcomes else _run_error(log, done.returncode)
    return GuardRun(done.returncode, outcomes, error, time.monotonic() - started)


def _outcome(record: dict[str, object]) -> SiteOutcome:
    detectors = tuple(str(d) for d in record.get("detectors") or ())
    message = str(record.get("message") or "")
    site = str(record["site"])
    if record.get("outcome") == "passed":
        return SiteOutcome(site, Outcome.PASSED)
    if detectors and all(d in LEAK_DETECTORS for d in detectors):
        return SiteOutcome(site, Outcome.LEAK, detectors, message)
    if detectors == ("unreached",):
        return SiteOutcome(site, Outcome.UNREACHED, detectors, message)
    missing = _MISSING_MODULE.search(message)
    return SiteOutcome(site, Outcome.ERROR, detectors, message, missing.group(1) if missing else None)


_RANK = {Outcome.PASSED: 0, Outcome.LEAK: 1, Outcome.UNREACHED: 2, Outcome.ERROR: 3, Outcome.MISSING: 4}


def _merge(outcomes: list[SiteOutcome]) -> tuple[SiteOutcome, ...]:
    """One outcome per site (a test can report its call and then a failing teardown): the worst wins."""
    by_site: dict[str, SiteOutcome] = {}
    for outcome in outcomes:
        known = by_site.get(outcome.site_id)
        if known is None or _RANK[outcome.outcome] > _RANK[known.outcome]:
            by_site[outcome.site_id] = outcome
    return tuple(by_site.values())


def _run_error(log: Path, code: int) -> str:
    """Why a guard run left no record: pytest's usage error or our one-line error, else the exit code."""
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines() if log.is_file() else []
    for line in lines:
        for prefix in ("ERROR: warnonce-guard: ", "warnonce-guard: error: ", "ERROR: "):
            if line.startswith(prefix):
                return line[len(prefix) :].strip()
    return f"the guards exited {code} without a result (log: {log})"
