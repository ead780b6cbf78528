"""What a `*_once` call is, which of its arguments reach the cache, and the finding each one that can keep a
live object makes (of the kind the liveness policy, `rule.liveness`, gives it).

A call is any `<receiver>.<name>(...)` whose method name ends in one of vLLM's four (`debug_once`,
`info_once`, `warning_once`, `error_once`); bare-name calls (vLLM's own `_print_warning_once(...)`, the
cache itself) are not audited. Every positional argument is checked, the message included (a string
literal is safe anyway), and every keyword argument but `scope=`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from warnonce_guard.audit.findings import Finding
from warnonce_guard.rule.liveness import IGNORED_KEYWORDS, ONCE_METHODS, argument_kind


def once_level(call: ast.Call) -> str | None:
    """The method a `*_once` call invokes (`logger.warning_once(...)` -> warning_once), else None."""
    func = call.func
    if isinstance(func, ast.Attribute) and any(func.attr.endswith(m) for m in ONCE_METHODS):
        return func.attr
    return None


def call_arguments(call: ast.Call) -> Iterator[tuple[str, ast.expr]]:
    """(display text, value) for each argument to check: all positionals and every keyword but `scope=`."""
    for arg in call.args:
        yield ast.unparse(arg), arg
    for kw in call.keywords:
        if kw.arg in IGNORED_KEYWORDS:
            continue
        text = ast.unparse(kw.value)
        if kw.arg is None:  # `**kwargs`, wrapped so that it classifies as starred
            yield f"**{text}", ast.Starred(kw.value, ast.Load())
        else:
            yield f"{kw.arg}={text}", kw.value


def call_findings(
    call: ast.Call, level: str, file: str, qualname: str, live: frozenset[str], suppressed: str | None
) -> Iterator[Finding]:
    """A finding for each argument of the call that is not provably primitive, `live` naming the live exceptions."""
    for text, value in call_arguments(call):
        kind = argument_kind(value, live)
        if kind is not None:
            at = value if hasattr(value, "lineno") else call
            yield Finding(
                file,
                at.lineno,
                qualname,
                level,
                text,
                kind,
                column=at.col_offset + 1,
                end_line=at.end_lineno or at.lineno,
                end_column=(at.end_col_offset or at.col_offset) + 1,
                suppressed=suppressed,
            )
