"""A guard's verdict on one site: pass, leak (with the detectors that fired) or unreached."""

from __future__ import annotations

import pytest
from warnonce_guard.guards.detectors import Detection, detections
from warnonce_guard.guards.drive import CannotDrive, drive
from warnonce_guard.guards.sessions import RecordKind
from warnonce_guard.rule.sites import Site
from warnonce_guard.rule.target import PACKAGE

# What the guards whose platform module did not import said (`PlatformImportFailed`), in their session's stash:
# the command line makes that run exit 4, the environment's failure, not a verdict on the sites.
UNIMPORTED = pytest.StashKey[list[str]]()


class GuardFailure(AssertionError):
    """Base of a guard's failure; `kind` and `detectors` say what happened, for the report's attribution."""

    kind: RecordKind = RecordKind.LEAK
    detectors: tuple[str, ...] = ()


class LeakDetected(GuardFailure):
    def __init__(self, site: Site, found: list[Detection]):
        self.detectors = tuple(f.detector for f in found)
        lines = [f"{site.id} (line {site.line}, {site.log_method}, {site.form}): {len(found)} detector(s) fired"]
        lines += [f"  - {finding}" for finding in found]
        super().__init__("\n".join(lines))


class SiteUnreached(GuardFailure):
    kind = RecordKind.UNREACHED

    def __init__(self, site: Site, reason: str):
        super().__init__(f"{site.id} (line {site.line}) unreached: {reason}")


def check_site(site: Site, package: str = PACKAGE) -> None:
    """Drive the site and raise `SiteUnreached` or `LeakDetected`; return quietly when it is clean."""
    try:
        obs = drive(site, package)
    except CannotDrive as err:
        raise SiteUnreached(site, str(err)) from None
    if not obs.reached:
        steered = ", ".join(f"{test} evaluated {n}x" for test, n in obs.steered.items()) or "no branch steered"
        raise SiteUnreached(
            site,
            f"no logging call from {site.function_name} while importing {site.kernel_module} was blocked "
            f"({obs.exceptions_raised} blocked import(s); {steered}); the branch steering did not lead to the site",
        )
    found = detections(obs)
    if found:
        raise LeakDetected(site, found)
