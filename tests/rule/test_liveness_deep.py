"""The liveness policy judges an expression of any depth: its walks are loops, never recursions that the interpreter's
recursion limit would end (`nox -s dogfood` ended on one: mutmut's trampolines add frames to every call)."""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from warnonce_guard.rule import liveness

# A chain this deep, judged with the recursion limit this far above the caller's frame: a walk of a frame (or, under
# mutmut, a few) per level fails, a loop passes; a few hundred levels keep the test fast under mutmut's trampolines.
DEPTH = 400
HEADROOM = 120


def _frames() -> int:
    frame, count = sys._getframe(), 0
    while frame is not None:
        frame, count = frame.f_back, count + 1
    return count


@contextmanager
def _shallow_stack() -> Iterator[None]:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(_frames() + HEADROOM)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def _chain(first: ast.expr, link: Callable[[ast.expr], ast.expr]) -> ast.expr:
    node = first
    for _ in range(DEPTH):
        node = link(node)
    return node


def _name(name: str) -> ast.Name:
    return ast.Name(name, ast.Load())


def _plus(right: str) -> Callable[[ast.expr], ast.expr]:
    return lambda node: ast.BinOp(node, ast.Add(), _name(right))


def _percent(node: ast.expr) -> ast.expr:
    return ast.BinOp(node, ast.Mod(), _name("a"))


def _format(node: ast.expr) -> ast.expr:
    return ast.Call(ast.Attribute(node, "format", ast.Load()), [_name("a")], [])


@pytest.mark.parametrize(
    ("first", "link", "kind"),
    [
        (_name("e"), _plus("a"), liveness.EXCEPTION),  # the exception at the bottom of `e + a + a ...`
        (_name("a"), _plus("b"), "expression"),
        (ast.Constant(1), lambda node: ast.BinOp(node, ast.Add(), ast.Constant(2)), None),
        (ast.Constant("%s"), _percent, None),  # `"%s" % a % a ...`: a str, formatted
        (ast.Constant("{}"), _format, None),  # `"{}".format(a).format(a) ...`: a str
        (_name("x"), _format, "call"),  # the receiver is no str: not known to be one
        (ast.List([], ast.Load()), _plus("a"), liveness.UNHASHABLE),  # `[] + a + a ...`: a list, or TypeError
        (_name("e"), lambda node: ast.Tuple([_name("a"), node], ast.Load()), liveness.EXCEPTION),
        (_name("a"), lambda node: ast.UnaryOp(ast.USub(), node), "expression"),
    ],
)
def test_an_expression_deeper_than_the_recursion_limit_is_judged(
    first: ast.expr, link: Callable[[ast.expr], ast.expr], kind: str | None
) -> None:
    chain = _chain(first, link)
    with _shallow_stack():
        judged = liveness.argument_kind(chain, {"e"})
    assert judged == kind


def test_an_attribute_chain_deeper_than_the_recursion_limit_has_its_dotted_name() -> None:
    chain = _chain(_name("a"), lambda node: ast.Attribute(node, "b", ast.Load()))
    with _shallow_stack():
        name = liveness.dotted_name(chain)
    assert name == "a" + ".b" * DEPTH
    assert liveness.dotted_name(ast.Attribute(ast.Call(_name("f"), [], []), "b", ast.Load())) is None


def test_a_lambda_deep_in_a_chain_still_shadows_the_live_name() -> None:
    shadowing = ast.parse("lambda e: e", mode="eval").body
    plain, carrying = _chain(shadowing, _plus("a")), _chain(shadowing, _plus("e"))
    with _shallow_stack():
        judged = liveness.carries(plain, {"e"}), liveness.carries(carrying, {"e"})
    assert judged == (False, True)
