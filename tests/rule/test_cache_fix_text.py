"""The text the cache-level fix writes (`caches.cache_fix.patched`), line for line, on small logger modules: where
the imports it needs go and which imports it drops, where each `*_once` function gets its key, the helper it adds,
and the one line that names what it cannot patch. Every source is patched in the test itself."""

from __future__ import annotations

import pytest
from warnonce_guard.caches.cache_fix import PATCH_MUTANTS, patched
from warnonce_guard.common.errors import LoggerNotPatchable

from tests.rule.test_cache_fix import vllm_logger

# One printer and the *_once function that calls it, after a module's imports (the printer decorated `DECORATOR`).
BODY = """

DECORATOR
def _print_warning_once(logger, msg, *args):
    logger.warning(msg, *args, stacklevel=3)


def warning_once(self, msg, *args):
    _print_warning_once(self, msg, *args)
"""
LRU_BODY = BODY.replace("DECORATOR", "@lru_cache")


def imports_of(source: str) -> str:
    """The lines of a patched module before its first blank line pair: its imports."""
    return source.split("\n\n\n", 1)[0] + "\n"


IMPORT_CASES = {
    "logging-before-the-first-later-import": (
        "import os\nimport sys\nfrom functools import lru_cache\n",
        "import logging\nimport os\nimport sys\nfrom collections.abc import Mapping\nfrom functools import partial\n",
    ),
    "logging-before-the-first-from-import": (
        "import abc\nfrom functools import lru_cache\n",
        "import abc\nimport logging\nfrom collections.abc import Mapping\nfrom functools import partial\n",
    ),
    "all-three-at-the-end-of-the-standard-library-section": (
        "import abc\nimport functools\n\nimport vllm.envs as envs\n",
        "import abc\nimport logging\nfrom collections.abc import Mapping\nfrom functools import partial\n\n"
        "import vllm.envs as envs\n",
    ),
    "mapping-before-a-later-from-import": (
        "import logging\nfrom functools import lru_cache\nfrom types import MethodType\n",
        "import logging\nfrom collections.abc import Mapping\nfrom functools import partial\n"
        "from types import MethodType\n",
    ),
    "sorted-as-isort-sorts-ignoring-case": (
        "import logging\nfrom cProfile import run\nfrom functools import lru_cache\n",
        "import logging\nfrom collections.abc import Mapping\nfrom cProfile import run\n"
        "from functools import partial\n",
    ),
    "names-imported-already-under-aliases": (
        "import logging\nfrom functools import lru_cache, partial as P\nfrom typing import Mapping as M\n",
        "import logging\nfrom functools import partial as P\nfrom typing import Mapping as M\n",
    ),
    "wrapped-imports-gain-and-lose-names": (
        "from collections.abc import (\n    Callable,\n    Hashable,\n)\nfrom functools import (\n    lru_cache,\n"
        "    partial,\n)\n",
        "import logging\nfrom collections.abc import Callable, Hashable, Mapping\nfrom functools import partial\n",
    ),
    "a-plain-import-keeps-its-other-names": (
        "import functools, logging, os\n",
        "import logging, os\nfrom collections.abc import Mapping\nfrom functools import partial\n",
    ),
    "logging-before-an-aliased-logging": (
        "import logging as log\nimport os\nfrom functools import lru_cache\n",
        "import logging\nimport logging as log\nimport os\nfrom collections.abc import Mapping\n"
        "from functools import partial\n",
    ),
    "a-relative-import-is-the-packages-own-whatever-its-name": (
        "import abc\nimport functools\n\nfrom .types import Kernel\n",
        "import abc\nimport logging\nfrom collections.abc import Mapping\nfrom functools import partial\n\n"
        "from .types import Kernel\n",
    ),
    "a-relative-import-keeps-its-other-names": (
        "import logging\nfrom collections.abc import Mapping\nfrom functools import partial\n\n"
        "from .compat import lru_cache, wraps\n",
        "import logging\nfrom collections.abc import Mapping\nfrom functools import partial\n\n"
        "from .compat import wraps\n",
    ),
    "a-relative-import-of-the-package-keeps-its-other-names": (
        "import logging\nfrom collections.abc import Mapping\nfrom functools import partial\n\n"
        "from . import lru_cache, utils\n",
        "import logging\nfrom collections.abc import Mapping\nfrom functools import partial\n\nfrom . import utils\n",
    ),
    "a-future-import-stays-first": (
        "from __future__ import annotations\n\nfrom functools import lru_cache\n",
        "from __future__ import annotations\n\nimport logging\nfrom collections.abc import Mapping\n"
        "from functools import partial\n",
    ),
    "a-future-import-the-only-standard-one": (
        '"""Doc."""\nfrom __future__ import annotations\n\nfrom vllm.utils import lru_cache\n',
        '"""Doc."""\nfrom __future__ import annotations\nimport logging\nfrom collections.abc import Mapping\n'
        "from functools import partial\n",
    ),
}


@pytest.mark.parametrize(("imports", "expected"), IMPORT_CASES.values(), ids=IMPORT_CASES.keys())
def test_the_imports_the_fix_needs_go_where_isort_puts_them_and_the_caches_imports_go(
    imports: str, expected: str
) -> None:
    decorator = "@functools.lru_cache" if "import functools" in imports else "@lru_cache"
    fixed = patched(imports + BODY.replace("DECORATOR", decorator))

    assert imports_of(fixed) == expected
    compile(fixed, "logger.py", "exec")  # a `from __future__` import misplaced is refused here, not by ast.parse


def test_an_import_line_that_outgrows_88_columns_is_wrapped_as_ruff_formats_it() -> None:
    """`from collections.abc import ...` gains `, Mapping` (9 characters): 88 columns stay one line, 89 wrap."""
    names = ["AsyncGenerator", "AsyncIterator", "Awaitable", "Coroutine"]
    fits = f"from collections.abc import {', '.join(names)}\n"  # 79 columns, 88 with Mapping
    wraps = fits.replace("Coroutine", "Collection")  # 80 columns, 89 with Mapping
    assert (len(fits), len(wraps)) == (80, 81)  # with their line ends

    assert imports_of(patched(fits + "import logging\nfrom functools import lru_cache, partial\n" + LRU_BODY)) == (
        f"{fits[:-1]}, Mapping\nimport logging\nfrom functools import partial\n"
    )
    assert imports_of(patched(wraps + "import logging\nfrom functools import lru_cache, partial\n" + LRU_BODY)) == (
        "from collections.abc import (\n"
        + "".join(f"    {name},\n" for name in [*names[:3], "Collection", "Mapping"])
        + ")\nimport logging\nfrom functools import partial\n"
    )


def test_the_names_imported_under_aliases_are_the_names_the_fix_uses() -> None:
    imports = "import logging\nfrom functools import lru_cache, partial as P\nfrom typing import Mapping as M\n"
    lines = patched(imports + LRU_BODY).splitlines()

    assert "    single = len(args) == 1 and isinstance(args[0], M) and args[0]" in lines
    assert "    _printer.cache_clear = P(_once_clear, _level)  # type: ignore[attr-defined]" in lines


def test_a_cache_called_with_its_size_has_its_import_dropped_too() -> None:
    source = "import logging\nfrom functools import lru_cache, partial\n" + BODY.replace(
        "DECORATOR", "@lru_cache(\n    maxsize=64,\n)"
    )
    fixed = patched(source)

    assert imports_of(fixed) == "import logging\nfrom collections.abc import Mapping\nfrom functools import partial\n"
    assert "_ONCE_MAXSIZE = 64  # as the lru_cache of the *_once methods kept 64 calls in all\n" in fixed
    assert "maxsize" not in fixed.replace("_ONCE_MAXSIZE", "")


# ---- where each *_once function gets its key ----------------------------------------------------------------

ONCE_FUNCTIONS = '''import logging
from collections.abc import Mapping
from functools import lru_cache, partial


@lru_cache
def _print_warning_once(logger, msg, *args):
    logger.warning(msg, *args, stacklevel=3)


def short_once(self, m, *a):
    _print_warning_once(self, m, *a)


def documented_once(self, msg, *args):
    """Log once."""
    _print_warning_once(self, msg, *args)


def terse_once(self, msg, *args):
    """Log once."""; self.count = 1
    _print_warning_once(self, msg, *args)


def nested_once(self, msg, *args):
    """Log once,
    when enabled."""
    if self.enabled:
        _print_warning_once(self, msg, *args)


def keyed_once(self, msg, *args, key=None):
    once_key = key
    _print_warning_once(
        self, msg, *args
    )


def warning_once(self, msg, *args, scope="local"):
    """Log once, in scope."""
    if scope != "local":
        return
    _print_warning_once(self, msg, *args)
'''

PATCHED_ONCE_FUNCTIONS = '''
def short_once(self, m, *a):
    key = _once_key(self, logging.WARNING, m, a)
    if key is None:  # the level is off, or the message was logged already
        return
    _once_logged[key] = None
    _print_warning_once(self, m, *a)


def documented_once(self, msg, *args):
    """Log once."""
    key = _once_key(self, logging.WARNING, msg, args)
    if key is None:  # the level is off, or the message was logged already
        return
    _once_logged[key] = None
    _print_warning_once(self, msg, *args)


def terse_once(self, msg, *args):
    """Log once."""; self.count = 1
    key = _once_key(self, logging.WARNING, msg, args)
    if key is None:  # the level is off, or the message was logged already
        return
    _once_logged[key] = None
    _print_warning_once(self, msg, *args)


def nested_once(self, msg, *args):
    """Log once,
    when enabled."""
    key = _once_key(self, logging.WARNING, msg, args)
    if key is None:  # the level is off, or the message was logged already
        return
    if self.enabled:
        _once_logged[key] = None
        _print_warning_once(self, msg, *args)


def keyed_once(self, msg, *args, key=None):
    logged_key = _once_key(self, logging.WARNING, msg, args)
    if logged_key is None:  # the level is off, or the message was logged already
        return
    once_key = key
    _once_logged[logged_key] = None
    _print_warning_once(
        self, msg, *args
    )


def warning_once(self, msg, *args, scope="local"):
    """Log once, in scope."""
    key = _once_key(self, logging.WARNING, msg, args)
    if key is None:  # the level is off, or the message was logged already
        return
    if scope != "local":
        return
    _once_logged[key] = None
    _print_warning_once(self, msg, *args)
'''


def test_each_once_function_checks_its_key_first_and_remembers_it_just_before_the_call() -> None:
    """After the docstring, at the function's indentation, in a name the function does not use; the last line of
    the module included."""
    fixed = patched(ONCE_FUNCTIONS)

    assert fixed.endswith("\n\n" + PATCHED_ONCE_FUNCTIONS)


def test_the_cache_clear_of_the_last_printer_follows_it_and_the_helper_precedes_the_first() -> None:
    source = ONCE_FUNCTIONS.replace(
        "\n\ndef short_once",
        "\n\n@lru_cache\ndef _print_info_once(logger, msg, *args):\n    logger.info(msg, *args, stacklevel=3)\n\n"
        "\ndef info_once(self, msg, *args):\n    _print_info_once(self, msg, *args)\n\n\ndef short_once",
    )
    fixed = patched(source)
    start = fixed.index("\n\n\n_ONCE_MAXSIZE = 256  # as the 2 lru_caches of the *_once methods kept 128 calls each\n")

    assert fixed[:start] == "import logging\nfrom collections.abc import Mapping\nfrom functools import partial"
    assert fixed.index("    return key\n") < fixed.index("\ndef _print_warning_once(logger, msg, *args):")
    assert (
        "    logger.info(msg, *args, stacklevel=3)\n\n\n"
        "# As the lru_caches had: _print_<level>_once.cache_clear() forgets that level.\nfor _printer, _level in (\n"
        "    (_print_warning_once, logging.WARNING),\n    (_print_info_once, logging.INFO),\n):\n"
    ) in fixed


def test_the_helper_of_an_unannotated_module_is_unannotated() -> None:
    lines = patched(ONCE_FUNCTIONS).splitlines()

    assert lines[3:6] == ["", "", "_ONCE_MAXSIZE = 128  # as the lru_cache of the *_once methods kept 128 calls in all"]
    for line in (
        "_once_logged = {}",
        "def _once_key(logger, level, msg, args):",
        "def _once_text(msg, args):",
        "def _once_clear(level):",
    ):
        assert line in lines


def test_the_helper_is_annotated_as_the_first_printer_is() -> None:
    fixed = patched(vllm_logger("0.33.0"))
    loose = patched(
        "import logging\nfrom functools import lru_cache, partial\nfrom logging import Logger\n"
        + BODY.replace("DECORATOR", "@lru_cache").replace("(logger, msg, *args)", "(logger: Logger, msg: str, *args)")
    )

    assert (
        "def _once_key(\n    logger: Logger, level: int, msg: str, args: tuple[Hashable, ...]\n"
        ") -> tuple[Logger, int, str] | None:\n"
    ) in fixed
    assert "def _once_text(msg: str, args: tuple[Hashable, ...]) -> str:\n" in fixed
    assert "def _once_key(\n    logger: Logger, level: int, msg: str, args: tuple[object, ...]\n" in loose


# ---- what cannot be patched: one line naming it -------------------------------------------------------------

HEAD = "import logging\nfrom functools import lru_cache, partial\n\n\n@lru_cache\n"
PRINTER = HEAD + "def _print_warning_once(logger, msg, *args):\n    logger.warning(msg, *args, stacklevel=3)\n"
METHOD = "\n\ndef warning_once(self, msg, *args):\n    CALL\n"


def calling(call: str) -> str:
    return PRINTER + METHOD.replace("CALL", call)


def printing(signature: str, body: str = "logger.warning(msg, *args, stacklevel=3)") -> str:
    return (
        HEAD
        + f"def _print_warning_once({signature}):\n    {body}\n"
        + METHOD.replace("CALL", "_print_warning_once(self, msg, *args)")
    )


NOT_OWN = "does not pass warning_once's own (self, msg, *args) as it got them"

REFUSED = {
    "keywords": (
        printing("logger, msg, *args, **kwargs"),
        ": _print_warning_once (line 6) does not take (logger, msg, *args) as vLLM's do",
    ),
    "keyword-only": (
        printing("logger, msg, *args, level=30"),
        ": _print_warning_once (line 6) does not take (logger, msg, *args) as vLLM's do",
    ),
    "three-positional": (
        printing("logger, msg, extra, *args"),
        ": _print_warning_once (line 6) does not take (logger, msg, *args) as vLLM's do",
    ),
    "no-varargs": (
        printing("logger, msg, args", "logger.warning(msg, *args)").replace(
            "(self, msg, *args)\n", "(self, msg, args)\n"
        ),
        ": _print_warning_once (line 6) does not take (logger, msg, *args) as vLLM's do",
    ),
    "a-pair": (
        printing("logger, pair", "logger.warning(*pair)").replace("(self, msg, *args)\n", "(self, (msg, *args))\n"),
        ": _print_warning_once (line 6) does not take (logger, msg, *args) as vLLM's do",
    ),
    "positional-only": (
        printing("cls, /, logger, msg, *args"),
        ": _print_warning_once (line 6) does not take (logger, msg, *args) as vLLM's do",
    ),
    "not-a-level": (
        printing("logger, msg, *args", "logger.log_once(msg, *args)"),
        ": _print_warning_once (line 6) logs with `logger.log_once`, not a method of one level",
    ),
    "decorator-with-a-comment": (
        PRINTER.replace("@lru_cache\n", "@lru_cache  # once\n") + METHOD.replace("CALL", "pass"),
        ": _print_warning_once (line 6): its cache decorator shares its line with other code",
    ),
    "decorator-in-parentheses": (
        PRINTER.replace("@lru_cache\n", "@(\n    lru_cache\n)\n")
        + METHOD.replace("CALL", "_print_warning_once(self, msg, *args)"),
        ": _print_warning_once (line 8): its cache decorator shares its line with other code",
    ),
    "a-rendered-message": (
        calling("_print_warning_once(self, msg.upper(), *args)"),
        ": the call of _print_warning_once on line 11 " + NOT_OWN,
    ),
    "another-logger": (
        calling("_print_warning_once(self.parent, msg, *args)"),
        ": the call of _print_warning_once on line 11 " + NOT_OWN,
    ),
    "a-fourth-argument": (
        calling("_print_warning_once(self, msg, *args, msg)"),
        ": the call of _print_warning_once on line 11 is not `_print_warning_once(self, msg, *args)` as a statement",
    ),
    "arguments-not-spread": (
        calling("_print_warning_once(self, msg, xargs)"),
        ": the call of _print_warning_once on line 11 is not `_print_warning_once(self, msg, *args)` as a statement",
    ),
    "a-keyword": (
        calling("_print_warning_once(self, msg, *args, stacklevel=4)"),
        ": the call of _print_warning_once on line 11 is not `_print_warning_once(self, msg, *args)` as a statement",
    ),
    "a-module-level-call": (
        calling("_print_warning_once(self, msg, *args)") + "\n_print_warning_once(logger, msg, *args)\n",
        ": the call of _print_warning_once on line 13 is not in a function",
    ),
    "the-modules-logger": (
        calling("_print_warning_once(logger, msg, *args)"),
        ": the call of _print_warning_once on line 11 " + NOT_OWN,
    ),
    "other-arguments": (
        calling("_print_warning_once(self, msg, *other)"),
        ": the call of _print_warning_once on line 11 " + NOT_OWN,
    ),
    "a-changed-message": (
        calling("msg = str(msg)\n    _print_warning_once(self, msg, *args)"),
        ": the call of _print_warning_once on line 12 " + NOT_OWN,
    ),
    "no-varargs-of-its-own": (
        calling("_print_warning_once(self, msg, *args)").replace("(self, msg, *args):", "(self, msg, args):"),
        ": the call of _print_warning_once on line 11 " + NOT_OWN,
    ),
    "code-before-the-call": (
        calling("x = 1; _print_warning_once(self, msg, *args)"),
        ": the call on line 11 shares its line with other code",
    ),
    "code-after-the-call": (
        calling("_print_warning_once(self, msg, *args); x = 1"),
        ": the call on line 11 shares its line with other code",
    ),
    "twice": (
        calling("_print_warning_once(self, msg, *args)\n    _print_warning_once(self, msg, *args)"),
        ": warning_once calls a *_once cache twice",
    ),
    "a-printer-nothing-calls": (
        calling("_print_warning_once(self, msg, *args)")
        + "\n\n@lru_cache\ndef _print_info_once(logger, msg, *args):\n    logger.info(msg, *args, stacklevel=3)\n",
        ": nothing calls _print_info_once",
    ),
    "no-standard-library-import": (
        calling("_print_warning_once(self, msg, *args)").replace(
            "import logging\nfrom functools import lru_cache, partial\n", "from vllm.utils import lru_cache\n"
        ),
        ": it imports nothing from the standard library: no place for the patch's imports",
    ),
    "an-import-sharing-its-line": (
        calling("_print_warning_once(self, msg, *args)").replace("lru_cache, partial\n", "lru_cache; import os\n"),
        ": `from functools import lru_cache` shares its line with other code: give it a line of its own",
    ),
    "an-unused-import-sharing-its-line": (
        calling("_print_warning_once(self, msg, *args)")
        .replace("from functools import lru_cache, partial\n", "import functools; import os\n")
        .replace("@lru_cache", "@functools.lru_cache"),
        ": `import functools` shares its line with other code: give it a line of its own",
    ),
    "an-import-sharing-its-line-gains-a-name": (
        calling("_print_warning_once(self, msg, *args)").replace(
            "import logging\n", "import logging\nimport os; from collections.abc import Hashable\n"
        ),
        ": `from collections.abc import Hashable` shares its line with other code: give it a line of its own",
    ),
    "an-import-sharing-its-line-after-a-blank-one": (
        calling("_print_warning_once(self, msg, *args)").replace(
            "import logging\n", "import logging\n\nimport os; from collections.abc import Hashable\n"
        ),
        ": `from collections.abc import Hashable` shares its line with other code: give it a line of its own",
    ),
    "a-helper-name-defined": (
        calling("_print_warning_once(self, msg, *args)") + "\n\ndef _once_key():\n    pass\n",
        " defines _once_key already",
    ),
    "a-store-name-assigned": (
        calling("_print_warning_once(self, msg, *args)") + "\n_once_logged: dict = {}\n_ONCE_MAXSIZE = 1\n",
        " defines _ONCE_MAXSIZE already",
    ),
    "two-methods-keep-a-set": (
        "import logging\n_seen = set()\n\n\ndef info_once(self, msg, *args):\n    _seen.add((msg, args))\n\n\n"
        "def warning_once(self, msg, *args):\n    _seen.add((msg, args))\n",
        ": info_once, warning_once passes its arguments to a cache that is not a cached function of the module; "
        "patch it by hand",
    ),
    "a-set-beside-the-printer": (
        calling("_seen.add(args)\n    _print_warning_once(self, msg, *args)")
        + "\n\ndef info_once(self, msg, *args):\n    _seen.add(args)\n    _print_warning_once(self, msg, *args)\n"
        + "\n_seen = set()\n",
        ": warning_once, info_once still passes its arguments to a cache after the patch",
    ),
}


@pytest.mark.parametrize(("source", "says"), REFUSED.values(), ids=REFUSED.keys())
def test_what_cannot_be_patched_is_named_in_one_line(source: str, says: str) -> None:
    with pytest.raises(LoggerNotPatchable) as caught:
        patched(source, "my/logger.py")

    assert str(caught.value) == f"my/logger.py{says}"


def test_a_refusal_names_the_logger_module_when_no_file_is_given() -> None:
    with pytest.raises(LoggerNotPatchable) as caught:
        patched("import logging\n")

    assert str(caught.value) == "the logger module defines no *_once function or method: not vLLM's logger module"


def test_a_mutant_of_a_patch_whose_shape_changed_says_so() -> None:
    for mutant in PATCH_MUTANTS:
        with pytest.raises(ValueError, match=r"^the patched module has no `.+`: the patch's shape changed$"):
            mutant.apply("import logging\n")


@pytest.mark.parametrize("separator", ["\x0c", "\u2028", "\x85"], ids=["form-feed", "line-separator", "next-line"])
def test_a_character_str_splitlines_splits_at_and_python_does_not_moves_no_edit(separator: str) -> None:
    """A form feed between definitions (a page break) or U+2028 in a comment is not a line end to Python: the
    edits still land on the lines ast numbered."""
    source = "import functools\n" + BODY.replace("DECORATOR", "@functools.lru_cache")
    plain = patched(source.replace("\n\n\ndef warning_once", "  # page\n\n\ndef warning_once"))
    odd = patched(source.replace("\n\n\ndef warning_once", f"  # page{separator}\n\n\ndef warning_once"))

    assert odd == plain.replace("  # page\n", f"  # page{separator}\n")


def test_a_comment_after_the_call_or_an_import_is_no_code_sharing_its_line() -> None:
    commented = calling("_print_warning_once(self, msg, *args)  # type: ignore[arg-type]")
    fixed = patched(commented.replace("lru_cache, partial\n", "lru_cache, partial  # noqa\n"))

    assert fixed == patched(calling("_print_warning_once(self, msg, *args)")).replace(
        "_print_warning_once(self, msg, *args)\n", "_print_warning_once(self, msg, *args)  # type: ignore[arg-type]\n"
    )
