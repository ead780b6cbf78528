"""The errors the report writers raise; each is one line naming the problem and the fix."""

from __future__ import annotations

from warnonce_guard.common.errors import ExitCode, GuardError


class ViewerMissing(GuardError):
    """The mutation-testing-elements bundle the HTML report inlines is not installed."""

    exit_code = ExitCode.VIEWER_MISSING


class NpmInstallFailed(GuardError):
    """`npm ci` of the pinned report packages failed, or npm is not on PATH."""

    exit_code = ExitCode.NPM_FAILED


class SourceMissing(RuntimeError):
    """A site's file has no source text in the run result: a bug of this tool (an invariant it broke), not bad input."""
