"""Branch steering: make every `if` on the way to a site take the branch the site needs.

`plan` reads each recorded test with `ast` and says what to patch (`Step`s: the guards apply them, `export-test`
writes them into its cases); a test it cannot steer makes the guard `unreached`.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from warnonce_guard.rule.site_row import Condition

_MISSING = object()


class CannotSteer(Exception):
    """A branch test that steering does not know how to force."""


@dataclass
class Patches:
    """Attribute patches applied for one guard, undone in reverse order when `undo` closes."""

    undo: ExitStack = field(default_factory=ExitStack)
    calls: dict[str, int] = field(default_factory=dict)

    def set(self, owner: Any, attr: str, value: Any) -> None:
        raw = owner.__dict__.get(attr, _MISSING) if hasattr(owner, "__dict__") else _MISSING
        if isinstance(owner, type) and callable(value):
            value = staticmethod(value)
        setattr(owner, attr, value)
        if raw is _MISSING:
            self.undo.callback(delattr, owner, attr)
        else:
            self.undo.callback(setattr, owner, attr, raw)

    def returning(self, owner: Any, attr: str, label: str, result: Any) -> None:
        def steered(*_args: Any, **_kwargs: Any) -> Any:
            self.calls[label] = self.calls.get(label, 0) + 1
            return result

        self.set(owner, attr, steered)


def _resolve_owner(expr: ast.expr, namespace: dict[str, Any]) -> tuple[Any, str]:
    """For `a.b.c`, the object `a.b` and the name `c`."""
    if isinstance(expr, ast.Attribute):
        return _evaluate(expr.value, namespace), expr.attr
    if isinstance(expr, ast.Name):
        raise CannotSteer(f"`{expr.id}` is a bare name; only attributes of modules and classes can be patched")
    raise CannotSteer(f"`{ast.unparse(expr)}` is not a dotted name")


def _evaluate(expr: ast.expr, namespace: dict[str, Any]) -> Any:
    try:
        return eval(compile(ast.Expression(expr), "<steering>", "eval"), namespace)
    except Exception as err:  # the expression refers to something steering cannot see
        raise CannotSteer(f"cannot evaluate `{ast.unparse(expr)}`: {err!r}") from None


def _other_than(container: Any) -> Any:
    """A value not in `container`: another member of the same enum if there is one."""
    members = list(container)
    if members and isinstance(members[0], enum.Enum):
        for member in type(members[0]):
            if member not in members:
                return member
    return object()


@dataclass(frozen=True)
class Step:
    """One patch a branch test needs: `owner.attr` returns `value` when called (`call`), or is `value`."""

    test: str  # what the test reads, as written: `torch.cpu._is_avx512_supported()`, `envs.FLAG`
    owner: Any
    attr: str
    value: Any
    call: bool


def _steps(expr: ast.expr, want: bool, namespace: dict[str, Any]) -> Iterator[Step]:
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        yield from _steps(expr.operand, not want, namespace)
    elif isinstance(expr, ast.BoolOp):
        every = isinstance(expr.op, ast.And) == want  # And->True and Or->False need every operand
        for operand in expr.values if every else expr.values[:1]:
            yield from _steps(operand, want, namespace)
    elif isinstance(expr, ast.Call) and not expr.args and not expr.keywords:
        yield Step(ast.unparse(expr), *_resolve_owner(expr.func, namespace), want, call=True)
    elif isinstance(expr, ast.Compare) and len(expr.ops) == 1 and isinstance(expr.left, ast.Call):
        yield _compare_step(expr, want, namespace)
    elif isinstance(expr, (ast.Attribute,)):
        yield Step(ast.unparse(expr), *_resolve_owner(expr, namespace), want, call=False)
    else:
        raise CannotSteer(f"no rule to steer `{ast.unparse(expr)}` to {want}")


def _compare_step(expr: ast.Compare, want: bool, namespace: dict[str, Any]) -> Step:
    op, right = expr.ops[0], _evaluate(expr.comparators[0], namespace)
    if isinstance(op, (ast.In, ast.NotIn)):
        inside = want == isinstance(op, ast.In)
        result = next(iter(right)) if inside else _other_than(right)
    elif isinstance(op, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
        same = want == isinstance(op, (ast.Eq, ast.Is))
        result = right if same else _other_than([right])
    else:
        raise CannotSteer(f"no rule to steer `{ast.unparse(expr)}` to {want}")
    call = expr.left
    assert isinstance(call, ast.Call)
    if call.args or call.keywords:
        raise CannotSteer(f"`{ast.unparse(call)}` takes arguments; steering patches only calls without any")
    return Step(ast.unparse(call), *_resolve_owner(call.func, namespace), result, call=True)


def plan(conditions: tuple[Condition, ...], namespace: dict[str, Any]) -> list[Step]:
    """The patches that make each branch test outside the handler take its wanted value, in order; `CannotSteer`
    names the first test no rule forces."""
    steps: list[Step] = []
    for condition in conditions:
        if not condition.in_handler:
            steps += _steps(ast.parse(condition.expr, mode="eval").body, condition.want, namespace)
    return steps


@contextmanager
def steered(conditions: tuple[Condition, ...], module: ModuleType) -> Iterator[Patches]:
    """Patch what the site's branch tests read so each takes the wanted value; undo on exit."""
    patches = Patches()
    with patches.undo:
        for step in plan(conditions, dict(vars(module))):
            if step.call:
                patches.returning(step.owner, step.attr, step.test, step.value)
            else:
                patches.set(step.owner, step.attr, step.value)
        yield patches
