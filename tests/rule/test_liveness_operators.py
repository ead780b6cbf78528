"""The liveness policy on operators: `not` of anything is a bool, and a list, dict or set on either side of an
operator (but `%`'s right, which formats) makes the result one again (or raises TypeError)."""

from __future__ import annotations

import pytest
from warnonce_guard.rule.liveness import EXCEPTION, UNHASHABLE, argument_kind_of_source


@pytest.mark.parametrize(
    ("argument", "kind"),
    [
        ("not e", None),  # a bool, whatever it negates
        ("not [e]", None),
        ("-e", EXCEPTION),  # any other unary operator carries its operand
        ("xs + [e]", UNHASHABLE),  # a list on the right
        ("[e] + xs", UNHASHABLE),
        ("s | {e}", UNHASHABLE),
        ("'%s' % [e]", None),  # formats the list: a str
        ("fmt % [e]", EXCEPTION),  # `fmt` is not known to be a str: the list may be kept as it is
    ],
)
def test_operators_are_judged_by_their_operands(argument: str, kind: str | None) -> None:
    assert argument_kind_of_source(argument, {"e"}) == kind
