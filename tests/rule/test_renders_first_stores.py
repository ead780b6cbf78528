"""Renders-first (`rule.renders_first`) follows a raw argument into a container it stores to: one that outlives the
call (a module-level dict, an attribute of a module-level object) is a cache, a local one is not."""

from __future__ import annotations

import textwrap

import pytest
from warnonce_guard.caches.renders_first import renders_first

from tests.toy import LOGGER_SOURCE

STOCK = LOGGER_SOURCE  # shaped like vLLM 0.33.0's: `@lru_cache` on `_print_*_once(logger, msg, *args)`
PRINTERS = STOCK[STOCK.index("@lru_cache\ndef _print_debug_once") : STOCK.index("def _debug_once")]
STORE = """\
{container}


def _print_warning_once(logger, msg, *args):
    text = msg % args if args else msg
    {local}if {key} not in {seen}:
        {seen}[{key}] = True
        logger.warning(text, stacklevel=3)


_print_debug_once = _print_info_once = _print_error_once = _print_warning_once


"""


@pytest.mark.parametrize(
    ("container", "local", "seen", "key", "fixed"),
    [
        ("_seen = {}", "", "_seen", "text", True),  # keyed on the rendered text
        ("_seen = {}", "", "_seen", "(msg, args)", False),  # keyed on the raw arguments, for the process's life
        ("_state = object()", "", "_state.seen", "(msg, args)", False),  # an attribute of a module-level object
        ("", "seen = {}\n    ", "seen", "(msg, args)", True),  # a local dict: gone with the call
        ("_seen = {}", "seen = {}\n    ", "seen", "(msg, args)", True),  # a local shadowing nothing it is not
    ],
    ids=["text-key", "raw-key", "raw-attribute", "local", "local-beside-a-global"],
)
def test_a_raw_argument_stored_where_it_outlives_the_call_is_cached_and_stored_locally_is_not(
    container: str, local: str, seen: str, key: str, fixed: bool
) -> None:
    printers = STORE.format(container=container, local=local, seen=seen, key=key)
    assert renders_first(STOCK.replace(PRINTERS, printers)) is fixed


HELPERS = """\
_seen = set()
_handlers = [print]
_lock = threading.Lock()


@lru_cache
def _cached(logger, text):
    pass


def _key(msg, args):
    return (msg, args)


def _store(logger, key):
    _seen.add(key)


def _print_warning_once(logger, msg, *args):
{body}


_print_debug_once = _print_info_once = _print_error_once = _print_warning_once


"""


@pytest.mark.parametrize(
    ("body", "fixed"),
    [
        ("_seen.add((msg, args) if args else msg)", False),  # raw on one branch of a conditional expression
        ("_seen.add(msg if not args else args)", False),
        ("_seen.add(repr(args))", True),  # rendered by a builtin
        ("for arg in args:\n    _seen.add(arg)", False),  # a loop's target takes what it iterates over
        ("text = (msg, args)\nfor text in ['a']:\n    pass\n_seen.add(text)", False),  # a loop may not run
        ("text = (msg, args)\nif args:\n    text = msg % args\n_seen.add(text)", False),  # nor a branch
        (
            "text = (msg, args)\nwith _lock:\n    text = msg % args if args else msg\n_seen.add(text)",
            True,
        ),  # a with's does
        ("_seen.add(_key(msg, args))", False),  # a helper that returns the raw arguments
        ("_store(logger, (msg, args))", False),  # a helper that stores what it is given
        ("_store(logger, **{'key': (msg, args)})", False),  # given through **
        ("_cached(logger, text=(msg, args))", False),  # a cached function given them by keyword
        ("_seen.add((msg, args))\n_cached(logger, msg)", False),  # a later clean call does not undo a leak
        ("_seen.add((msg, args))\n_handlers[0](logger, msg)", False),
        ("_handlers[0](logger, (msg, args))", False),  # a callable not known here may keep them
        ("def later():\n    pass\n_seen.add((msg, args))", False),  # a nested function does not end the body
        ("seen = set()\nseen.add((msg, args))", True),  # a local set: gone with the call
        ("seen = {'k': set()}\nseen['k'].add((msg, args))", True),  # a set inside a local dict
        ("_seen.add((msg, args))\nnotify(msg)", False),  # a clean call of another module's function
        ("key = args.__reduce__()\n_seen.add(key)", False),  # a method of the raw arguments returns them
    ],
)
def test_a_raw_argument_is_followed_through_branches_loops_helpers_and_calls(body: str, fixed: bool) -> None:
    printers = HELPERS.format(body=textwrap.indent(body, "    "))
    assert renders_first(STOCK.replace(PRINTERS, printers)) is fixed
