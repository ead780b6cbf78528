"""One exit-code table: every kind of error has its own row, and --help and README print all of them."""

from __future__ import annotations

import importlib
import pkgutil

from warnonce_guard import guards, mutations
from warnonce_guard.common.errors import ExitCode, GuardError, exit_code_table


def every_error_class() -> list[type[GuardError]]:
    for package in (guards, mutations):
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if not module.name.endswith(("conftest", "test_kernel_import_sites", "__main__")):
                importlib.import_module(module.name)
    found, todo = [], [GuardError]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        found.append(cls)
    return [cls for cls in found if "exit_code" in vars(cls)]


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
