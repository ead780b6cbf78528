"""The guards against a release's tree: `warnonce-guard guards` in a fresh interpreter that dies with the sweep,
read back from the finished guard sessions it records (`guards.sessions`), as for a mutation run's baseline."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from warnonce_guard.common import protocol
from warnonce_guard.common.errors import ExitCode
from warnonce_guard.common.files import scratch
from warnonce_guard.common.processes import child_environment
from warnonce_guard.guards.sessions import GuardRecord, RecordKind, baseline_sessions
from warnonce_guard.history.records import GuardRun, SiteOutcome

GUARD_TIMEOUT_S = 900.0
RUN_ID = "history"
_MISSING_MODULE = re.compile(r"no module named '([^']+)'", re.IGNORECASE)
# of a site's records, best first (a guard that passed by its logger's cache alone: NEUTRALIZED)
_WORST_LAST = (RecordKind.PASSED, RecordKind.NEUTRALIZED, RecordKind.LEAK, RecordKind.UNREACHED, RecordKind.ERROR)
_MUTMUTS_VARIABLE = "MUTANT_UNDER_TEST"  # a caller's (a sweep run under mutmut) is not passed on either
# A guard run stopped from outside (its exit codes for Ctrl-C and SIGTERM, or killed: the OOM killer's SIGKILL),
# which a rerun may finish; a crash (SIGSEGV, SIGABRT) is the release's or the environment's, and stays.
_STOPPED = (ExitCode.INTERRUPTED, ExitCode.TERMINATED)
_STOPPING_SIGNALS = frozenset({signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
# `warnonce-guard guards ARGS` in an interpreter that dies with the sweep, even on SIGKILL (mutations.processes).
_BOUND_CLI = (
    "import sys; from warnonce_guard.common.processes import bind_to_parent; bind_to_parent(); "
    "from warnonce_guard.cli.main import main; sys.exit(main(sys.argv[1:]))"
)


def run_guards(tree: Path, log: Path, timeout: float = GUARD_TIMEOUT_S) -> GuardRun:
    """`warnonce-guard guards --vllm-src TREE` in a subprocess (its output to `log`), one outcome per site."""
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with scratch(log.parent / "attribution") as attribution:  # a guard run's records, beside its log
        env = {name: value for name, value in os.environ.items() if name != _MUTMUTS_VARIABLE}
        # Recorded as runs on unmutated code: the mutant's name is read from a variable never set (so it is ""),
        # and "" is a baseline value; whatever else the caller's environment says of the guards goes.
        protocol.tell_guards(
            env,
            attribution=str(attribution),
            run_id=RUN_ID,
            mutant_variable=protocol.HISTORY_MUTANT,
            baseline_phases=("",),
            mutant_mark="",
        )
        env = child_environment(env)
        options = ["--vllm-src", str(tree), "-q", "--tb=line", "-p", "no:cacheprovider"]
        command = [sys.executable, "-c", _BOUND_CLI, "guards", *options]
        with log.open("w", encoding="utf-8") as out:
            try:
                done = subprocess.run(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=log.parent,
                    timeout=timeout,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                error = f"the guards timed out after {timeout:.0f} s (log: {log})"
                return GuardRun(-1, (), error, time.monotonic() - started, timed_out=True)
        records = [r for s in baseline_sessions(attribution, RUN_ID) for r in s.records if r.site]
    outcomes = _merge([_outcome(record) for record in records])
    error = None if outcomes else _run_error(log, done.returncode)
    stopped = done.returncode in _STOPPED or -done.returncode in _STOPPING_SIGNALS
    return GuardRun(done.returncode, outcomes, error, time.monotonic() - started, stopped=stopped)


def _outcome(record: GuardRecord) -> SiteOutcome:
    missing = _MISSING_MODULE.search(record.message) if record.kind is RecordKind.ERROR else None
    return SiteOutcome(
        str(record.site), record.kind, record.detectors, record.message, missing.group(1) if missing else None
    )


def _merge(outcomes: list[SiteOutcome]) -> tuple[SiteOutcome, ...]:
    """One outcome per site (a test can report its call and then a failing teardown): the worst wins."""
    by_site: dict[str, SiteOutcome] = {}
    for o in outcomes:  # on a tie the first stays
        by_site[o.site_id] = max(by_site.get(o.site_id, o), o, key=lambda x: _WORST_LAST.index(x.outcome))
    return tuple(by_site.values())


def _run_error(log: Path, code: int) -> str:
    """Why a guard run left no record: a signal, pytest's usage error or our one-line error, else the exit code."""
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else f"signal {-code}"
        if -code in _STOPPING_SIGNALS:
            return f"the guards were killed by {name} before they finished (log: {log}); rerun to retry"
        return f"the guards crashed ({name}) before they finished (log: {log})"
    if code in _STOPPED:
        return f"the guards were interrupted (exit {code}) before they finished (log: {log}); rerun to retry"
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines() if log.is_file() else []
    for line in lines:
        for prefix in ("ERROR: warnonce-guard: ", "warnonce-guard: error: ", "ERROR: "):
            if line.startswith(prefix):
                return line[len(prefix) :].strip()
    return f"the guards exited {code} without a result (log: {log})"
