"""The guards' pytest plugin (guards/conftest.py) orders the guards of an engine's session."""

from __future__ import annotations


def test_in_the_engines_sessions_the_mutated_functions_guards_run_first_then_by_node_id() -> None:
    from warnonce_guard.guards.conftest import guard_order

    guards = [("b", "t[2-b]"), (None, "t[0-none]"), ("a", "t[3-a]"), ("c", "t[1-c]"), ("a", "t[0-a]")]
    ordered = sorted(guards, key=lambda g: guard_order(g[0], g[1], frozenset({"a", "b"})))
    assert [nodeid for _, nodeid in ordered] == ["t[0-a]", "t[2-b]", "t[3-a]", "t[0-none]", "t[1-c]"]
