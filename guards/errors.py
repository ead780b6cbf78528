"""The few specific errors deep code raises; the CLI turns each into one line and an exit code."""

from __future__ import annotations


class GuardError(Exception):
    """Base class: a problem with the input, reported as one line naming the problem and the fix."""

    exit_code = 2


class TargetNotFound(GuardError):
    """The vLLM to check is not there (not installed, or the path does not exist)."""

    exit_code = 3


class NotAVllmTree(GuardError):
    """A path was given but it holds no `vllm` package."""

    exit_code = 3


class SourceDoesNotParse(GuardError):
    """A Python file of the target does not parse; names file and line."""

    exit_code = 4


class PlatformImportFailed(GuardError):
    """A platform module failed to import for a reason other than a blocked kernel."""

    exit_code = 5


class NothingToCheck(GuardError):
    """Discovery found no site (or the run made no mutant): a failure, never a vacuous pass."""

    exit_code = 6
