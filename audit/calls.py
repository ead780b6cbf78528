"""What a once-cache call is, which of its arguments reach which cache, and the finding each one that can keep a
live object (or make the call raise) makes, of the kind the liveness policy (`rule.liveness`) gives it.

A call is a method call, `getattr(<receiver>, "<name>")(...)`, a call of a name the module binds to one
(`Aliases`), `functools.partial` included, or a call of a cached function (docs/reference.md, The audit). Which
cache it reaches, and so which of its arguments and keywords the cache gets, is `audit.receivers`' answer from the
model of every cache (`caches.model`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from warnonce_guard.audit.findings import Finding
from warnonce_guard.audit.fixes import MESSAGE_FIX, Fix, Span, argument_fixes
from warnonce_guard.audit.receivers import Receivers
from warnonce_guard.audit.rules import BY_KIND, INSTANCE, RENDERED
from warnonce_guard.caches.model import DEFAULT_MODEL, Cache
from warnonce_guard.rule.liveness import EXCEPTION, KEYWORD, argument_kind, dotted_name

_PARTIALS = frozenset({"partial", "functools.partial"})
_METHODS = DEFAULT_MODEL.methods  # the `*_once` methods of every logger row of the table


@dataclass(frozen=True)
class Reference:
    """A `*_once` method as a value: which one, how many positional arguments a partial binds before the call's, and
    the logger it is a method of (as written)."""

    level: str
    bound: int = 0
    receiver: ast.expr | None = None


Aliases = dict[str, Reference]  # dotted name (`warn`, `self._warn`) -> the method it holds


def _once_name(name: str, methods: frozenset[str] = _METHODS) -> bool:
    """One of the methods (or its private name, `_warning_once`), never a name that merely ends like one."""
    return name in methods or name.removeprefix("_") in methods


def _getattr_once(node: ast.expr, methods: frozenset[str] = _METHODS) -> str | None:
    """`getattr(logger, "warning_once")` -> warning_once."""
    if isinstance(node, ast.Call) and dotted_name(node.func) == "getattr" and len(node.args) == 2 and not node.keywords:
        name = node.args[1]
        if isinstance(name, ast.Constant) and isinstance(name.value, str) and _once_name(name.value, methods):
            return name.value
    return None


def _is_partial(node: ast.Call) -> bool:
    return dotted_name(node.func) in _PARTIALS and bool(node.args) and not isinstance(node.args[0], ast.Starred)


def reference(node: ast.expr, aliases: Aliases, methods: frozenset[str] = _METHODS) -> Reference | None:
    """The `*_once` method an expression evaluates to (not calls), or None."""
    if isinstance(node, ast.Attribute) and _once_name(node.attr, methods):
        return Reference(node.attr, 0, node.value)
    if (level := _getattr_once(node, methods)) is not None:
        assert isinstance(node, ast.Call)
        return Reference(level, 0, node.args[0])
    if (name := dotted_name(node)) is not None and name in aliases:
        return aliases[name]
    if isinstance(node, ast.Call) and _is_partial(node):
        inner = reference(node.args[0], aliases, methods)
        if inner is not None:
            return Reference(inner.level, inner.bound + len(node.args) - 1, inner.receiver)
    return None


def aliases_in(tree: ast.AST, before: Aliases | None = None, methods: frozenset[str] = _METHODS) -> Aliases:
    """Every name or attribute the module (or a piece of it, after the pieces that found `before`) assigns a `*_once`
    method to, in source order: `w = warn` follows `warn`."""
    found: Aliases = dict(before or {})
    assignments = [n for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.NamedExpr))]
    for node in sorted(assignments, key=lambda n: (n.lineno, n.col_offset)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is None or (held := reference(node.value, found, methods)) is None:
            continue
        for target in targets:
            if (name := dotted_name(target)) is not None:
                found[name] = held
    return found


@dataclass(frozen=True)
class OnceCall:
    """One call that reaches a once-cache: the method (or function), how it is shown, the arguments the cache gets,
    and the caches it may reach."""

    node: ast.Call
    level: str  # the method (`warning_once`) or the cached function (`warn_once`) called
    shown: str  # in a finding's message: `logger.warning_once(...)`, `warn(...) (warning_once)`
    args: list[ast.expr]  # positional arguments, from the message on unless `bound`
    keywords: list[ast.keyword]
    bound: int  # positional arguments a partial bound before these (the message among them when > 0)
    caches: tuple[Cache, ...] = ()  # the rows the call may reach
    known: bool = True  # the caches are the call's own (its receiver followed to them), not every row with the method


def once_call(
    call: ast.Call, aliases: Aliases, receivers: Receivers | None = None, scopes: tuple[ast.AST, ...] = ()
) -> OnceCall | None:
    """The call as a call of a once-cache (a partial of a `*_once` method included), else None; `scopes` are the
    functions it is made in (where its receiver's name is looked up first)."""
    receivers = receivers or Receivers()
    methods = receivers.model.methods
    func = call.func
    if _is_partial(call) and (held := reference(call.args[0], aliases, methods)) is not None:
        shown = f"{ast.unparse(func)}({ast.unparse(call.args[0])}, ...)"
        caches, known = receivers.caches(held.receiver, held.level, scopes)
        return OnceCall(call, held.level, shown, call.args[1:], call.keywords, held.bound, caches, known)
    held = reference(func, aliases, methods)
    if held is not None:
        text = ast.unparse(func)
        shown = f"{text}(...)" if text.endswith(held.level) else f"{text}(...) ({held.level})"
        caches, known = receivers.caches(held.receiver, held.level, scopes)
        return OnceCall(call, held.level, shown, call.args, call.keywords, held.bound, caches, known)
    row = receivers.function(func, scopes)
    if row is None:
        return None
    name = dotted_name(func) or ""
    return OnceCall(call, name.rpartition(".")[2], f"{name}(...)", call.args, call.keywords, 0, (row,), True)


def _span(node: ast.expr | ast.keyword | ast.Call) -> Span:
    end = node.end_col_offset if node.end_col_offset is not None else node.col_offset
    return Span(node.lineno, node.col_offset + 1, node.end_lineno or node.lineno, end + 1)


def _fixes(once: OnceCall) -> dict[int, Fix]:
    """The fix for each positional argument (by index into `once.args`) that formatting first can fix: the message
    and its %-arguments, where every cache the call may reach takes `(msg, *args)`; else the message alone."""
    if once.bound or not once.args or any(isinstance(a, ast.Starred) for a in once.args):
        return {}
    if not all(c.percent for c in once.caches):
        messages = {c.signature.positional.index(c.message) for c in once.caches if c.message in c.signature.positional}
        return {messages.pop(): MESSAGE_FIX} if len(messages) == 1 else {}
    message, fixes = once.args[0], {0: MESSAGE_FIX}
    if isinstance(message, ast.Constant) and isinstance(message.value, str):
        found = argument_fixes(message.value, len(once.args) - 1, _span(message))
        fixes |= {index + 1: fix for index, fix in found.items()}  # the message is argument 0
    return fixes


KEPT, TEXT, SKIPPED, RAISES = "kept", "text", "skipped", "raises"


def fate(cache: Cache, position: int | None, keyword: str | None, positional: int | None) -> str:
    """What becomes of one argument of a call of `cache`: `kept` by the cache, only its `text` kept (the cache renders
    first), `skipped` (a parameter that never reaches it, or one held anyway), or the call `raises` TypeError.

    `position` is a positional argument's index (None: unpacked with `*`, or a keyword); `keyword` a keyword's name
    (`**` for unpacked keywords); `positional` how many positional arguments come before any unpacked one (None:
    unknown, there is one)."""
    signature = cache.signature
    parameter = None
    if keyword is not None and keyword != "**":
        parameter = signature.parameter_named(keyword)
        if parameter is None:
            return RAISES
        given = signature.positional.index(parameter) if parameter in signature.positional else None
        if given is not None and positional is not None and given < positional:
            return RAISES  # given twice: by position and by keyword
    elif position is not None:
        parameter = signature.parameter_at(position)
    if parameter is not None and (parameter in cache.uncached or parameter in cache.held):
        return SKIPPED
    return TEXT if cache.renders_first else KEPT


def _bound(cache: Cache, argument: _Argument) -> str | None:
    """The parameter of `cache`'s call an argument binds (None: unknown, or none; `**x`: `**kwargs`, if any)."""
    if argument.keyword is not None:
        return cache.signature.parameter_named(argument.keyword)
    return cache.signature.parameter_at(argument.position) if argument.position is not None else None


def _as_tuple(value: ast.expr) -> ast.expr:
    """A list or set display as the tuple of its items (what a `tupled` parameter's cache gets); else itself."""
    if isinstance(value, ast.List | ast.Set):
        return ast.copy_location(ast.Tuple(elts=value.elts, ctx=ast.Load()), value)
    return value


@dataclass(frozen=True)
class _Argument:
    text: str  # as a finding shows it: `e`, `*xs`, `**kw`, `name=e`
    value: ast.expr | ast.keyword  # what is classified (a keyword the cache refuses: the keyword)
    position: int | None
    keyword: str | None
    fix: Fix | None


def _arguments(once: OnceCall) -> list[_Argument]:
    fixes = _fixes(once)
    found = []
    starred = False
    for index, arg in enumerate(once.args):
        starred = starred or isinstance(arg, ast.Starred)
        position = None if starred else once.bound + index
        found.append(_Argument(ast.unparse(arg), arg, position, None, fixes.get(index)))
    for kw in once.keywords:
        text = ast.unparse(kw.value)
        if kw.arg is None:  # `**kwargs`, wrapped so that it classifies as starred
            found.append(_Argument(f"**{text}", ast.Starred(kw.value, ast.Load()), None, "**", None))
        else:
            message = all(kw.arg == c.message for c in once.caches)  # `msg=x`: formatted as a message is
            found.append(_Argument(f"{kw.arg}={text}", kw, None, kw.arg, MESSAGE_FIX if message else None))
    return found


def describe(caches: tuple[Cache, ...], known: bool) -> str:
    """The caches a finding is about, for its message."""
    shown = "; ".join(cache.describe() for cache in caches)
    if known:
        return shown if len(caches) == 1 else f"the cache it reaches ({shown})"
    return "the cache of whichever logger it is (its logger is not followed from this file to a known one)"


def refused_by(caches: tuple[Cache, ...], known: bool, level: str, alone: bool) -> str:
    """What refuses a keyword, with the calls' signatures, for its message: the one cache's call, or all those the
    call may reach (`alone`: each refuses this keyword; else none takes it together with the call's others)."""
    if known and len(caches) == 1:
        return f"{caches[0].home}'s {level} does not take (it takes {caches[0].signature.text})"
    signatures = "; ".join(f"{c.home}'s: {c.signature.text}" for c in caches)
    which = "none of the calls it may be" if known else "no logger's call it may be (the logger is not known here)"
    together = "" if alone else " with the call's other keywords"
    return f"{which} takes it{together} ({signatures})"


def _refused(once: OnceCall, arguments: list[_Argument], positional: int | None) -> dict[int, tuple[Cache, ...]]:
    """For each keyword argument (by index) some cache's call refuses, the caches that refuse it."""
    found = {}
    for index, argument in enumerate(arguments):
        if argument.keyword is not None:
            refusing = tuple(c for c in once.caches if fate(c, None, argument.keyword, positional) == RAISES)
            if refusing:
                found[index] = refusing
    return found


def call_findings(
    once: OnceCall,
    file: str,
    qualname: str,
    live: frozenset[str],
    unhashable: frozenset[str] = frozenset(),
    instance: str | None = None,
) -> Iterator[Finding]:
    """A finding for each argument of the call that is not provably primitive (or that makes it raise), by the caches
    it may reach: `live` names the live exceptions, `unhashable` the names bound only to values that cannot be hashed
    (`rule.liveness.unhashable_names`), `instance` the name of the instance whose method makes the call (`self`)."""
    positional = None if any(isinstance(a, ast.Starred) for a in once.args) else once.bound + len(once.args)
    arguments = _arguments(once)
    refused = _refused(once, arguments, positional)
    refusing = {c.key for group in refused.values() for c in group}
    takers = tuple(c for c in once.caches if c.key not in refusing)  # the caches whose call takes every keyword
    raising: dict[int, bool] = {}  # the keywords reported as making the call raise: True when each cache refuses it
    if not takers:
        raising = {i: True for i, group in refused.items() if len(group) == len(once.caches)}
        if not raising and refused:  # no cache takes them together: the keyword most of them refuse
            raising = {max(refused, key=lambda i: len(refused[i])): False}
    caches = takers or once.caches  # with no call taking it, what each would keep once the keyword is dropped
    for index, argument in enumerate(arguments):
        fates = [fate(c, argument.position, argument.keyword, positional) for c in caches]
        kept = tuple(c for c, f in zip(caches, fates, strict=True) if f == KEPT)
        texted = tuple(c for c, f in zip(caches, fates, strict=True) if f == TEXT)
        cache = describe(kept or texted, once.known)
        value = argument.value
        if index in raising:
            kind: str | None = KEYWORD
            cache = refused_by(once.caches, once.known, once.level, raising[index])
        elif not (kept or texted):
            continue
        else:
            if isinstance(value, ast.keyword):
                value = value.value
            if kept and all(_bound(c, argument) in c.tupled for c in kept):
                value = _as_tuple(value)  # `ranks=[0]`: the cache gets tuple(ranks)
            kind = argument_kind(value, live, unhashable)
            its_own = kind == "name" and isinstance(value, ast.Name) and value.id == instance
            if its_own and kept and not any(c.bounded for c in kept):  # every cache it may reach keeps it for good
                kind = INSTANCE
            if not kept:  # only the rendered text is kept: a live exception is safe, and said so
                kind = RENDERED if kind == EXCEPTION else None
        if kind is None:
            continue
        node = value if kind != KEYWORD else argument.value
        span = _span(node if hasattr(node, "lineno") else once.node)  # `**x` is wrapped: the call's
        yield Finding(
            file,
            span.line,
            qualname,
            once.level,
            argument.text,
            kind,
            column=span.column,
            end_line=span.end_line,
            end_column=span.end_column,
            call=once.shown,
            fix=argument.fix if BY_KIND[kind].fixable else None,
            cache=cache,
        )
