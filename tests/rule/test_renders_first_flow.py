"""Renders-first (`caches.renders_first`) binds a helper's parameters as Python binds the call (a starred argument,
a keyword into `**kwargs`), follows helpers four calls deep (deeper, what is given is taken as kept), reads every
block of a body (else, finally, handlers, match cases: each may not run), finds the caches a module makes by
assignment (`name = lru_cache(...)(f)`, and its aliases), and names the `*_once` methods a logger has."""

from __future__ import annotations

import textwrap

import pytest
from warnonce_guard.caches.renders_first import leaking, once_methods, renders_first

from tests.toy import LOGGER_SOURCE

STOCK = LOGGER_SOURCE  # shaped like vLLM 0.33.0's: `@lru_cache` on `_print_*_once(logger, msg, *args)`
PRINTERS = STOCK[STOCK.index("@lru_cache\ndef _print_debug_once") : STOCK.index("def _debug_once")]
HELPERS = """\
_seen = set()


def _second(logger, first, second):
    _seen.add(second)


def _first(first, second=None):
    _seen.add(first)


def _rest(logger, msg, *rest):
    _seen.add(rest)


def _keywords(logger, msg, **kwargs):
    _seen.add(kwargs)


def _message(logger, msg, **kwargs):
    _seen.add(msg)


def _text(logger, text):
    _seen.add(text)


def _error(args):
    _seen.add(args)
    return ValueError("not logged")


def _print_warning_once(logger, msg, *args):
{body}


_print_debug_once = _print_info_once = _print_error_once = _print_warning_once


"""


def fixed(body: str) -> bool | None:
    return renders_first(STOCK.replace(PRINTERS, HELPERS.format(body=textwrap.indent(body, "    "))))


@pytest.mark.parametrize(
    ("body", "renders"),
    [
        ("_second(logger, *args)", False),  # a starred argument fills every parameter from its position
        ("prefix = ()\n_first(*prefix, args)", False),  # `first` is args whenever prefix is empty
        ("_first(*args)", False),
        ("_rest(logger, *args)", False),  # what the star spreads past the named parameters is `*rest`
        ("_rest(logger, msg % args, msg)", True),
        ("_keywords(logger, msg, extra=args)", False),  # a keyword no parameter is named after lands in **kwargs
        ("_keywords(logger, msg, extra=args, stacklevel=2)", False),  # a later clean one does not clean it
        ("_keywords(logger, msg, stacklevel=2)", True),
        ("_message(logger, msg, extra=args)", True),  # **kwargs took it: `msg` did not
        ("_text(logger, text=args)", False),  # a keyword binds the parameter it names
        ("_text(logger, text=msg % args)", True),
        ("text: str = msg % args\n_text(logger, text)", True),  # an annotated assignment binds as a plain one
        ("text: tuple = args\n_text(logger, text)", False),
    ],
)
def test_a_helper_is_given_what_python_binds_to_each_parameter(body: str, renders: bool) -> None:
    assert fixed(body) is renders


CHAIN = "def _h{n}(x):\n    return _h{next}(x)\n\n\n"
LAST = "def _h{n}(x):\n    return str(x)\n\n\n"
ENTRY = "_seen = set()\n\n\ndef _print_warning_once(logger, msg, *args):\n    _seen.add(_h1(args))\n\n\n"


@pytest.mark.parametrize(("helpers", "leaks"), [(1, []), (4, []), (5, ["_print_warning_once"])])
def test_helpers_are_followed_four_calls_deep_and_what_goes_deeper_is_taken_as_kept(
    helpers: int, leaks: list[str]
) -> None:
    chain = "".join(CHAIN.format(n=n, next=n + 1) for n in range(1, helpers)) + LAST.format(n=helpers)
    assert leaking(ENTRY + chain) == leaks


def test_a_helper_past_the_depth_keeps_what_it_is_given_even_when_nothing_is_returned() -> None:
    chain = "".join(CHAIN.format(n=n, next=n + 1) for n in range(1, 5)) + "def _h5(x):\n    _seen.clear()\n"
    entry = "_seen = set()\n\n\ndef _print_warning_once(logger, msg, *args):\n    _h1(args)\n\n\n"
    assert leaking(entry + chain) == ["_print_warning_once"]
    assert leaking(entry + chain.replace("return _h5(x)", "return str(x)")) == []  # four deep: read, it renders


@pytest.mark.parametrize(
    ("body", "renders"),
    [
        ("key = args\nif args:\n    pass\nelse:\n    key = msg\n_seen.add(key)", False),  # an else may not run
        ("try:\n    pass\nfinally:\n    _seen.add(args)", False),
        ("try:\n    text = msg % args\nexcept TypeError:\n    _seen.add(args)", False),
        ("match len(args):\n    case 0:\n        _seen.add(msg)\n    case _:\n        _seen.add(args)", False),
        ("key = args\nmatch len(args):\n    case 0:\n        key = msg\n_seen.add(key)", False),  # nor a case
        ("key = args\nwhile not key:\n    key = msg\n_seen.add(key)", False),
        ("if not args:\n    raise ValueError(msg)\n_seen.add(msg % args)", True),
        ("if not msg:\n    raise _error(args)\n_seen.add(msg % args)", False),  # what a raise evaluates is followed
        ("if msg:\n    pass\nelse:\n    _seen.add(args)", False),  # an else is read
        ("for arg in args:\n    pass\nelse:\n    _seen.add(args)", False),
        ("try:\n    pass\nexcept TypeError:\n    pass\nelse:\n    _seen.add(args)", False),
    ],
)
def test_every_block_of_a_body_is_read_and_one_that_may_not_run_keeps_what_came_before(
    body: str, renders: bool
) -> None:
    assert fixed(body) is renders


ASSIGNED = """\
import functools
from functools import lru_cache


def _emit(logger, msg, args):
    logger.warning(msg, *args)


def _note(logger, msg, args):
    logger.info(msg, *args)


_emit = functools.lru_cache(maxsize=None)(_emit)
_note = lru_cache(None)(_note)
_emit_again = _emit


def _print_warning_once(logger, msg, *args):
    _emit(logger, msg, args)


def _print_info_once(logger, msg, *args):
    _note(logger, msg, args)


def _print_error_once(logger, msg, *args):
    _emit_again(logger, msg, args)


def _print_debug_once(logger, msg, *args):
    _emit(logger, msg % args, ())
"""


@pytest.mark.parametrize(
    "imports",
    [
        "import functools\nfrom functools import lru_cache",
        "import functools as tools\nfrom functools import lru_cache as memo",
    ],
    ids=["as-written", "imported-as"],
)
def test_a_cache_made_by_assignment_and_its_alias_are_caches(imports: str) -> None:
    source = ASSIGNED.replace("import functools\nfrom functools import lru_cache", imports)
    if "memo" in imports:
        source = source.replace("functools.lru_cache(", "tools.lru_cache(").replace("= lru_cache(", "= memo(")
    assert leaking(source) == ["_print_warning_once", "_print_info_once", "_print_error_once"]


def test_a_loggers_once_methods_are_named_without_their_leading_underscores() -> None:
    assert once_methods(LOGGER_SOURCE) == ("debug_once", "info_once", "warning_once", "error_once")
    source = """\
class Logger:
    def _warning_once(self, msg):
        pass

    def XLA_once(self, msg):
        self._warning_once(msg)

    def warn(self, msg):
        pass
"""
    assert once_methods(source) == ("warning_once", "XLA_once")


@pytest.mark.parametrize("decorator", ["@lru_cache", "@lru_cache(maxsize=8)", "@lru_cache(None)", "@functools.cache"])
def test_a_printer_under_any_cache_decorator_keeps_what_it_is_given_bounded_or_not(decorator: str) -> None:
    source = STOCK.replace("@lru_cache\ndef _print_warning_once", f"{decorator}\ndef _print_warning_once")
    assert source != STOCK or decorator == "@lru_cache"
    assert leaking(f"import functools\n{source}") == leaking(STOCK)
    assert "_print_warning_once" in leaking(STOCK)


def test_what_a_once_method_takes_as_keywords_is_raw() -> None:
    source = "_seen = set()\n\n\ndef _print_warning_once(logger, msg, **kwargs):\n    _seen.add({body})\n"
    assert leaking(source.format(body="tuple(kwargs)")) == ["_print_warning_once"]
    assert leaking(source.format(body="msg")) == []
