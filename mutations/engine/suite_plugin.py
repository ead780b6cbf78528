"""The pytest plugin of a suite's sessions (`mutate --tests`): what each test did, for the verdicts.

mutmut loads it (`-p`) into every pytest session it starts for the suite (docs/reference.md, Scoring a suite).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from warnonce_guard.common import protocol
from warnonce_guard.common.errors import BadRecord
from warnonce_guard.common.files import write_atomic
from warnonce_guard.guards.sessions import UNWRITTEN_STATUS, GuardRecord, RecordKind, ran_out_of_time, record_finished
from warnonce_guard.mutations.engine import running
from warnonce_guard.mutations.engine.seam import STATS_PHASE, mutmut_hits
from warnonce_guard.mutations.suite import SuiteBaseline, read_baseline

_TOLD = pytest.StashKey[protocol.Settings]()
_RECORDS = pytest.StashKey[list[GuardRecord]]()
_FAILED = pytest.StashKey[set[str]]()  # node ids of this session's tests that failed in setup or call
_OUTSIDE = pytest.StashKey[set[str]]()  # mutated functions that ran outside any test
_REACHING = pytest.StashKey[set[str]]()  # tests of the stats session that failed and reached a mutated function


def _stats_session(config: pytest.Config) -> bool:
    return config.stash[_TOLD].mutant == STATS_PHASE


def _clean_session(config: pytest.Config) -> bool:
    """mutmut's run of the tests on the unmutated code after its stats session (not a re-run of `engine.confirm`)."""
    told = config.stash[_TOLD]
    return told.mutant == "" and "" in told.baseline_phases and not told.record_to


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_TOLD] = told = protocol.settings()  # read once: a test may clear os.environ
    config.stash[_RECORDS], config.stash[_FAILED], config.stash[_OUTSIDE] = [], set(), set()
    config.stash[_REACHING] = set()
    if told.mutant == STATS_PHASE:
        config.option.maxfail = 0  # every test runs once on the unmutated code


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """After the stats session, the tests that fail on the unmutated code (or failed there once) are left out, but
    where `engine.confirm` re-runs one of them on purpose."""
    told = config.stash[_TOLD]
    if _stats_session(config) or not told.suite_baseline or told.record_to:
        return
    try:
        failing = read_baseline(Path(told.suite_baseline)).left_out
    except BadRecord:
        return  # the stats session did not finish (its workspace is discarded before the next run)
    left_out = [item for item in items if item.nodeid in failing]
    if left_out:
        items[:] = [item for item in items if item.nodeid not in failing]
        config.hook.pytest_deselected(items=left_out)


def _running_on(told: protocol.Settings) -> str:
    """What this session runs, as `engine.running` names it: a mutant, or "" for mutmut's runs of the unmutated code."""
    return "" if told.mutant in told.baseline_phases else told.mutant


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Say which test this session runs now (`engine.running`): a session that hangs is named by it."""
    told = item.config.stash[_TOLD]
    if told.attribution:
        running.starting(Path(told.attribution), _running_on(told), item.nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """In the stats session: what ran since the last test's teardown (the suite's collection) is no test's."""
    if _stats_session(item.config):
        item.config.stash[_OUTSIDE] |= mutmut_hits(clear=True)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed or report.when == "call":
        kind, message = RecordKind.PASSED, ""
        if report.failed:
            error = call.excinfo.value if call.excinfo is not None else None
            kind = RecordKind.TIMEOUT if ran_out_of_time(error) else RecordKind.FAILED
            message = _first_line(call)
            if report.when != "teardown":
                item.config.stash[_FAILED].add(item.nodeid)
        item.config.stash[_RECORDS].append(GuardRecord(item.nodeid, None, report.when, kind, (), message))
    return report


def _first_line(call: pytest.CallInfo[None]) -> str:
    error = call.excinfo.value if call.excinfo is not None else None
    if error is None:
        return "failed"
    return f"{type(error).__name__}: {(str(error).splitlines() or [''])[0]}".rstrip(": ")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """In the stats session, a test that failed reaches nothing: mutmut never runs it for a mutant."""
    if _stats_session(item.config) and item.nodeid in item.config.stash[_FAILED] and mutmut_hits(clear=True):
        item.config.stash[_REACHING].add(item.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    told = config.stash[_TOLD]
    if config.option.collectonly:  # a collection alone (mutmut's listing, engine.pristine's): no test ran
        return
    if told.attribution and exitstatus != pytest.ExitCode.INTERRUPTED:  # a test that interrupted its session
        running.ended(Path(told.attribution), _running_on(told))  # (KeyboardInterrupt, pytest.exit) stays named
    if not record_finished(told, int(exitstatus), config.stash[_RECORDS]):
        session.exitstatus = UNWRITTEN_STATUS
        return
    if _stats_session(config) and told.suite_baseline and not _baseline_written(session, int(exitstatus), told):
        session.exitstatus = UNWRITTEN_STATUS
    elif _clean_session(config) and told.suite_baseline and int(exitstatus) == 1:
        _flaky_written(session, told)


def _baseline_written(session: pytest.Session, status: int, told: protocol.Settings) -> bool:
    """Write the suite's baseline (whatever the status: the run reads why it stopped); a session whose only
    failures are now recorded ends as passed, so that mutmut goes on to the mutants. False when it cannot be
    written."""
    config, path = session.config, Path(told.suite_baseline or "")
    failures = {r.test: r.message for r in config.stash[_RECORDS] if r.failed}
    try:  # mutmut's stats on new tests only (a resumed run): what the first one found stands too
        earlier = read_baseline(path)
    except BadRecord:
        earlier = SuiteBaseline(status, 0)
    baseline = replace(
        earlier,
        status=status,
        collected=earlier.collected + len(session.items),
        failures=earlier.failures | failures,
        outside=earlier.outside | config.stash[_OUTSIDE],
        reaching=earlier.reaching | config.stash[_REACHING],
    )
    try:
        write_atomic(path, json.dumps(baseline.to_json(), indent=1))
    except OSError:
        return False
    if status == 1:
        session.exitstatus = 0  # the failures are recorded, and left out from here on
    return True


def _flaky_written(session: pytest.Session, told: protocol.Settings) -> None:
    """mutmut's clean run failed a test that passed in the stats session on the same code: it is flaky. It is
    recorded as such (left out of every later session, never credited with a kill) and the session ends as passed,
    so that mutmut goes on to the mutants; a baseline that cannot be read or written leaves the failure as it is."""
    path = Path(told.suite_baseline or "")
    failed = {r.test: r.message for r in session.config.stash[_RECORDS] if r.failed}
    try:
        baseline = read_baseline(path)
        flaky = {test: f"passed on the unmutated code, then failed there ({why})" for test, why in failed.items()}
        write_atomic(path, json.dumps(replace(baseline, flaky=baseline.flaky | flaky).to_json(), indent=1))
    except (BadRecord, OSError):
        return
    session.exitstatus = 0
