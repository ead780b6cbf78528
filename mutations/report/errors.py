"""The errors the report writers raise; each is one line naming the problem and the fix."""

from __future__ import annotations

from guards.errors import GuardError


class ViewerMissing(GuardError):
    """The mutation-testing-elements bundle the HTML report inlines is not installed."""

    exit_code = 7


class NpmInstallFailed(GuardError):
    """`npm ci` of the pinned report packages failed, or npm is not on PATH."""

    exit_code = 8


class SourceMissing(GuardError):
    """A site's file has no source text in the run result, so the report cannot show its mutants."""

    exit_code = 9
