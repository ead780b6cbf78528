"""vLLM's stock cache beside the target's (`guards.stock_cache`), and the guards' `neutralized` outcome: on a target
whose cache renders first, a site that passes a live exception passes its guard, and the same drive with the stock
cache leaks."""

from __future__ import annotations

import functools
import gc
import importlib
import logging
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
from warnonce_guard.guards import detectors
from warnonce_guard.guards.conftest import guard_record
from warnonce_guard.guards.drive import drive
from warnonce_guard.guards.outcome import NEUTRALIZED, LeakDetected, check_site
from warnonce_guard.guards.sessions import GuardRecord, RecordKind
from warnonce_guard.guards.stock_cache import StockOnce, logger_module_of, renders_first
from warnonce_guard.rule.site_row import Site
from warnonce_guard.rule.sites import discover

from tests.toy import EAGER_CALL, FIXED_LOGGER_SOURCE, LOGGER_SOURCE, PLATFORM_SOURCE, purge, unique_package, write_toy

LIVE = 'logger.warning_once("Failed to import from PKG._C: %r", e)'
LEAKS = (detectors.EXCEPTION_RETAINED, detectors.OWNER_PINNED, detectors.WARNING_REPEATED)

Toy = Callable[[str, str], tuple[str, Site, ModuleType]]


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Toy]:
    """A toy package with one site logging `call`, and its logger module `logger`: (package, site, logger module)."""
    packages: list[str] = []
    monkeypatch.syspath_prepend(str(tmp_path))

    def make(logger: str, call: str) -> tuple[str, Site, ModuleType]:
        package = unique_package()
        packages.append(package)
        write_toy(tmp_path, package, {"interface": PLATFORM_SOURCE.replace("CALL", call)}, logger=logger)
        importlib.invalidate_caches()
        (site,) = discover(tmp_path, package=package)
        return package, site, importlib.import_module(f"{package}.logger")

    yield make
    for package in packages:
        purge(package)


def test_a_logger_that_keeps_its_arguments_does_not_render_first_and_a_fixed_one_does(toy: Toy) -> None:
    _, _, stock = toy(LOGGER_SOURCE, EAGER_CALL)
    _, _, fixed = toy(FIXED_LOGGER_SOURCE, EAGER_CALL)

    assert not renders_first(stock)
    assert renders_first(fixed)
    assert not renders_first(None)
    assert not renders_first(logging)  # no init_logger


def test_a_module_is_probed_once_until_its_caches_are_replaced(toy: Toy, monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, stock = toy(LOGGER_SOURCE, EAGER_CALL)
    asked, init = [], stock.init_logger
    monkeypatch.setattr(stock, "init_logger", lambda name: asked.append(name) or init(name))

    assert [renders_first(stock), renders_first(stock)] == [False, False]
    assert len(asked) == 1  # the mutation run's workers inherit the answer: a guard that passes probes nothing
    monkeypatch.setattr(stock, "_print_warning_once", functools.lru_cache(stock._print_warning_once.__wrapped__))
    assert not renders_first(stock)
    assert len(asked) == 2


def test_the_probe_leaves_the_probe_logger_as_it_found_it(toy: Toy) -> None:
    _, _, fixed = toy(FIXED_LOGGER_SOURCE, EAGER_CALL)
    probe = fixed.init_logger("warnonce_guard.cache_probe")
    before = (list(probe.handlers), probe.propagate, probe.level)

    renders_first(fixed)

    assert (probe.handlers, probe.propagate, probe.level) == before


def test_the_module_of_a_loggers_once_methods_is_found(toy: Toy) -> None:
    _, _, fixed = toy(FIXED_LOGGER_SOURCE, EAGER_CALL)

    assert logger_module_of(fixed.init_logger("x")) is fixed
    assert logger_module_of(logging.getLogger("plain")) is None


class Live(Exception):
    pass


def test_the_stock_cache_keeps_its_arguments_until_cleared() -> None:
    stock, logger, kept = StockOnce(), logging.getLogger("stock-cache-test"), []
    handler = logging.Handler()
    handler.emit = lambda r: kept.append((r.levelno, r.getMessage()))  # type: ignore[method-assign]
    logger.handlers, logger.propagate = [handler], False
    errors = [Live("x"), Live("x")]
    refs = [weakref.ref(e) for e in errors]
    for error in errors:
        stock.method(logger, "warning_once")("failed: %r", error, scope="local")
    del errors, error
    gc.collect()

    assert [ref() is not None for ref in refs] == [True, True]
    assert kept == [(logging.WARNING, "failed: Live('x')")] * 2  # a new key each time: logged again
    stock.clear()
    gc.collect()
    assert [ref() for ref in refs] == [None, None]
    kept.clear()
    stock.method(logger, "error_once")("%s", "same")
    stock.method(logger, "error_once")("%s", "same")
    assert kept == [(logging.ERROR, "same")]
    logger.handlers = []


def test_a_live_site_on_a_fixed_cache_passes_and_the_stock_cache_shows_it_leaks(toy: Toy) -> None:
    package, site, _ = toy(FIXED_LOGGER_SOURCE, LIVE)

    assert detectors.detections(drive(site, package=package)) == []
    stock = drive(site, package=package, stock_cache=True)
    assert {d.detector for d in detectors.detections(stock)} == set(LEAKS)
    assert check_site(site, package=package) == LEAKS


def test_an_eager_site_on_a_fixed_cache_is_not_neutralized(toy: Toy) -> None:
    package, site, _ = toy(FIXED_LOGGER_SOURCE, EAGER_CALL)

    assert check_site(site, package=package) == ()


def test_on_vllms_own_cache_a_live_site_still_leaks_and_an_eager_one_passes_plainly(toy: Toy) -> None:
    package, live, _ = toy(LOGGER_SOURCE, LIVE)
    other, eager, _ = toy(LOGGER_SOURCE, EAGER_CALL)

    with pytest.raises(LeakDetected):
        check_site(live, package=package)
    assert check_site(eager, package=other) == ()


class Item:
    """What `guard_record` reads of a pytest item."""

    def __init__(self, found: tuple[str, ...]) -> None:
        self.nodeid = "guard_tests/test_kernel_import_sites.py::test_site[a]"
        self.callspec = None
        self.stash = pytest.Stash()
        if found:
            self.stash[NEUTRALIZED] = found


def test_a_neutralized_guard_is_recorded_as_such_and_is_not_a_failure() -> None:
    record = guard_record(Item(LEAKS), "call", None)  # type: ignore[arg-type]

    assert record.kind is RecordKind.NEUTRALIZED
    assert record.detectors == LEAKS
    assert "with vLLM's stock cache the same drive leaked: exception retained" in record.message
    assert not record.failed
    assert GuardRecord.from_json(record.__dict__ | {"kind": "neutralized", "detectors": list(LEAKS)}) == record
    assert guard_record(Item(()), "call", None).kind is RecordKind.PASSED  # type: ignore[arg-type]
