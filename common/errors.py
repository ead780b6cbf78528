"""The exit-code table and the few specific errors deep code raises; the CLI turns each into one line.

Every non-zero exit of `warnonce-guard` is one row of `ExitCode`: a run that checked and failed (1)
is never confused with bad input or an unusable environment (2-22), a bug of our own (70) or an
interrupt (130, 143). Each `GuardError` subclass names its row; the CLI prints
`warnonce-guard: error: <message>` and exits with it.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """What the exit status of `warnonce-guard` means (one value per kind of outcome), each with its meaning."""

    meaning: str  # a few words, for `--help` and README

    def __new__(cls, value: int, meaning: str) -> ExitCode:
        member = int.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        return member

    OK = 0, "the check ran and passed"
    CHECK_FAILED = (
        1,
        ("the check ran and failed (score, exposed/unreached site, failed guard, new finding, release not checked)"),
    )
    USAGE = 2, "bad command line (unknown option, value out of range)"
    TARGET_NOT_FOUND = 3, "no vLLM installed, or --vllm-src does not exist"
    NOT_A_VLLM_TREE = 4, "--vllm-src holds no vllm/ package with vllm/platforms/"
    SOURCE_DOES_NOT_PARSE = 5, "a file of the target cannot be read, or a Python file of it does not parse"
    PLATFORM_NOT_FOUND = 6, "--platform cannot be loaded or is not a platform class"
    PLATFORM_IMPORT_FAILED = 7, "a platform module fails to import in this environment"
    NOTHING_TO_CHECK = 8, "no *_once kernel-import site, or no mutant: nothing was checked"
    PATH_REFUSED = 9, "--out/--work-dir would replace something warnonce-guard did not create"
    PATH_UNUSABLE = 10, "--out/--work-dir/--viewer-js missing, of the wrong kind, or not writable"
    WORK_DIR_BUSY = 11, "another run holds the work directory, or is writing its report in --out"
    STAGING_FAILED = (
        12,
        ("the work directory's disk refuses a write (full, read-only, over quota), also in the mutmut session"),
    )
    ENGINE_FAILED = 13, "mutmut missing, another version, or its session (or a child of it) died or hung"
    MUTANTS_UNACCOUNTED = 14, "mutmut and warnonce-guard disagree on the mutants"
    VIEWER_MISSING = 15, "the HTML report viewer is not installed"
    REPORT_FAILED = 16, "the report cannot be written"
    BAD_BASELINE = 17, "the audit baseline cannot be read or written"
    NPM_FAILED = 18, "installing the pinned npm packages failed"
    NOT_INSTALLED = 19, "the command needs the mutation extra (pip install 'warnonce-guard[mutation]')"
    TARGET_CHANGED = 20, "the target's files changed during the run: its verdicts are not kept"
    INDEX_UNAVAILABLE = 21, "history: the package index cannot be read, or is not a PEP 691 JSON page"
    NO_RELEASE = 22, "history: --from/--to/--only select no release on the index"
    INTERNAL_ERROR = 70, "a bug in warnonce-guard (traceback printed)"
    INTERRUPTED = 130, "interrupted (Ctrl-C)"
    TERMINATED = 143, "terminated (SIGTERM)"


def exit_code_table() -> str:
    """The table for `--help`: one line per code."""
    return "\n".join(f"  {code.value:>3}  {code.meaning}" for code in ExitCode)


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


class TargetNotFound(GuardError, exit_code=ExitCode.TARGET_NOT_FOUND):
    """The vLLM to check is not there (not installed, or the path does not exist)."""


class NoPythonFiles(TargetNotFound):
    """A path given to the audit is missing, or holds no Python file."""


class NotAVllmTree(GuardError, exit_code=ExitCode.NOT_A_VLLM_TREE):
    """A path was given but it holds no `vllm` package."""


class SourceDoesNotParse(GuardError, exit_code=ExitCode.SOURCE_DOES_NOT_PARSE):
    """A file of the target cannot be read (permissions, not Python's text encoding), or a Python file of it
    does not parse; names the file (and the line)."""


class PlatformNotFound(GuardError, exit_code=ExitCode.PLATFORM_NOT_FOUND):
    """`--platform` cannot be imported, or is not a platform class."""


class PlatformImportFailed(GuardError, exit_code=ExitCode.PLATFORM_IMPORT_FAILED):
    """A platform module failed to import for a reason other than a blocked kernel."""


class NothingToCheck(GuardError, exit_code=ExitCode.NOTHING_TO_CHECK):
    """Discovery found no site (or the run made no mutant): a failure, never a vacuous pass."""


class PathRefused(GuardError, exit_code=ExitCode.PATH_REFUSED):
    """An output path holds something this tool did not create (or is the target, or the work directory)."""


class PathUnusable(GuardError, exit_code=ExitCode.PATH_UNUSABLE):
    """An input or output path is missing, of the wrong kind, or not writable (another user's files in the work
    directory included)."""


class WorkDirBusy(GuardError, exit_code=ExitCode.WORK_DIR_BUSY):
    """Another run holds the work directory's lock, or the report directory's (`--out`)."""


class StagingFailed(GuardError, exit_code=ExitCode.STAGING_FAILED):
    """The work directory cannot be written: staging the target, repairing or keeping a run's state, or
    history's: its disk is full, read-only or over quota (a permission refused is `PathUnusable`)."""


class RecordsUnwritten(StagingFailed):
    """A guard session finished but could not write its record (the attribution folder refused it)."""


class TargetChanged(GuardError, exit_code=ExitCode.TARGET_CHANGED):
    """The target's files changed while the run tested them (an edit or an upgrade during the run)."""


class IndexUnavailable(GuardError, exit_code=ExitCode.INDEX_UNAVAILABLE):
    """history: the package index cannot be read or parsed."""


class NoRelease(GuardError, exit_code=ExitCode.NO_RELEASE):
    """history: the selected range names no release on the index."""


class EngineFailed(GuardError, exit_code=ExitCode.ENGINE_FAILED):
    """The mutation engine (mutmut) is missing, another version, moved its internals, or died."""


class SeamMismatch(EngineFailed):
    """mutmut is not the version whose internals the operator seam was written against."""


class GenerationWorkerLost(EngineFailed):
    """A process generating mutants died before it finished."""


class SessionLost(EngineFailed):
    """The session's process group used no CPU for longer than any healthy wait."""


class MutantsUnaccounted(GuardError, exit_code=ExitCode.MUTANTS_UNACCOUNTED):
    """mutmut's mutants and ours differ (a mutant only one side knows)."""


class ViewerMissing(GuardError, exit_code=ExitCode.VIEWER_MISSING):
    """The mutation-testing-elements bundle the HTML report inlines is not installed."""


class ReportFailed(GuardError, exit_code=ExitCode.REPORT_FAILED):
    """The report cannot be written where --out points."""


class BadBaseline(GuardError, exit_code=ExitCode.BAD_BASELINE):
    """The audit's baseline file is missing, unreadable, not JSON or not a baseline; or it cannot be written."""


class NpmInstallFailed(GuardError, exit_code=ExitCode.NPM_FAILED):
    """`npm ci` of the pinned report packages failed, or npm is not on PATH."""


class NotInstalled(GuardError, exit_code=ExitCode.NOT_INSTALLED):
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
