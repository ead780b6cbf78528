"""The site rule: the one place that says what a kernel-import site is (docs/ARCHITECTURE.md, Site discovery).

A logger call (`*_once`: cached; a plain one: not cached) that passes NAME and stands directly in a handler
`except ImportError as NAME:` of a `try:` whose body imports a kernel module of the package (`site_calls`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import NamedTuple

import libcst as cst
from warnonce_guard.rule.liveness import EXCEPTION, IGNORED_KEYWORDS, ONCE_METHODS, argument_kind_of_source

PLAIN_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical"})
IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
# A kernel module's last component has a `C` token: _C, _C_AVX2, _moe_C_stable_libtorch, fs_io_C.
KERNEL_PATTERN = re.compile(r"(?:^|_)C(?:_|$)")
_NOT_RUN_BY_THE_HANDLER = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


class SiteCall(NamedTuple):
    """One site's logging call, with the handler it stands in and the exception name it logs."""

    call: cst.Call
    handler: cst.ExceptHandler
    name: str


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and every node below it, in source order (pre-order)."""
    yield node
    for child in node.children:
        yield from walk(child)


def dotted(node: cst.BaseExpression | cst.ImportFrom | None) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def names_a_kernel(name: str) -> bool:
    """The last component of a dotted module name matches `KERNEL_PATTERN`."""
    return KERNEL_PATTERN.search(name.rsplit(".", 1)[-1]) is not None


def is_kernel_module(name: str, package: str) -> bool:
    """A module inside `package` whose last component names a compiled kernel."""
    return name.startswith(package + ".") and names_a_kernel(name)


def resolve_relative(dots: int, base: str, current_package: str) -> str | None:
    """The absolute name of `from <dots><base> import ...` in `current_package`; None if it climbs above the top."""
    parts = current_package.split(".") if current_package else []
    up = dots - 1
    if up >= len(parts):
        return None
    anchor = ".".join(parts[: len(parts) - up])
    return f"{anchor}.{base}" if base else anchor


def imported_modules(stmt: cst.CSTNode, current_package: str) -> Iterator[str]:
    """Dotted names a statement imports, including `importlib.import_module("x")` calls."""
    for node in walk(stmt):
        if isinstance(node, cst.Import):
            yield from filter(None, (dotted(alias.name) for alias in node.names))
        elif isinstance(node, cst.ImportFrom):
            base = dotted(node.module) or ""
            if node.relative:
                resolved = resolve_relative(len(node.relative), base, current_package)
                if resolved is None:
                    continue
                base = resolved
            yield base
            if not isinstance(node.names, cst.ImportStar):
                yield from (f"{base}.{name}" for alias in node.names if (name := dotted(alias.name)))
        elif (
            isinstance(node, cst.Call)
            and (dotted(node.func) or "").endswith("import_module")
            and node.args
            and isinstance(node.args[0].value, cst.SimpleString)
        ):
            yield str(node.args[0].value.evaluated_value)


def kernel_import(try_node: cst.Try, package: str, current_package: str) -> str | None:
    """The first kernel module the `try` body imports, or None."""
    imported = (name for stmt in try_node.body.body for name in imported_modules(stmt, current_package))
    return next((name for name in imported if is_kernel_module(name, package)), None)


def catches_import_error(handler: cst.ExceptHandler) -> bool:
    """`except ImportError as e` (or a tuple or base class that includes it)."""
    if handler.type is None:
        return False
    types = [el.value for el in handler.type.elements] if isinstance(handler.type, cst.Tuple) else [handler.type]
    return any((dotted(t) or "").rsplit(".", 1)[-1] in IMPORT_ERRORS for t in types)


def handler_name(handler: cst.ExceptHandler) -> str | None:
    if handler.name is not None and isinstance(handler.name.name, cst.Name):
        return handler.name.name.value
    return None


def log_method(call: cst.Call) -> str | None:
    """The logger method a call invokes (`logger.warning_once(...)` -> warning_once)."""
    if isinstance(call.func, cst.Attribute):
        method = call.func.attr.value
        if method in ONCE_METHODS or method in PLAIN_METHODS:
            return method
    return None


def checked_arguments(call: cst.Call) -> list[cst.Arg]:
    """The arguments that reach a logger method (and a `*_once` cache): all positionals and keywords but `scope=`."""
    return [arg for arg in call.args if not (arg.keyword is not None and arg.keyword.value in IGNORED_KEYWORDS)]


def references(node: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.Name) and n.value == name for n in walk(node))


def passes(call: cst.Call, name: str) -> bool:
    """The call passes (something made of) `name` in an argument that reaches the logger."""
    return any(references(arg.value, name) for arg in checked_arguments(call))


def is_live(call: cst.Call, name: str) -> bool:
    """The liveness policy: an argument carries the exception `name` itself into the call."""
    render = cst.Module([]).code_for_node
    return any(argument_kind_of_source(render(arg.value), {name}) == EXCEPTION for arg in checked_arguments(call))


def _site_handlers(try_node: cst.Try, package: str, current_package: str) -> list[tuple[cst.ExceptHandler, str]]:
    if kernel_import(try_node, package, current_package) is None:
        return []
    return [(h, n) for h in try_node.handlers if (n := handler_name(h)) is not None and catches_import_error(h)]


def _calls_in(
    node: cst.CSTNode, name: str, handler: cst.ExceptHandler, package: str, current_package: str
) -> Iterator[SiteCall]:
    """Logging calls under `node` that the handler runs and that pass `name`, unless a nested site handler owns them."""
    if isinstance(node, _NOT_RUN_BY_THE_HANDLER):
        return
    if isinstance(node, cst.Call) and log_method(node) is not None and passes(node, name):
        yield SiteCall(node, handler, name)
    if isinstance(node, cst.Try):
        inner = _site_handlers(node, package, current_package)
        for child in node.children:
            owner = next(((h, n) for h, n in inner if child is h), None)
            for found in _calls_in(child, name, handler, package, current_package):
                if owner is None or not passes(found.call, owner[1]):
                    yield found
        return
    for child in node.children:
        yield from _calls_in(child, name, handler, package, current_package)


def site_calls(try_node: cst.Try, package: str, current_package: str) -> list[SiteCall]:
    """Every site call that belongs to this `try` (none unless it imports a kernel module), in source order."""
    found: list[SiteCall] = []
    for handler, name in _site_handlers(try_node, package, current_package):
        found += _calls_in(handler.body, name, handler, package, current_package)
    return found


def anchor(try_node: cst.Try) -> str:
    """A digest of the `try` statement's source: how the operators recognise a try that discovery recorded.

    It runs from the `try:` line to the last line of code: the comment and blank lines before and after are
    left out, as libcst gives them to the try or to a neighbour depending on how much of the file it parsed.
    """
    lines = cst.Module([]).code_for_node(try_node).splitlines()
    code = [i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")]
    text = "\n".join(lines[code[0] : code[-1] + 1])
    return hashlib.sha256(text.encode()).hexdigest()[:16]
