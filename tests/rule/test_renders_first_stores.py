"""Renders-first (`rule.renders_first`) follows a raw argument into a container it stores to: one that outlives the
call (a module-level dict, an attribute of a module-level object) is a cache, a local one is not."""

from __future__ import annotations

import pytest
from warnonce_guard.rule.renders_first import renders_first

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
