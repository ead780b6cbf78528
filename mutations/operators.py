"""Mutation operators that put the warning_once leak back, only at kernel-import sites.

Each yields the site's whole `libcst.Try` (or `TryStar`) with exactly one of its calls changed, bound in a run to the
discovered sites' anchors (`Anchors`); each carries before/after examples that a generic test runs and the README shows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import UnionType
from typing import NamedTuple

import libcst as cst
from warnonce_guard.rule.literals import retarget_placeholder
from warnonce_guard.rule.site_row import Site
from warnonce_guard.rule.site_rule import ONCE_METHODS, TryNode, anchor, dotted, log_method, site_calls, walk
from warnonce_guard.rule.target import PACKAGE

# What each `*_once` method becomes when `once-dropped` removes the cache.
PLAIN_OF_ONCE = {method: method.removesuffix("_once") for method in ONCE_METHODS}
# Calls that turn the exception into a string and that `live-arg` strips off again.
_STRINGIFIERS = frozenset({"repr", "str"})

CallRewrite = Callable[[cst.Call, str], "cst.Call | None"]  # (site call, exception name) -> mutated call


class OperatorExample(NamedTuple):
    """A module source before and after one operator; `after` None means the operator must not fire."""

    before: str
    after: str | None


class Operator(NamedTuple):
    function: CallRewrite
    description: str
    examples: tuple[OperatorExample, ...]
    needs: str  # what a site's call must have for the operator to make a mutant of it (reports say it where not)


# ---- where the operators may fire -----------------------------------------------------------------

# Digest of a discovered site's try statement -> the package its module imports relative to.
Anchors = Mapping[str, str]


def current_package_for(try_node: TryNode, package: str) -> str:
    """Without anchors: a stand-in for the importing module's package, deep enough for every relative import.

    A relative import (`from . import _C`, `from .. import _C`) is then taken to point inside `package`,
    which is all `is_kernel_module` asks of a name besides its last component.
    """
    depth = max((len(n.relative) for n in walk(try_node.body) if isinstance(n, cst.ImportFrom)), default=1)
    return ".".join([package] + ["_"] * (depth - 1))


def once_calls(try_node: TryNode, package: str, anchors: Anchors | None = None) -> Iterator[tuple[cst.Call, str]]:
    """(call, NAME) for every `*_once` site call of this try, by the site rule; with `anchors`, only in a
    try discovery recorded."""
    current = current_package_for(try_node, package) if anchors is None else anchors.get(anchor(try_node))
    if current is None:
        return
    for found in site_calls(try_node, package, current):
        if log_method(found.call) in ONCE_METHODS:
            yield found.call, found.name


def anchors_of(sites: Iterable[Site]) -> dict[str, str]:
    """The anchors of the sites the operators may mutate (cached, in a function mutmut can run)."""
    return {site.anchor: site.current_package for site in sites if site.mutable and site.anchor}


def site_lines(sites: Iterable[Site]) -> dict[str, frozenset[int]]:
    """The import lines of the sites `anchors_of` anchors, by file: a function holding none of them gets no mutant
    (`seam.lean_generation` walks only those that do)."""
    lines: dict[str, set[int]] = {}
    for site in sites:
        if site.mutable and site.anchor:
            lines.setdefault(site.file, set()).add(site.import_line)
    return {file: frozenset(found) for file, found in lines.items()}


def stringified_arg(call: cst.Call, name: str, funcs: Iterable[str]) -> int | None:
    """Index (after the message) of the first positional `f(NAME)` argument with `f` in `funcs`."""
    if not call.args or call.args[0].keyword is not None or call.args[0].star:
        return None
    for index, arg in enumerate(call.args[1:]):
        if arg.keyword is not None or arg.star:
            return None  # a keyword or a *args: positions after it no longer match placeholders
        value = arg.value
        if (
            isinstance(value, cst.Call)
            and dotted(value.func) in funcs
            and len(value.args) == 1
            and not value.args[0].keyword
            and not value.args[0].star
            and isinstance(value.args[0].value, cst.Name)
            and value.args[0].value.value == name
        ):
            return index
    return None


def replace_arg(call: cst.Call, index: int, value: cst.BaseExpression) -> cst.Call:
    """`call` with the value of argument `index` (counted after the message) replaced, layout kept."""
    args = list(call.args)
    args[index + 1] = args[index + 1].with_changes(value=value)
    return call.with_changes(args=args)


# ---- the operators: each rewrites one site call, or returns None where it does not apply ------------


def eager_repr_revert(call: cst.Call, name: str) -> cst.Call | None:
    """`"...: %s", repr(e)` -> `"...: %r", e`: the original bug, message unchanged."""
    index = stringified_arg(call, name, {"repr"})
    if index is None:
        return None
    message = retarget_placeholder(call.args[0].value, index, "s", "r")
    if message is None:
        return None
    mutated = replace_arg(call, index, cst.Name(name))
    return mutated.with_changes(args=[mutated.args[0].with_changes(value=message), *mutated.args[1:]])


def live_arg(call: cst.Call, name: str) -> cst.Call | None:
    """`repr(e)` (or `str(e)`) -> `e`, placeholder kept: the exception object reaches the cache again."""
    index = stringified_arg(call, name, _STRINGIFIERS)
    return replace_arg(call, index, cst.Name(name)) if index is not None else None


def once_dropped(call: cst.Call, name: str) -> cst.Call | None:
    """`warning_once(...)` -> `warning(...)`: nothing cached, but the warning repeats."""
    func = call.func
    assert isinstance(func, cst.Attribute)  # log_method only names methods of an Attribute
    return call.with_changes(func=func.with_changes(attr=func.attr.with_changes(value=PLAIN_OF_ONCE[func.attr.value])))


def fstring_revert(call: cst.Call, name: str) -> cst.Call | None:
    """`f"...: {e!r}"` -> `"...: %r", e`: the f-string fix undone, the exception passed to the cache again.

    Applies to a message that is a plain f-string (no format spec, no nested quotes of its own kind)
    whose fields are the exception name or other simple expressions: each `{x!r}` becomes `%r`, each
    `{x}` or `{x!s}` `%s`, and the fields are passed as arguments, in order, the exception itself among them.
    """
    if not call.args or call.args[0].keyword is not None or len(call.args) > 1:
        return None
    message = call.args[0].value
    if not isinstance(message, cst.FormattedString) or "b" in message.prefix.lower():
        return None
    text, values = "", []
    for part in message.parts:
        if isinstance(part, cst.FormattedStringText):
            text += part.value.replace("%", "%%")
            continue
        if part.format_spec is not None or part.conversion not in (None, "r", "s"):
            return None
        text += "%r" if part.conversion == "r" else "%s"
        values.append(part.expression)
    if not any(isinstance(v, cst.Name) and v.value == name for v in values):
        return None
    prefix = message.prefix.lower().replace("f", "")
    literal = cst.SimpleString(f"{prefix}{message.start[len(message.prefix) :]}{text}{message.end}")
    return call.with_changes(args=[cst.Arg(literal), *(cst.Arg(v) for v in values)])


def mutate_try(
    rewrite: CallRewrite, try_node: TryNode, package: str = PACKAGE, anchors: Anchors | None = None
) -> Iterator[TryNode]:
    """The try with one of its site calls rewritten, once per call the rewrite applies to (mutmut's shape)."""
    for call, name in once_calls(try_node, package, anchors):
        mutated = rewrite(call, name)
        if mutated is not None:
            yield try_node.deep_replace(call, mutated)


_SIMPLE = """\
try:
    import vllm._C
except ImportError as e:
    logger.warning_once("Failed to import from vllm._C: %s", repr(e))
"""
_MULTI_LINE = """\
try:
    import vllm._C_AVX2  # noqa: F401
except ImportError as e:
    if ignored_msg not in e.msg:
        logger.warning_once(
            "Failed to import from vllm._C_AVX2: %s", repr(e)
        )
"""
_FSTRING = """\
try:
    import vllm._C
except ImportError as e:
    logger.warning_once(f"Failed to import {e!r}")
"""
_PLAIN_WARNING = """\
try:
    import vllm._C
except ImportError as e:
    logger.warning("Failed to import from vllm._C with %r", e)
"""

OPERATORS: dict[str, Operator] = {
    "eager-repr-revert": Operator(
        eager_repr_revert,
        "Reverts the fix: the placeholder formatting repr(e) becomes %r and the exception itself is passed.",
        (
            OperatorExample(_SIMPLE, _SIMPLE.replace(': %s", repr(e)', ': %r", e')),
            OperatorExample(_MULTI_LINE, _MULTI_LINE.replace(': %s", repr(e)', ': %r", e')),
            OperatorExample(_SIMPLE.replace("repr(e)", "str(e)"), None),
            OperatorExample(_PLAIN_WARNING, None),
        ),
        "a `repr(NAME)` argument formatted by a `%s` of a literal message",
    ),
    "live-arg": Operator(
        live_arg,
        "Passes the live exception instead of its repr()/str(), keeping the placeholder.",
        (
            OperatorExample(_SIMPLE, _SIMPLE.replace("repr(e)", "e")),
            OperatorExample(_MULTI_LINE, _MULTI_LINE.replace("repr(e)", "e")),
            OperatorExample(_SIMPLE.replace("repr(e)", "str(e)"), _SIMPLE.replace("repr(e)", "e")),
            OperatorExample(_PLAIN_WARNING, None),
        ),
        "a `repr(NAME)` or `str(NAME)` argument",
    ),
    "once-dropped": Operator(
        once_dropped,
        "Calls the uncached method (warning_once -> warning): no retention, but the warning repeats.",
        (
            OperatorExample(_SIMPLE, _SIMPLE.replace("warning_once", "warning")),
            OperatorExample(_MULTI_LINE, _MULTI_LINE.replace("warning_once", "warning")),
            OperatorExample(_SIMPLE.replace("warning_once", "info_once"), _SIMPLE.replace("warning_once", "info")),
            OperatorExample(_PLAIN_WARNING, None),
        ),
        "a `*_once` method called on a logger",
    ),
    "fstring-revert": Operator(
        fstring_revert,
        "Undoes an f-string fix: the f-string becomes a %-format message and the exception is passed.",
        (
            OperatorExample(_FSTRING, _FSTRING.replace('f"Failed to import {e!r}"', '"Failed to import %r", e')),
            OperatorExample(
                _FSTRING.replace("{e!r}", "{e} (100%)"),
                _FSTRING.replace('f"Failed to import {e!r}"', '"Failed to import %s (100%%)", e'),
            ),
            OperatorExample(_FSTRING.replace("{e!r}", "{e!r:>10}"), None),
            OperatorExample(_SIMPLE, None),
        ),
        "a plain f-string message that formats NAME",
    ),
}


def not_applied(site: Site, made: Iterable[str]) -> dict[str, str]:
    """The operators that made no mutant at a site (`made`: those that did), each with why: what it needs of the
    call, or that the call stands where no operator rewrites one (after the handler, or through a helper)."""
    where = {"after": "the call is after the handler", "handler": ""}.get(site.place, site.place)
    if not site.cached:
        where = f"the call is a plain {site.log_method}" if site.recognised else "the handler's call is not recognised"
    elif site.via:
        where = f"the call goes through `{site.via}`"
    return {
        name: f"{where}: no operator rewrites it there"
        if where
        else f"needs {op.needs.replace('NAME', site.exc_name or 'e')}"
        for name, op in OPERATORS.items()
        if name not in set(made)
    }


def operators_for(package: str = PACKAGE, anchors: Anchors | None = None) -> list[tuple[UnionType, Callable]]:
    """mutmut-shaped (node types, operator) pairs, in `OPERATORS` order, bound to `package` and `anchors`: each
    operator's for both kinds of `try` (mutmut asks `isinstance(node, types)`)."""
    return [
        (TryNode, functools.partial(mutate_try, op.function, package=package, anchors=anchors))
        for op in OPERATORS.values()
    ]


def describe_operators() -> list[tuple[str, str, str]]:
    """(name, one-line description, `before -> after`) per operator, from its first example."""
    rows = []
    for name, op in OPERATORS.items():
        example = op.examples[0]
        assert example.after is not None, f"{name}: the first example must show a mutant"
        before, after = _changed_line(example.before, example.after)
        rows.append((name, op.description, f"{before} -> {after}"))
    return rows


def operator_of(
    original: cst.CSTNode, mutated: cst.CSTNode, package: str = PACKAGE, anchors: Anchors | None = None
) -> str | None:
    """The name of the operator that turns `original` into `mutated` (e.g. a mutmut `Mutation`'s nodes), or None."""
    if not isinstance(original, TryNode):
        return None
    for name, op in OPERATORS.items():
        if any(c.deep_equals(mutated) for c in mutate_try(op.function, original, package, anchors)):
            return name
    return None


def _changed_line(before: str, after: str) -> tuple[str, str]:
    """The first line that differs between two sources, stripped."""
    for old, new in zip(before.splitlines(), after.splitlines(), strict=False):
        if old != new:
            return old.strip(), new.strip()
    raise ValueError("the example does not change any line")
