"""One exit-code table of eight meanings: every kind of error is defined in common/errors.py and names one row, and
`warnonce-guard --help` prints all of them."""

from __future__ import annotations

import importlib
import pkgutil

from warnonce_guard import audit, cli, common, guards, history, mutations, rule, strict, upstream
from warnonce_guard.common.errors import ExitCode, GuardError, exit_code_table

PACKAGES = (common, rule, guards, audit, strict, mutations, history, upstream, cli)


def every_subclass(base: type) -> list[type]:
    for package in PACKAGES:
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if not module.name.endswith(("conftest", "test_kernel_import_sites", "__main__")):
                importlib.import_module(module.name)
    found, todo = [], [base]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        found.append(cls)
    return found


def every_error_class() -> list[type[GuardError]]:
    return [cls for cls in every_subclass(GuardError) if "exit_code" in vars(cls)]


# Exceptions a product raises and handles itself (or, for the guards' failures, pytest reports): never a user's error.
INTERNAL = {
    "warnonce_guard.audit.grammar": {"DoesNotParse"},
    "warnonce_guard.guards.blocker": {"BlockedKernelImport"},
    "warnonce_guard.guards.drive": {"CannotDrive"},
    "warnonce_guard.guards.outcome": {"GuardFailure", "LeakDetected", "SiteUnreached"},
    "warnonce_guard.guards.steering": {"CannotSteer"},
    "warnonce_guard.history.fetch": {"FetchFailed"},
    "warnonce_guard.mutations.engine.pristine": {"SessionCannotStart"},  # the engine's session says it, exit 4
    "warnonce_guard.mutations.engine.prewalk": {"_Odd"},  # ends the walk done ahead: the command walks that folder
    # the audit's settings make them a BadCacheSettings, strict mode a pytest.UsageError
    "warnonce_guard.caches.model": {"BadCacheEntry", "BadSignature"},
    "warnonce_guard.rule.target": {"NotPythonText"},  # read_source makes it a SourceDoesNotParse, the audit a WOG000
    "warnonce_guard.upstream.cases": {"CannotExport"},
}


def test_every_user_facing_error_is_defined_in_common_errors() -> None:
    elsewhere: dict[str, set[str]] = {}
    for cls in every_subclass(Exception):
        if cls.__module__.startswith("warnonce_guard.") and cls.__module__ != "warnonce_guard.common.errors":
            elsewhere.setdefault(cls.__module__, set()).add(cls.__qualname__)
    assert elsewhere == INTERNAL


# What each error class tells a CI script: the input is wrong (fix the command's arguments or files), or the machine,
# the engine or the index is (fix or retry the environment). The message says the rest.
BAD_INPUT = {
    "TargetNotFound", "NotAVllmTree", "SourceDoesNotParse", "PlatformNotFound", "PathRefused", "PathUnusable",
    "BadBaseline", "BadSitesRecord", "LoggerNotPatchable", "BadCacheSettings",
}  # fmt: skip
ENVIRONMENT = {
    "PlatformImportFailed", "WorkDirBusy", "StagingFailed", "TargetChanged", "IndexUnavailable", "EngineFailed",
    "MutantsUnaccounted", "ViewerMissing", "ReportFailed", "NpmInstallFailed", "NotInstalled",
}  # fmt: skip


def test_every_error_class_is_a_failed_check_bad_input_the_environment_usage_or_nothing_to_check() -> None:
    by_code: dict[ExitCode, set[str]] = {}
    for cls in every_error_class():
        by_code.setdefault(cls.exit_code, set()).add(cls.__name__)
    assert by_code == {
        ExitCode.CHECK_FAILED: {"ExpectedSitesMissing"},
        ExitCode.USAGE: {"UsageError"},
        ExitCode.BAD_INPUT: BAD_INPUT,
        ExitCode.ENVIRONMENT: ENVIRONMENT,
        ExitCode.NOTHING_TO_CHECK: {"NothingToCheck", "NoRelease"},
    }


def test_at_most_eight_meanings_in_pytests_spirit() -> None:
    assert len({code.value for code in ExitCode}) == len(ExitCode)
    assert [code.value for code in ExitCode] == [0, 1, 2, 3, 4, 5, 70, 130, 143]
    assert len(exit_code_table().splitlines()) == 8  # the two signals are one row: the run was stopped


def test_the_help_table_lists_every_code_once() -> None:
    table = exit_code_table()
    assert [line.split()[0] for line in table.splitlines()] == ["0", "1", "2", "3", "4", "5", "70", "130/143"]
