"""The exit-code table and the few specific errors deep code raises; the CLI turns each into one line.

Few codes, in pytest's spirit: a CI script branches on passed / the check failed / called wrong / bad input /
the environment or engine / nothing to check / a bug / a signal, and the one-line message says the rest. Each
`GuardError` subclass names its row; the CLI prints `warnonce-guard: error: <message>` and exits with it.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """What the exit status of `warnonce-guard` means (one value per kind of outcome), each with its meaning."""

    meaning: str  # a few words, for `--help` and the reference page

    def __new__(cls, value: int, meaning: str) -> ExitCode:
        member = int.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        return member

    OK = 0, "the check ran and passed"
    CHECK_FAILED = (
        1,
        (
            "the check ran and failed: a score below --fail-under, an exposed or unreached site, a flaky test, a "
            "failed guard, a new audit finding, a release not checked, an exported test or patch out of date, an "
            "expected site not found"
        ),
    )
    USAGE = 2, "the command line is wrong: an unknown option, an empty or out-of-range value"
    BAD_INPUT = (
        3,
        (
            "the input is wrong: the target, --platform, --tests, a path option (never replaced: it is not ours), a "
            "baseline, a source file or a cache entry of the settings"
        ),
    )
    ENVIRONMENT = (
        4,
        (
            "the environment or the engine failed: a module that fails to import, a busy or full work directory, "
            "mutmut, a missing extra or viewer, the report's disk, the package index; or the target changed mid-run"
        ),
    )
    NOTHING_TO_CHECK = 5, "nothing was checked: no *_once kernel-import site, no mutant, no test, no release"
    INTERNAL_ERROR = 70, "a bug in warnonce-guard (traceback printed)"
    INTERRUPTED = 130, "interrupted: Ctrl-C (130) or SIGTERM (143); finished verdicts are kept"
    TERMINATED = 143, "terminated (SIGTERM)"


# One row of the table for the signals: 130 and 143 mean one thing to a CI script (the run was stopped).
_SIGNAL_ROWS = (ExitCode.INTERRUPTED, ExitCode.TERMINATED)


def exit_code_rows() -> list[tuple[str, str]]:
    """The table's rows (code, meaning), the two signals as one row: `--help` and the reference page read them."""
    rows = [(str(code.value), code.meaning) for code in ExitCode if code not in _SIGNAL_ROWS]
    rows.append(("/".join(str(code.value) for code in _SIGNAL_ROWS), ExitCode.INTERRUPTED.meaning))
    return rows


def exit_code_table() -> str:
    """The table for `warnonce-guard --help`: one line per meaning."""
    return "\n".join(f"  {code:>7}  {meaning}" for code, meaning in exit_code_rows())


class GuardError(Exception):
    """Base class: a problem with the input, reported as one line naming the problem and the fix.

    Abstract: every concrete error names its own row of `ExitCode` (`class X(GuardError, exit_code=...)`); a
    subclass of one shares its row.
    """

    exit_code: ExitCode

    def __init_subclass__(cls, exit_code: ExitCode | None = None, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if exit_code is not None:
            cls.exit_code = exit_code


class UsageError(GuardError, exit_code=ExitCode.USAGE):
    """An option's value is not acceptable (caught before any work)."""


class TargetNotFound(GuardError, exit_code=ExitCode.BAD_INPUT):
    """The vLLM to check is not there (not installed, or the path does not exist)."""


class NoPythonFiles(TargetNotFound):
    """A path given to the audit is missing, or holds no Python file."""


class NotAVllmTree(GuardError, exit_code=ExitCode.BAD_INPUT):
    """A path was given but it holds no `vllm` package."""


class SourceDoesNotParse(GuardError, exit_code=ExitCode.BAD_INPUT):
    """A file of the target cannot be read (permissions, not Python's text encoding), or a Python file of it
    does not parse; names the file (and the line)."""


class LoggerNotPatchable(GuardError, exit_code=ExitCode.BAD_INPUT):
    """`export-fix`: the logger module's `*_once` caches are not shaped as vLLM's (the message says which part)."""


class PlatformNotFound(GuardError, exit_code=ExitCode.BAD_INPUT):
    """`--platform` cannot be imported, or is not a platform class."""


class PlatformImportFailed(GuardError, exit_code=ExitCode.ENVIRONMENT):
    """A platform module failed to import for a reason other than a blocked kernel, or it (a plugin's `register()`,
    the target) would end the process while imported (`SystemExit`, a KeyboardInterrupt of its own)."""


class NothingToCheck(GuardError, exit_code=ExitCode.NOTHING_TO_CHECK):
    """Discovery found no site (or the run made no mutant): a failure, never a vacuous pass."""


class PathRefused(GuardError, exit_code=ExitCode.BAD_INPUT):
    """An output path holds something this tool did not create (or is the target, or the work directory)."""


class PathUnusable(GuardError, exit_code=ExitCode.BAD_INPUT):
    """An input or output path is missing, of the wrong kind, or not writable (another user's files in the work
    directory, an immutable or append-only directory included); or a target under a path torch cannot import."""


class WorkDirBusy(GuardError, exit_code=ExitCode.ENVIRONMENT):
    """Another run holds the work directory's lock, or the report directory's (`--out`)."""


class StagingFailed(GuardError, exit_code=ExitCode.ENVIRONMENT):
    """The work directory cannot be written: staging the target, repairing or keeping a run's state, or
    history's: its disk is full, read-only or over quota (a permission refused is `PathUnusable`)."""


class RecordsUnwritten(StagingFailed):
    """A guard session finished but could not write its record (the attribution folder refused it)."""


class TargetChanged(GuardError, exit_code=ExitCode.ENVIRONMENT):
    """The target's files changed while the run tested them (an edit or an upgrade during the run)."""


class IndexUnavailable(GuardError, exit_code=ExitCode.ENVIRONMENT):
    """history: the package index cannot be read or parsed."""


class NoRelease(GuardError, exit_code=ExitCode.NOTHING_TO_CHECK):
    """history: the selected range names no release on the index."""


class EngineFailed(GuardError, exit_code=ExitCode.ENVIRONMENT):
    """The mutation engine (mutmut) is missing, another version, moved its internals, or died."""


class SeamMismatch(EngineFailed):
    """mutmut is not the version whose internals the operator seam was written against."""


class SessionLost(EngineFailed):
    """The session's process group used no CPU for longer than any healthy wait."""


class MutantsUnaccounted(GuardError, exit_code=ExitCode.ENVIRONMENT):
    """mutmut's mutants and ours differ (a mutant only one side knows)."""


class ViewerMissing(GuardError, exit_code=ExitCode.ENVIRONMENT):
    """The mutation-testing-elements bundle the HTML report inlines is not installed."""


class ReportFailed(GuardError, exit_code=ExitCode.ENVIRONMENT):
    """The report cannot be written where --out points."""


class BadBaseline(GuardError, exit_code=ExitCode.BAD_INPUT):
    """The audit's baseline file is missing, unreadable, not JSON or not a baseline; or it cannot be written."""


class BadCacheSettings(GuardError, exit_code=ExitCode.BAD_INPUT):
    """A `[[tool.warnonce-guard.cache]]` entry that cannot be a row: the message names the entry and its key."""


class BadSitesRecord(GuardError, exit_code=ExitCode.BAD_INPUT):
    """An --expect-sites file is not JSON, not a sites record, or of another version."""


class ExpectedSitesMissing(GuardError, exit_code=ExitCode.CHECK_FAILED):
    """A site --expect-sites records was not found: its guard would have vanished without a word."""


class NpmInstallFailed(GuardError, exit_code=ExitCode.ENVIRONMENT):
    """`npm ci` of the pinned report packages failed, or npm is not on PATH."""


class NotInstalled(GuardError, exit_code=ExitCode.ENVIRONMENT):
    """A command needs a package of the mutation extra that is not installed."""


class BadRecord(ValueError):
    """A JSON record a run wrote and reads back (mutmut's state, the generation manifest, the named mutants, the
    sites, the attempts ledger) does not validate; the message says why. Its reader treats it as absent or stale,
    or turns it into one of the errors above: never a user-facing error itself."""


class SourceMissing(RuntimeError):
    """A site's file has no source text in the run result: a bug of this tool (an invariant it broke), not bad input."""


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM reached the run; `exit_code` says which (raised by the CLI's signal handlers).

    A KeyboardInterrupt, so code that stops cleanly on Ctrl-C (pytest, concurrent.futures) does so on
    SIGTERM too. `detail` is what the interrupted command wants said about what it leaves behind.
    """

    def __init__(self, exit_code: ExitCode, detail: str = "") -> None:
        super().__init__(exit_code.name.lower())
        self.exit_code = exit_code
        self.detail = detail
