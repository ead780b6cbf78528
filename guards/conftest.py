"""pytest wiring for the guards: which vLLM, one test per discovered site, and killed-by attribution.

Settings come from options or, in the sessions a run starts, from the environment (`common.protocol`); in those
sessions the guards of the mutated function's sites run first (docs/ARCHITECTURE.md, The mutation run).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from warnonce_guard.common import protocol
from warnonce_guard.common.errors import GuardError, NothingToCheck, TargetNotFound, UsageError
from warnonce_guard.guards.outcome import DRIVE_AGAIN, NEUTRALIZED, GuardFailure
from warnonce_guard.guards.sessions import (
    AGAIN,
    UNWRITTEN_STATUS,
    GuardRecord,
    Phase,
    RecordKind,
    ran_out_of_time,
    record_finished,
    session_phase,
)
from warnonce_guard.rule.platforms import platform_sites, resolve_platform
from warnonce_guard.rule.site_row import NO_SITE, Site
from warnonce_guard.rule.sites import discover
from warnonce_guard.rule.target import (
    Target,
    activate,
    check_importable,
    check_imported_from,
    check_loaded,
    resolve_target,
)

_TARGET = pytest.StashKey[Target]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("warnonce-guard")
    told = protocol.settings()
    group.addoption("--vllm-src", default=told.vllm_src, help="vLLM tree to guard")
    group.addoption("--sites-file", default=told.sites, help="sites JSON to guard")
    group.addoption(
        "--platform",
        default=told.platform,
        help="guard the sites this platform class runs (module:Class), called through it",
    )


_SITES = pytest.StashKey[list[Site]]()


def pytest_configure(config: pytest.Config) -> None:
    """Resolve the target and its sites before collection; bad input is a one-line usage error."""
    told = protocol.settings()
    try:
        refuse_blank(config.getoption)
        target = resolve_target(config.getoption("vllm_src"))
        check_importable(target)
        activate(target)
        check_loaded(target)
        if told.expect_vllm and target.package_dir.resolve() != Path(told.expect_vllm).resolve():
            raise TargetNotFound(f"the guards would import {target.package_dir}, not the target {told.expect_vllm}")
        config.stash[_TARGET] = target
        config.stash[_SITES] = guarded_sites(config)
        if told.mutated:  # the engine's sessions: every site module comes from the workspace's copy
            check_imported_from({site.module for site in config.stash[_SITES]}, Path(told.mutated), "the workspace's")
    except GuardError as err:
        raise pytest.UsageError(f"warnonce-guard: {err}") from None


OPTIONS = ("vllm_src", "platform", "sites_file")


def refuse_blank(getoption: Callable[[str], str | None]) -> None:
    """`UsageError` for an option given empty (`--vllm-src="$UNSET"` in CI): never the installed vLLM, or every
    site, in its place."""
    for name in OPTIONS:
        value = getoption(name)
        if value is not None and not value.strip():
            option = f"--{name.replace('_', '-')}"
            raise UsageError(f"{option}={value}: an empty value (is a variable unset?); give one, or leave it out")


@functools.lru_cache(maxsize=4)
def _sites_from_file(path: str, mtime_ns: int) -> tuple[Site, ...]:
    """Sites read once per file version: mutmut forks a worker per mutant, each starting a pytest session."""
    return tuple(Site.from_json(d) for d in json.loads(Path(path).read_text(encoding="utf-8")))


def guarded_sites(config: pytest.Config) -> list[Site]:
    """The sites to guard (every guarded kernel import, whatever its handler writes): from the sites file when given,
    else discovered now."""
    sites_file = config.getoption("sites_file")
    platform = config.getoption("platform")
    if sites_file:
        sites = list(_sites_from_file(sites_file, Path(sites_file).stat().st_mtime_ns))
    elif platform:
        sites = platform_sites(resolve_platform(platform))
    else:
        sites = discover(config.stash[_TARGET].root)
    guarded = [site for site in sites if site.guarded]
    if not guarded:
        where = sites_file or config.stash[_TARGET].describe()
        raise NothingToCheck(f"{NO_SITE} in {where}; nothing to guard")
    return guarded


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "site" in metafunc.fixturenames:
        sites = metafunc.config.stash[_SITES]
        metafunc.parametrize("site", sites, ids=[site.test_id for site in sites])


@pytest.fixture(scope="session")
def guard_target(request: pytest.FixtureRequest) -> Target:
    target = request.config.stash[_TARGET]
    check_loaded(target)
    return target


def _site_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    site = callspec.params.get("site") if callspec is not None else None
    return site.id if isinstance(site, Site) else None


_RECORDS = pytest.StashKey[list[GuardRecord]]()


def guard_records(item: pytest.Item, phase: str, error: BaseException | None) -> list[GuardRecord]:
    """A guard's outcome in one phase, then what each drive after it found, as typed records (`guards.sessions`)."""
    again = error.again if isinstance(error, GuardFailure) else ()
    return [
        guard_record(item, phase, error),
        *(GuardRecord(item.nodeid, _site_of(item), AGAIN, kind) for kind in again),
    ]


def guard_record(item: pytest.Item, phase: str, error: BaseException | None) -> GuardRecord:
    """A guard's outcome in one phase as a typed record (`guards.sessions`)."""
    if error is None and (found := item.stash.get(NEUTRALIZED, ())):
        return GuardRecord(item.nodeid, _site_of(item), phase, RecordKind.NEUTRALIZED, found, neutralized_line(found))
    if error is None:
        return GuardRecord(item.nodeid, _site_of(item), phase, RecordKind.PASSED)
    kind = error.kind if isinstance(error, GuardFailure) else RecordKind.ERROR
    kind = RecordKind.TIMEOUT if ran_out_of_time(error) else kind
    detectors = error.detectors if isinstance(error, GuardFailure) else ()
    message = (str(error).splitlines() or [type(error).__name__])[0]
    if kind is RecordKind.ERROR:
        message = f"{type(error).__name__}: {message}"
    return GuardRecord(item.nodeid, _site_of(item), phase, kind, tuple(detectors), message)


def neutralized_line(detectors: tuple[str, ...]) -> str:
    """What a neutralized guard's record says, in one line."""
    return (
        "passes on the target's *_once cache, which renders first; with vLLM's stock cache the same drive leaked: "
        + ", ".join(detectors)
    )


_NEUTRALIZED_SEEN = pytest.StashKey[dict[str, tuple[str, ...]]]()  # node id -> what the stock cache leaked


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Name each guard that passed only because its logger's cache renders first."""
    found = terminalreporter.config.stash.get(_NEUTRALIZED_SEEN, {})
    if found:
        terminalreporter.write_sep("-", f"{len(found)} passed by the logger's cache (neutralized)")
        for node_id, detectors in found.items():
            terminalreporter.write_line(f"{node_id}: {neutralized_line(detectors)}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    report = yield
    if report.when == "call" and report.passed and (found := item.stash.get(NEUTRALIZED, ())):
        item.config.stash.setdefault(_NEUTRALIZED_SEEN, {})[item.nodeid] = found
    if protocol.settings().attribution and (report.failed or report.when == "call"):
        error = call.excinfo.value if call.excinfo is not None else None
        item.config.stash.setdefault(_RECORDS, []).extend(guard_records(item, report.when, error))
    return report


_OWN = pytest.StashKey[frozenset[str]]()


def mutated_function_sites() -> frozenset[str] | None:
    """In a mutant's session, the ids of the sites in the mutated function (None in any other session)."""
    told = protocol.settings()
    if session_phase(told) is not Phase.MUTANT:
        return None
    return frozenset(told.function_sites().get(told.mutant.partition(told.mutant_mark)[0], ()))


def guard_order(site: str | None, nodeid: str, own: frozenset[str]) -> tuple[bool, str]:
    """Where a guard runs in an engine's session: the mutated function's sites first, then by node id."""
    return (site not in own, nodeid)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In the engine's sessions, one fixed order, whatever order the engine asked for (mutmut's is by duration); in
    a mutant's, what its guards need known first. Each session's own: the engine runs a mutant's guards in a session
    collected once, calling this again on their selection (`mutations.engine.collected`)."""
    told = protocol.settings()
    if not told.attribution:
        return
    own = mutated_function_sites()
    if own is not None:
        config.stash[_OWN] = own
        config.stash[DRIVE_AGAIN] = told.confirm  # a guard that kills the mutant drives its site again
        config.option.maxfail = 0  # the stop at the first failure waits until the function's guards ran
    items.sort(key=lambda item: guard_order(_site_of(item), item.nodeid, own or frozenset()))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """In a mutant's session: once a guard failed, stop after the last guard of the mutated function's sites."""
    result = yield
    own = item.config.stash.get(_OWN, None)
    if own is not None and item.session.testsfailed and (nextitem is None or _site_of(nextitem) not in own):
        item.session.shouldfail = "stopping after the mutated function's guards"
    return result


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Write the session's records, whole, when every guard ran; a session cut short writes nothing."""
    if not record_finished(protocol.settings(), int(exitstatus), session.config.stash.get(_RECORDS, [])):
        session.exitstatus = UNWRITTEN_STATUS  # the engine must not take this session's exit status for a verdict
