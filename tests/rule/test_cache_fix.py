"""The cache-level fix of a logger module (`caches.cache_fix`): what it changes in vLLM 0.33.0's and 0.29.0's
`vllm/logger.py`, and what the patched module does (on the toy logger, patched the same way: no torch)."""

from __future__ import annotations

import ast
import difflib
import gc
import importlib
import inspect
import logging
import re
import weakref
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from warnonce_guard.caches.cache_fix import PATCH_MUTANTS, PatchMutant, patched, printers
from warnonce_guard.caches.renders_first import renders_first
from warnonce_guard.common.errors import ExitCode, LoggerNotPatchable, NothingToCheck

from tests import layout
from tests.toy import FIXED_LOGGER_SOURCE, LOGGER_SOURCE, purge, unique_package, write

RELEASES = ("0.33.0", "0.29.0")


def vllm_logger(version: str) -> str:
    return (layout.DATA / f"vllm-{version}-logger" / "logger.py.txt").read_text(encoding="utf-8")


def changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    """The lines a patch removes and adds."""
    diff = list(difflib.ndiff(before.splitlines(), after.splitlines()))
    return [d[2:] for d in diff if d.startswith("- ")], [d[2:] for d in diff if d.startswith("+ ")]


@pytest.mark.parametrize("version", RELEASES)
def test_vllms_logger_keeps_its_arguments_and_the_patched_one_renders_first(version: str) -> None:
    source = vllm_logger(version)
    fixed = patched(source)

    assert not renders_first(source)
    assert renders_first(fixed)
    assert [p.keeps_arguments for p in printers(ast.parse(fixed))] == [False] * len(printers(ast.parse(source)))
    compile(fixed, "vllm/logger.py", "exec")


@pytest.mark.parametrize("version", RELEASES)
def test_the_patch_changes_only_the_caches_their_callers_and_one_import(version: str) -> None:
    source = vllm_logger(version)
    levels = [p.level for p in printers(ast.parse(source))]
    removed, added = changed_lines(source, patched(source))

    assert len(removed) == 1 + 2 * len(levels) + len(levels)  # the import; each printer's def and call; each caller
    assert removed[0].startswith("from collections.abc import") and added[0] == removed[0] + ", Mapping"
    for level in levels:
        assert f"        _print_{level}_once(self, msg, *args)" in removed
        assert f"    logger.{level}(msg, stacklevel=3)" in added
        assert f"def _print_{level}_once(logger: Logger, msg: str) -> None:" in added
        assert f"            self.{level}(msg, *args, stacklevel=2)" in added
    assert "def _render_once(msg: str, args: tuple[Hashable, ...]) -> str | None:" in added


def test_vllm_0_33_0_has_four_once_levels_and_0_29_0_three() -> None:
    assert [p.level for p in printers(ast.parse(vllm_logger("0.33.0")))] == ["debug", "info", "warning", "error"]
    assert [p.level for p in printers(ast.parse(vllm_logger("0.29.0")))] == ["debug", "info", "warning"]


def test_a_patched_module_is_not_patched_again() -> None:
    with pytest.raises(NothingToCheck, match="renders \\*_once messages before caching them already"):
        patched(patched(vllm_logger("0.33.0")), "vllm/logger.py")


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("import logging\n", "no lru_cache'd _print_<level>_once"),
        ("def (:\n", "does not parse"),
        (
            "from functools import lru_cache\n\n@lru_cache\ndef _print_warning_once(logger, msg, *args):\n"
            "    logger.warning(msg % args)\n",
            re.escape("does not make one `logger.warning(msg, *args, ...)` call"),
        ),
        (
            "from functools import lru_cache\n\n@lru_cache\ndef _print_warning_once(logger, msg, *args):\n"
            "    logger.warning(msg, *args, stacklevel=3)\n\n\ndef warning_once(self, msg, *args):\n"
            "    return _print_warning_once(self, msg, *args)\n",
            re.escape("is not `_print_warning_once(self, msg, *args)` as a statement"),
        ),
        (
            "from functools import lru_cache\n\n@lru_cache\ndef _print_warning_once(logger, msg, *args):\n"
            "    logger.warning(msg, *args, stacklevel=3)\n",
            "nothing calls _print_warning_once",
        ),
    ],
    ids=["no-cache", "syntax", "other-call", "not-a-statement", "no-caller"],
)
def test_a_logger_not_shaped_as_vllms_is_refused_saying_what_differs(source: str, says: str) -> None:
    with pytest.raises(LoggerNotPatchable, match=says) as caught:
        patched(source, "my/logger.py")

    assert caught.value.exit_code is ExitCode.BAD_INPUT
    assert str(caught.value).startswith("my/logger.py")


def test_the_import_of_mapping_goes_where_isort_puts_it() -> None:
    _, added = changed_lines(LOGGER_SOURCE, FIXED_LOGGER_SOURCE)

    assert "from collections.abc import Mapping" in added
    lines = FIXED_LOGGER_SOURCE.splitlines()
    assert lines.index("from collections.abc import Mapping") == lines.index("from functools import lru_cache") - 1


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("mutant", PATCH_MUTANTS, ids=[m.name for m in PATCH_MUTANTS])
def test_each_mutant_of_the_patch_keeps_arguments_in_the_cache_again(version: str, mutant: PatchMutant) -> None:
    fixed = patched(vllm_logger(version))
    mutated = mutant.apply(fixed)

    assert mutated != fixed
    assert not renders_first(mutated)
    compile(mutated, "vllm/logger.py", "exec")


# ---- what the patched module does (the toy logger, patched as vLLM's is) ---------------------------


class Kept(Exception):
    """Built-in exceptions take no weak references; a subclass does."""


@pytest.fixture
def fixed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The patched toy logger module, imported."""
    package = unique_package()
    write(tmp_path, f"{package}/__init__.py", "")
    write(tmp_path, f"{package}/logger.py", FIXED_LOGGER_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield importlib.import_module(f"{package}.logger")
    purge(package)


@pytest.fixture
def records(fixed: ModuleType) -> Iterator[tuple[logging.Logger, list[logging.LogRecord]]]:
    logger = fixed.init_logger(f"{fixed.__name__}.test")
    kept: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = kept.append  # type: ignore[method-assign]
    logger.handlers, logger.propagate = [handler], False
    logger.setLevel(logging.DEBUG)
    yield logger, kept
    logger.handlers = []


@pytest.mark.parametrize("method", ["debug_once", "info_once", "warning_once", "error_once"])
def test_a_live_exception_is_logged_once_as_its_text_from_the_callers_line_and_collected(
    records: tuple[logging.Logger, list[logging.LogRecord]], method: str
) -> None:
    logger, kept = records
    refs = []
    for _ in range(2):
        try:
            raise Kept("not built")
        except Kept as e:
            refs.append(weakref.ref(e))
            here = inspect.getframeinfo(inspect.currentframe())  # type: ignore[arg-type]
            getattr(logger, method)("Failed: %r", e)
    gc.collect()

    assert [ref() for ref in refs] == [None, None]
    assert [(r.getMessage(), r.msg, r.args) for r in kept] == [("Failed: Kept('not built')",) * 2 + ((),)]
    assert (kept[0].pathname, kept[0].lineno, kept[0].funcName) == (here.filename, here.lineno + 1, here.function)


def test_a_single_mapping_and_an_unhashable_argument_render_as_logging_renders_them(
    records: tuple[logging.Logger, list[logging.LogRecord]],
) -> None:
    logger, kept = records
    logger.warning_once("%(kernel)s missing", {"kernel": "_C"})
    logger.warning_once("tried %s", ["_C", "_C_AVX2"])  # vLLM's cache would raise TypeError: unhashable

    assert [r.getMessage() for r in kept] == ["_C missing", "tried ['_C', '_C_AVX2']"]


def test_arguments_that_do_not_fit_go_to_logging_which_reports_them_and_nothing_is_cached(
    records: tuple[logging.Logger, list[logging.LogRecord]], capsys: pytest.CaptureFixture[str]
) -> None:
    logger, _ = records
    logger.handlers = [logging.StreamHandler()]  # a handler that formats, as vLLM's does
    error = Kept("not built")
    ref = weakref.ref(error)
    for _ in range(2):
        logger.warning_once("Failed to import", error)  # no placeholder for the exception
    del error
    gc.collect()

    report = capsys.readouterr().err
    assert report.count("--- Logging error ---") == 2  # logging's report, each time: the call is not cached
    assert "TypeError: not all arguments converted during string formatting" in report
    assert "Message: 'Failed to import'\nArguments: (Kept('not built'),)" in report
    assert ref() is None


def test_a_disabled_level_logs_nothing_and_keeps_nothing(
    records: tuple[logging.Logger, list[logging.LogRecord]],
) -> None:
    logger, kept = records
    logger.setLevel(logging.ERROR)
    error = Kept("not built")
    ref = weakref.ref(error)
    logger.debug_once("Failed: %r", error)
    logger.debug_once("Failed to import", error)  # and one that does not fit: silent, as logging is
    del error
    gc.collect()

    assert kept == []
    assert ref() is None
