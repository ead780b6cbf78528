"""The errors the history command raises, each with its exit code (one table, like pytest's ExitCode)."""

from __future__ import annotations

from enum import IntEnum

from guards.history.core import ToolError


class HistoryExit(IntEnum):
    """Exit codes of `warnonce-guard history` (20 and up: clear of the core's codes, to be merged into its table)."""

    OK = 0  # every release in range has a verdict (exposed, guarded or no sites)
    INCOMPLETE = 1  # the report was written, but some release is `not checked`
    INDEX_UNAVAILABLE = 20  # the package index could not be read or parsed
    NO_RELEASE = 21  # the range or --only selects no release on the index
    BAD_WORK_DIR = 22  # the work directory is unusable (inside site-packages, not writable)


class HistoryError(ToolError):
    """A problem with the input or the index: one line at the CLI, with its exit code."""

    exit_code = HistoryExit.INDEX_UNAVAILABLE


class IndexUnavailable(HistoryError):
    exit_code = HistoryExit.INDEX_UNAVAILABLE


class NoRelease(HistoryError):
    exit_code = HistoryExit.NO_RELEASE


class BadWorkDir(HistoryError):
    exit_code = HistoryExit.BAD_WORK_DIR


class FetchFailed(Exception):
    """One release could not be fetched (download, hash or archive): that release is `not checked`.

    Not a `HistoryError`: the sweep goes on, and the verdict is not cached (a rerun retries).
    """
