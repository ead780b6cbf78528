"""A guard's verdict on one site: pass, leak (with the detectors that fired) or unreached."""

from __future__ import annotations

import logging

import pytest
from warnonce_guard.guards.detectors import EXCEPTION_RETAINED, OWNER_PINNED, WARNING_REPEATED, Detection, detections
from warnonce_guard.guards.drive import CannotDrive, drive, import_platform_module
from warnonce_guard.guards.sessions import RecordKind
from warnonce_guard.guards.stock_cache import logger_module_of, renders_first
from warnonce_guard.rule.site_row import Site
from warnonce_guard.rule.target import PACKAGE

# What the guards whose platform module did not import said (`PlatformImportFailed`), in their session's stash:
# the command line makes that run exit 4, the environment's failure, not a verdict on the sites.
UNIMPORTED = pytest.StashKey[list[str]]()
# What a guard found neutralized (`neutralized`), in its test item's stash: its record says so (guards/conftest.py).
NEUTRALIZED = pytest.StashKey[tuple[str, ...]]()
# The detectors that say the cache kept something (or let the warning repeat); "message changed" is the site's text.
LEAKS = (EXCEPTION_RETAINED, OWNER_PINNED, WARNING_REPEATED)


# In a mutant's session of the mutation run: how many times a guard whose detectors fired drives its site again
# (`mutate --confirm`), in its session's stash.
DRIVE_AGAIN = pytest.StashKey[int]()


class GuardFailure(AssertionError):
    """Base of a guard's failure; `kind` and `detectors` say what happened, for the report's attribution; `again`,
    what each drive after it found (`drive_again`)."""

    kind: RecordKind = RecordKind.LEAK
    detectors: tuple[str, ...] = ()
    again: tuple[RecordKind, ...] = ()


class LeakDetected(GuardFailure):
    def __init__(self, site: Site, found: list[Detection]):
        self.detectors = tuple(f.detector for f in found)
        call = site.log_method or "call not recognised"
        lines = [f"{site.id} (line {site.line}, {call}, {site.form}): {len(found)} detector(s) fired"]
        lines += [f"  - {finding}" for finding in found]
        super().__init__("\n".join(lines))


class SiteUnreached(GuardFailure):
    kind = RecordKind.UNREACHED

    def __init__(self, site: Site, reason: str):
        super().__init__(f"{site.id} (line {site.line}) unreached: {reason}")


def check_site(site: Site, package: str = PACKAGE) -> tuple[str, ...]:
    """Drive the site and raise `SiteUnreached` or `LeakDetected`; when it is clean, what `neutralized` says."""
    try:
        obs = drive(site, package)
    except CannotDrive as err:
        raise SiteUnreached(site, str(err)) from None
    if not obs.reached:
        steered = ", ".join(f"{test} evaluated {n}x" for test, n in obs.steered.items()) or "no branch steered"
        raise SiteUnreached(
            site,
            f"{site.function_name} never imported {site.kernel_module} while it was blocked "
            f"({obs.exceptions_raised} blocked import(s); {steered}); the branch steering did not lead to the site",
        )
    found = detections(obs)
    if found:
        raise LeakDetected(site, found)
    return neutralized(site, package)


def drive_again(site: Site, rounds: int, package: str = PACKAGE) -> tuple[RecordKind, ...]:
    """What `rounds` more drives of a site whose guard failed find, each: a drive restores everything it touched,
    so each is the guard run again (the mutation run's confirmation of a kill, at the cost of a drive)."""
    found = []
    for _ in range(rounds):
        try:
            check_site(site, package)
            found.append(RecordKind.PASSED)
        except GuardFailure as failure:
            found.append(failure.kind)
    return tuple(found)


def neutralized(site: Site, package: str = PACKAGE) -> tuple[str, ...]:
    """For a site that passed: when its logger's cache renders first, the leak detectors that fire on the same drive
    with vLLM's stock cache (`guards.stock_cache`); none when the cache is the stock one or nothing would leak."""
    module = import_platform_module(site.module, package, site.package)
    loggers = [getattr(module, site.receiver, None)] if site.receiver.isidentifier() else []
    loggers += [obj for obj in vars(module).values() if isinstance(obj, logging.Logger)]
    if not any(renders_first(logger_module_of(logger)) for logger in dict.fromkeys(loggers)):
        return ()
    try:
        stock = drive(site, package, stock_cache=True)
    except CannotDrive:
        return ()
    return tuple(found.detector for found in detections(stock) if found.detector in LEAKS)
