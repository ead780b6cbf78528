"""An alias of a `*_once` method is found for the methods the audit is told of (a configured cache's own
`notice_once`, as an attribute or through getattr), not only for vLLM's."""

from __future__ import annotations

import ast

from warnonce_guard.audit.calls import aliases_in


def test_an_alias_of_a_configured_once_method_is_followed_and_of_no_method_told_of_is_not() -> None:
    tree = ast.parse("note = logger.notice_once\ngot = getattr(logger, 'notice_once')\nwarn = logger.warning_once\n")
    found = aliases_in(tree, None, frozenset({"notice_once"}))
    assert {name: reference.level for name, reference in found.items()} == {"note": "notice_once", "got": "notice_once"}
    assert {name: reference.level for name, reference in aliases_in(tree).items()} == {"warn": "warning_once"}
