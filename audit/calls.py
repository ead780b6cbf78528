"""What a `*_once` call is, which of its arguments reach the cache, and the finding each one that can keep a
live object (or make the call raise) makes, of the kind the liveness policy (`rule.liveness`) gives it.

A call is a method call, `getattr(<receiver>, "<name>")(...)`, or a call of a name the module binds to one
(`Aliases`), `functools.partial` included (docs/reference.md, The audit).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from warnonce_guard.audit.findings import Finding
from warnonce_guard.audit.fixes import MESSAGE_FIX, Fix, Span, argument_fixes
from warnonce_guard.audit.rules import BY_KIND
from warnonce_guard.rule.liveness import (
    IGNORED_KEYWORDS,
    KEYWORD,
    ONCE_KEYWORDS,
    ONCE_METHODS,
    argument_kind,
    dotted_name,
)

_PARTIALS = frozenset({"partial", "functools.partial"})


@dataclass(frozen=True)
class Reference:
    """A `*_once` method as a value: which one, and how many positional arguments a partial binds before the call's."""

    level: str
    bound: int = 0


Aliases = dict[str, Reference]  # dotted name (`warn`, `self._warn`) -> the method it holds


def _once_name(name: str) -> bool:
    return any(name.endswith(method) for method in ONCE_METHODS)


def _getattr_once(node: ast.expr) -> str | None:
    """`getattr(logger, "warning_once")` -> warning_once."""
    if isinstance(node, ast.Call) and dotted_name(node.func) == "getattr" and len(node.args) == 2 and not node.keywords:
        name = node.args[1]
        if isinstance(name, ast.Constant) and isinstance(name.value, str) and _once_name(name.value):
            return name.value
    return None


def _is_partial(node: ast.Call) -> bool:
    return dotted_name(node.func) in _PARTIALS and bool(node.args) and not isinstance(node.args[0], ast.Starred)


def reference(node: ast.expr, aliases: Aliases) -> Reference | None:
    """The `*_once` method an expression evaluates to (not calls), or None."""
    if isinstance(node, ast.Attribute) and _once_name(node.attr):
        return Reference(node.attr)
    if (level := _getattr_once(node)) is not None:
        return Reference(level)
    if (name := dotted_name(node)) is not None and name in aliases:
        return aliases[name]
    if isinstance(node, ast.Call) and _is_partial(node) and (inner := reference(node.args[0], aliases)) is not None:
        return Reference(inner.level, inner.bound + len(node.args) - 1)
    return None


def aliases_in(tree: ast.AST, before: Aliases | None = None) -> Aliases:
    """Every name or attribute the module (or a piece of it, after the pieces that found `before`) assigns a `*_once`
    method to, in source order: `w = warn` follows `warn`."""
    found: Aliases = dict(before or {})
    assignments = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.NamedExpr))]
    for node in sorted(assignments, key=lambda n: (n.lineno, n.col_offset)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is None or (held := reference(node.value, found)) is None:
            continue
        for target in targets:
            if (name := dotted_name(target)) is not None:
                found[name] = held
    return found


@dataclass(frozen=True)
class OnceCall:
    """One call that reaches a `*_once` cache: the method, how it is shown, and the arguments the cache gets."""

    node: ast.Call
    level: str
    shown: str  # in a finding's message: `logger.warning_once(...)`, `warn(...) (warning_once)`
    args: list[ast.expr]  # positional arguments, from the message on unless `bound`
    keywords: list[ast.keyword]
    bound: int  # positional arguments a partial bound before these (the message among them when > 0)


def once_call(call: ast.Call, aliases: Aliases) -> OnceCall | None:
    """The call as a `*_once` call (a partial of one included), else None."""
    func = call.func
    if _is_partial(call) and (held := reference(call.args[0], aliases)) is not None:
        shown = f"{ast.unparse(func)}({ast.unparse(call.args[0])}, ...)"
        return OnceCall(call, held.level, shown, call.args[1:], call.keywords, held.bound)
    held = reference(func, aliases)
    if held is None:
        return None
    text = ast.unparse(func)
    shown = f"{text}(...)" if text.endswith(held.level) else f"{text}(...) ({held.level})"
    return OnceCall(call, held.level, shown, call.args, call.keywords, held.bound)


def _span(node: ast.expr | ast.keyword | ast.Call) -> Span:
    end = node.end_col_offset if node.end_col_offset is not None else node.col_offset
    return Span(node.lineno, node.col_offset + 1, node.end_lineno or node.lineno, end + 1)


def _fixes(once: OnceCall) -> dict[int, Fix]:
    """The fix for each positional argument (by index into `once.args`) that formatting first can fix."""
    if once.bound or not once.args or any(isinstance(a, ast.Starred) for a in once.args):
        return {}
    message, fixes = once.args[0], {0: MESSAGE_FIX}
    if isinstance(message, ast.Constant) and isinstance(message.value, str):
        found = argument_fixes(message.value, len(once.args) - 1, _span(message))
        fixes |= {index + 1: fix for index, fix in found.items()}  # the message is argument 0
    return fixes


def checked(once: OnceCall) -> Iterator[tuple[str, ast.expr | ast.keyword, str | None, Fix | None]]:
    """(display text, value, kind if the argument makes the call raise whatever its value, fix) for each argument
    to check; a keyword the methods do not take is its `ast.keyword`."""
    fixes = _fixes(once)
    for index, arg in enumerate(once.args):
        yield ast.unparse(arg), arg, None, fixes.get(index)
    for kw in once.keywords:
        text = ast.unparse(kw.value)
        if kw.arg is None:  # `**kwargs`, wrapped so that it classifies as starred
            yield f"**{text}", ast.Starred(kw.value, ast.Load()), None, None
        elif kw.arg in IGNORED_KEYWORDS:
            continue
        elif kw.arg not in ONCE_KEYWORDS or once.args or once.bound:  # `msg=` after a message: given twice
            yield f"{kw.arg}={text}", kw, KEYWORD, None
        else:
            yield f"{kw.arg}={text}", kw.value, None, MESSAGE_FIX


def call_findings(
    once: OnceCall, file: str, qualname: str, live: frozenset[str], unhashable: frozenset[str] = frozenset()
) -> Iterator[Finding]:
    """A finding for each argument of the call that is not provably primitive, `live` naming the live exceptions
    and `unhashable` the names bound only to values that cannot be hashed (`rule.liveness.unhashable_names`)."""
    for text, value, raises, fix in checked(once):
        kind = raises or (argument_kind(value, live, unhashable) if isinstance(value, ast.expr) else None)
        if kind is not None:
            span = _span(value if hasattr(value, "lineno") else once.node)  # `**x` is wrapped: the call's
            yield Finding(
                file,
                span.line,
                qualname,
                once.level,
                text,
                kind,
                column=span.column,
                end_line=span.end_line,
                end_column=span.end_column,
                call=once.shown,
                fix=fix if BY_KIND[kind].fixable else None,
            )
