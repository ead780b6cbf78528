"""The guards: one test per discovered kernel-import site (parametrised in conftest.py)."""

from __future__ import annotations

import pytest
from warnonce_guard.common.errors import PlatformImportFailed
from warnonce_guard.guards.outcome import (
    DRIVE_AGAIN,
    NEUTRALIZED,
    UNIMPORTED,
    LeakDetected,
    check_site,
    drive_again,
)
from warnonce_guard.rule.site_row import Site
from warnonce_guard.rule.target import Target


def test_site_releases_exception_and_warns_once(
    site: Site, guard_target: Target, request: pytest.FixtureRequest
) -> None:
    """Driven twice from an LLM stand-in: no exception or owner survives, one warning, text as fixed."""
    try:
        if found := check_site(site):  # the site leaks with vLLM's stock cache; the target's renders first
            request.node.stash[NEUTRALIZED] = found
    except PlatformImportFailed as err:  # the environment, not the site: say what to install, no traceback
        request.config.stash.setdefault(UNIMPORTED, []).append(str(err))
        pytest.fail(str(err), pytrace=False)
    except LeakDetected as leak:  # in a mutant's session, a kill: confirmed by driving the site again
        leak.again = drive_again(site, request.config.stash.get(DRIVE_AGAIN, 0))
        raise
