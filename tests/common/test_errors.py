"""One exit-code table: every kind of error has its own row, is defined in common/errors.py, and --help and README
print all of them."""

from __future__ import annotations

import importlib
import pkgutil

from warnonce_guard import audit, cli, common, guards, history, mutations, rule, strict
from warnonce_guard.common.errors import ExitCode, GuardError, exit_code_table

PACKAGES = (common, rule, guards, audit, strict, mutations, history, cli)


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
}


def test_every_user_facing_error_is_defined_in_common_errors() -> None:
    elsewhere: dict[str, set[str]] = {}
    for cls in every_subclass(Exception):
        if cls.__module__.startswith("warnonce_guard.") and cls.__module__ != "warnonce_guard.common.errors":
            elsewhere.setdefault(cls.__module__, set()).add(cls.__qualname__)
    assert elsewhere == INTERNAL


def test_every_error_kind_has_a_row_of_its_own() -> None:
    classes = every_error_class()
    by_code: dict[ExitCode, list[str]] = {}
    for cls in classes:
        by_code.setdefault(cls.exit_code, []).append(cls.__name__)

    assert all(isinstance(cls.exit_code, ExitCode) for cls in classes)
    assert {code: names for code, names in by_code.items() if len(names) > 1} == {}
    assert ExitCode.CHECK_FAILED not in by_code and ExitCode.INTERNAL_ERROR not in by_code  # never an input error


def test_error_rows_are_distinct_from_the_gate_internal_errors_and_interrupts() -> None:
    assert len({code.value for code in ExitCode}) == len(ExitCode)
    assert (ExitCode.OK, ExitCode.CHECK_FAILED, ExitCode.USAGE) == (0, 1, 2)
    assert (ExitCode.INTERRUPTED, ExitCode.TERMINATED) == (130, 143)


def test_the_help_table_lists_every_code_once() -> None:
    table = exit_code_table()
    assert [int(line.split()[0]) for line in table.splitlines()] == [code.value for code in ExitCode]
