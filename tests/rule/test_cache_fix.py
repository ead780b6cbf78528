"""The cache-level fix of a logger module (`caches.cache_fix`): what it changes in vLLM 0.33.0's and 0.29.0's
`vllm/logger.py`, and what the patched module does (on the toy logger, patched the same way: no torch)."""

from __future__ import annotations

import ast
import difflib
import re

import pytest
from warnonce_guard.caches.cache_fix import PATCH_MUTANTS, PatchMutant, patched, printers
from warnonce_guard.caches.renders_first import leaking, once_methods, renders_first
from warnonce_guard.common.errors import ExitCode, LoggerNotPatchable, NothingToCheck

from tests import layout
from tests.toy import LOGGER_SOURCE

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

    assert leaking(source) == list(once_methods(source))
    assert (leaking(fixed), renders_first(fixed), printers(ast.parse(fixed))) == ([], True, [])
    assert once_methods(fixed) == once_methods(source)
    compile(fixed, "vllm/logger.py", "exec")


@pytest.mark.parametrize("version", RELEASES)
def test_the_patch_drops_each_cache_decorator_and_adds_the_key_to_each_method(version: str) -> None:
    source = vllm_logger(version)
    methods = once_methods(source)
    removed, added = changed_lines(source, patched(source))

    # Each printer's `@lru_cache`, the import of lru_cache and the collections.abc import that gains Mapping: nothing
    # else of vLLM's lines goes, the printers' bodies (their stacklevel=3) are as they were.
    assert sorted(removed) == sorted(
        ["@lru_cache"] * len(methods) + ["from functools import lru_cache, partial", removed[0]]
    )
    assert removed[0].startswith("from collections.abc import") and added[0] == removed[0] + ", Mapping"
    assert "from functools import partial" in added
    for method in methods:
        level = method.removesuffix("_once").upper()
        assert added.count(f"        key = _once_key(self, logging.{level}, msg, args)") == 1
    assert added.count("        if key is None:  # the level is off, or the message was logged already") == len(methods)
    assert added.count("        _once_logged[key] = None") == len(methods)
    bound = f"_ONCE_MAXSIZE = {128 * len(methods)}  # as the {len(methods)} lru_caches of the *_once methods"
    assert f"{bound} kept 128 calls each" in added
    assert "_once_logged: dict[tuple[Logger, int, str], None] = {}" in added


def test_vllm_0_33_0_has_four_once_methods_and_0_29_0_three() -> None:
    assert once_methods(vllm_logger("0.33.0")) == ("debug_once", "info_once", "warning_once", "error_once")
    assert once_methods(vllm_logger("0.29.0")) == ("debug_once", "info_once", "warning_once")


def test_a_patched_module_is_not_patched_again() -> None:
    with pytest.raises(NothingToCheck, match="renders \\*_once messages before caching them already"):
        patched(patched(vllm_logger("0.33.0")), "vllm/logger.py")


PRINTER = "import logging\nfrom functools import lru_cache\n\n@lru_cache\ndef _print_warning_once(logger, msg, *a):\n"


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ("import logging\n", "defines no \\*_once function or method"),
        ("def (:\n", "does not parse"),
        (
            PRINTER + "    logger.warning(msg % a)\n\n\ndef warning_once(self, msg, *args):\n"
            "    _print_warning_once(self, msg, *args)\n",
            re.escape("_print_warning_once (line 5) does not make one `logger.<level>(msg, *a, ...)` call"),
        ),
        (
            PRINTER
            + "    logger.log(logging.WARNING, msg, *a, stacklevel=3)\n\n\ndef warning_once(self, msg, *args):\n"
            "    _print_warning_once(self, msg, *args)\n",
            re.escape("_print_warning_once (line 5) does not make one `logger.<level>(msg, *a, ...)` call"),
        ),
        (
            PRINTER + "    logger.warning(msg, *a, stacklevel=3)\n\n\ndef warning_once(self, msg, *args):\n"
            "    return _print_warning_once(self, msg, *args)\n",
            re.escape("is not `_print_warning_once(self, msg, *args)` as a statement"),
        ),
        (
            PRINTER + "    logger.warning(msg, *a, stacklevel=3)\n",
            "nothing calls _print_warning_once",
        ),
        (
            "import logging\n_seen = set()\n\n\ndef warning_once(self, msg, *args):\n"
            "    if (msg, args) not in _seen:\n        _seen.add((msg, args))\n        self.warning(msg, *args)\n",
            "warning_once passes its arguments to a cache that is not a cached function of the module",
        ),
    ],
    ids=["no-once", "syntax", "other-call", "log-call", "not-a-statement", "no-caller", "a-set"],
)
def test_a_logger_not_shaped_as_vllms_is_refused_in_one_line_naming_the_function(source: str, says: str) -> None:
    with pytest.raises(LoggerNotPatchable, match=says) as caught:
        patched(source, "my/logger.py")

    assert caught.value.exit_code is ExitCode.BAD_INPUT
    assert str(caught.value).startswith("my/logger.py") and "\n" not in str(caught.value)


def test_the_imports_go_where_isort_puts_them_and_an_unused_lru_cache_import_goes() -> None:
    fixed = patched(LOGGER_SOURCE)  # here, not at import: mutation testing must see the patch made
    _, added = changed_lines(LOGGER_SOURCE, fixed)
    lines = fixed.splitlines()

    assert "from collections.abc import Mapping" in added
    assert lines.index("import logging") < lines.index("from collections.abc import Mapping")
    assert lines.index("from collections.abc import Mapping") < lines.index("from types import MethodType")
    assert "from functools import lru_cache" not in fixed


# ---- every cache of the module: any level, any name, lru_cache or cache -----------------------------

CRITICAL_PRINTER = """

@lru_cache(maxsize=64)
def _print_critical_once(logger: Logger, msg: str, *args: Hashable) -> None:
    # Set the stacklevel to 3 to print the original caller's line info
    logger.critical(msg, *args, stacklevel=3)
"""
CRITICAL_METHOD = """
    def critical_once(self, msg: str, *args: Hashable, scope: LogScope = "local") -> None:
        if not _should_log_with_scope(scope):
            return
        _print_critical_once(self, msg, *args)
"""


def with_critical_once(source: str) -> str:
    """vLLM's logger module with a further `critical_once` over `_print_critical_once(self, msg, *args)`."""
    source = source.replace("\n\nLogScope = ", CRITICAL_PRINTER + "\n\nLogScope = ", 1)
    source = source.replace(
        "\n\n# Pre-defined methods mapping", CRITICAL_METHOD + "\n\n# Pre-defined methods mapping", 1
    )
    return source.replace(
        '    "error_once": _VllmLogger.error_once,\n',
        '    "error_once": _VllmLogger.error_once,\n    "critical_once": _VllmLogger.critical_once,\n',
        1,
    )


def renamed_and_functools_cache(source: str) -> str:
    """vLLM's logger with `_print_warning_once` renamed and `@functools.cache`-decorated."""
    source = source.replace("_print_warning_once", "_emit_warning_cached")
    source = source.replace("@lru_cache\ndef _emit_warning_cached", "@functools.cache\ndef _emit_warning_cached", 1)
    return source.replace("import datetime\n", "import datetime\nimport functools\n", 1)


def test_a_further_critical_once_cache_is_found_and_patched() -> None:
    source = with_critical_once(vllm_logger("0.33.0"))
    assert "critical_once" in leaking(source)

    fixed = patched(source)

    assert once_methods(fixed)[-1] == "critical_once" and leaking(fixed) == []
    assert "        key = _once_key(self, logging.CRITICAL, msg, args)" in fixed.splitlines()
    assert "_ONCE_MAXSIZE = 576  # as the 5 lru_caches of the *_once methods kept 576 calls in all" in fixed


def test_a_renamed_printer_under_functools_cache_is_found_and_patched_its_import_dropped() -> None:
    source = renamed_and_functools_cache(vllm_logger("0.33.0"))
    assert [p.name for p in printers(ast.parse(source))][2] == "_emit_warning_cached"

    fixed = patched(source)

    assert leaking(fixed) == [] and "import functools\n" not in fixed
    assert "# What the *_once methods logged (unbounded, as the 4 lru_caches before)." in fixed
    assert "_ONCE_MAXSIZE" not in fixed  # functools.cache is unbounded, and so is what replaces it


def test_a_cache_that_cannot_be_patched_is_one_line_exit_3_naming_it() -> None:
    source = vllm_logger("0.33.0").replace(
        "    logger.error(msg, *args, stacklevel=3)", "    logger.log(logging.ERROR, msg, *args, stacklevel=3)"
    )
    with pytest.raises(LoggerNotPatchable) as caught:
        patched(source, "vllm/logger.py")

    assert str(caught.value).startswith("vllm/logger.py: _print_error_once (line ")
    assert caught.value.exit_code == ExitCode.BAD_INPUT == 3


@pytest.mark.parametrize("version", RELEASES)
@pytest.mark.parametrize("mutant", PATCH_MUTANTS, ids=[m.name for m in PATCH_MUTANTS])
def test_each_mutant_of_the_patch_keeps_arguments_in_the_cache_again(version: str, mutant: PatchMutant) -> None:
    fixed = patched(vllm_logger(version))
    mutated = mutant.apply(fixed)

    assert mutated != fixed
    assert leaking(mutated) == list(once_methods(fixed))
    compile(mutated, "vllm/logger.py", "exec")


def test_a_cached_helper_a_once_method_gives_no_argument_is_left_as_it_is() -> None:
    source = vllm_logger("0.33.0").replace(
        "\n\nLogScope = ", "\n\n@lru_cache\ndef _first_rank() -> bool:\n    return True\n\n\nLogScope = ", 1
    )
    source = source.replace(
        "        if not _should_log_with_scope(scope):\n            return\n        _print_warning_once",
        "        if not _first_rank():\n            return\n        _print_warning_once",
        1,
    )

    fixed = patched(source)

    assert "@lru_cache\ndef _first_rank() -> bool:" in fixed and "from functools import lru_cache, partial" in fixed
    assert [p.name for p in printers(ast.parse(source))] == [f"_print_{m}" for m in once_methods(source)]
    assert leaking(fixed) == []


@pytest.mark.parametrize(
    ("imports", "decorator"),
    [
        ("from functools import lru_cache as memo, partial", "@memo"),
        ("import functools as ft\nfrom functools import partial", "@ft.lru_cache"),
    ],
    ids=["from-as", "module-as"],
)
def test_a_cache_decorator_imported_under_another_name_is_read_and_patched_as_the_stock_one(
    imports: str, decorator: str
) -> None:
    stock = vllm_logger("0.33.0")
    source = stock.replace("from functools import lru_cache, partial", imports)
    source = source.replace("@lru_cache\n", f"{decorator}\n")
    fixed = patched(source)

    assert leaking(source) == leaking(stock) == list(once_methods(source))
    assert [p.name for p in printers(ast.parse(source))] == [p.name for p in printers(ast.parse(stock))]
    assert (leaking(fixed), renders_first(fixed)) == ([], True)
    assert fixed == patched(stock)  # the same patch: the decorators gone, and the import that named them


def test_a_printer_under_lru_cache_of_size_zero_keeps_nothing_and_is_left_as_it_is() -> None:
    stock = vllm_logger("0.33.0")
    none_kept = stock.replace("@lru_cache\n", "@lru_cache(maxsize=0)\n")
    assert (leaking(none_kept), renders_first(none_kept)) == ([], True)  # it calls through every time
    with pytest.raises(NothingToCheck):
        patched(none_kept)
    one = stock.replace("@lru_cache\ndef _print_info_once", "@lru_cache(maxsize=0)\ndef _print_info_once", 1)
    fixed = patched(one)
    assert "@lru_cache(maxsize=0)\ndef _print_info_once" in fixed  # untouched: it logs every call, as before
    assert fixed.count("@lru_cache") == 1 and "_ONCE_MAXSIZE = 384" in fixed  # the other three: 3 x 128
    assert (leaking(fixed), renders_first(fixed)) == ([], True)
