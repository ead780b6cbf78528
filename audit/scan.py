"""Scanning one module: every finding of its source text, following which names hold a live exception where.

The liveness policy (`rule.liveness`) says what an argument is, given the names bound to a live exception; this
module tracks those names through the statements. Every file is a result: one that does not parse is WOG000.
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext

from warnonce_guard.audit import grammar
from warnonce_guard.audit.calls import Aliases, OnceCall, aliases_in, call_findings, once_call
from warnonce_guard.audit.findings import Finding, numbered, unchecked
from warnonce_guard.audit.grammar import DoesNotParse, modules
from warnonce_guard.audit.pragmas import MENTIONED, Pragmas, Span
from warnonce_guard.audit.receivers import Receivers
from warnonce_guard.caches.model import DEFAULT_MODEL, ONCE, Model
from warnonce_guard.rule.liveness import dotted_name, handler_binds, params, rebind, unhashable_names

_NOT_AN_INSTANCE = frozenset({"staticmethod", "classmethod"})  # a method so decorated has no `self`


def needs_parse(source: str, model: Model = DEFAULT_MODEL) -> bool:
    """Whether the source may hold a once-cache call (`Model.holds_call`; else it is neither parsed nor compiled)."""
    return model.holds_call(source)


@functools.cache
def _referenced(methods: frozenset[str]) -> re.Pattern[str]:
    """A cache's method named but not called right there (`warn = logger.warning_once`, `getattr(x, "info_once")`;
    a method not named `*_once` as an attribute: `w = cache.warn`): only then is the module searched for aliases."""
    once = "|".join(re.escape(m) for m in sorted(methods) if m.endswith(ONCE))
    other = "|".join(re.escape(m) for m in sorted(methods) if not m.endswith(ONCE))
    either = [f"(?<![\\w])_?(?:{once})" if once else "", f"\\.(?:{other})" if other else ""]
    return re.compile(rf"(?:{'|'.join(e for e in either if e)})\b(?!\s*\()")


_CLASS_BODY = "<class body>"  # `_Scanner.instance` while a class body is in hand
# How much deeper than Python's recursion limit a file whose expressions nest deeply is scanned (ast.parse itself
# reads expressions about 3 times as deep as the limit; scanning takes a few frames per level).
DEEPER = 20


class _Scanner:
    """Walks statements in order, tracking which names hold a live exception, and records findings."""

    def __init__(self, file: str, source: str, aliases: Aliases, receivers: Receivers) -> None:
        self.file = file
        self.lines = source.split("\n")
        self.raw: list[Finding] = []
        self.pragmas = Pragmas(file, self.lines)
        self.aliases = aliases
        self.receivers = receivers  # which cache each call reaches, from the module's imports and bindings
        # Lines holding `_once` (or an alias): code spanning none of them holds no call to look at (a 2x speed-up).
        found = {*receivers.model.line_words, *(name.rsplit(".", 1)[-1] for name in aliases)}
        self.once_lines = _lines_holding(source, found)  # as ast counts
        # Without a handler's name in scope, only `sys`'s view of the handled exception can be live.
        self.mentions_sys = "sys" in source
        # The scope in hand (a function's body and parameters, the module's statements; None: a class body), and
        # the names (and `self.x`) it binds only to values that cannot be hashed (`rule.liveness`), found when a
        # call first asks (most scopes hold none); the names a lambda or comprehension around the call shadows.
        self.scope_of: tuple[list[ast.stmt], ast.arguments | None] | None = None
        self.known: frozenset[str] | None = None
        self.shadowed: frozenset[str] = frozenset()
        # The instance whose method is in hand (its first parameter, `self`), and whether a class body is.
        self.instance: str | None = None
        self.functions: tuple[ast.AST, ...] = ()  # the functions (and lambdas) in hand, outermost first

    def touches(self, node: ast.AST) -> bool:
        """Whether the node's lines (decorators included) include a line holding `_once` (True if unknown)."""
        if not hasattr(node, "lineno"):
            return True
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        at = bisect.bisect_left(self.once_lines, start)
        return at < len(self.once_lines) and self.once_lines[at] <= (node.end_lineno or node.lineno)

    def block(self, body: Iterable[ast.stmt], names: tuple[str, ...], live: set[str]) -> None:
        for stmt in body:
            self.stmt(stmt, names, live)

    def branch(self, body: Iterable[ast.stmt], names: tuple[str, ...], live: set[str]) -> set[str]:
        """A block that may or may not run: re-bindings inside it do not clear names outside it."""
        inner = set(live)
        self.block(body, names, inner)
        return inner

    def stmt(self, stmt: ast.stmt, names: tuple[str, ...], live: set[str]) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not self.touches(stmt):
            return  # nothing to report inside, and its local bindings do not escape
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defaults = [d for d in (*stmt.args.defaults, *stmt.args.kw_defaults) if d is not None]
            self.exprs([*stmt.decorator_list, *defaults], names, live)
            with self.scope((stmt.body, stmt.args), self.method_instance(stmt), stmt):
                self.block(stmt.body, (*names, stmt.name), set(live) - params(stmt.args))  # closure sees live
        elif isinstance(stmt, ast.ClassDef):
            self.exprs([*stmt.decorator_list, *stmt.bases, *(k.value for k in stmt.keywords)], names, live)
            with self.scope(None):
                self.block(stmt.body, (*names, stmt.name), set(live))
        elif isinstance(stmt, (ast.Try, ast.TryStar)):
            self.try_(stmt, names, live)
        else:
            self.compound_or_simple(stmt, names, live)

    def method_instance(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
        """The instance a function defined right in a class body is a method of (its first parameter); for a function
        inside a method, that method's (unless a parameter shadows it); else None."""
        if self.instance is not _CLASS_BODY:  # a function inside a method: its closure still sees the instance
            return self.instance if self.instance not in params(function.args) else None
        if any(dotted_name(d) in _NOT_AN_INSTANCE for d in function.decorator_list):
            return None
        positional = [*function.args.posonlyargs, *function.args.args]
        return positional[0].arg if positional else None

    @contextmanager
    def scope(
        self,
        scope_of: tuple[list[ast.stmt], ast.arguments | None] | None,
        instance: str | None = None,
        function: ast.AST | None = None,
    ) -> Iterator[None]:
        """Inside a function or class: its own names bound only to values that cannot be hashed, the instance of the
        method in hand (a class body: `_CLASS_BODY`), and the function itself (where names are looked up first)."""
        outer = self.scope_of, self.known, self.shadowed, self.instance, self.functions
        self.scope_of, self.known, self.shadowed = scope_of, None, frozenset()
        self.instance = _CLASS_BODY if scope_of is None else instance
        self.functions = (*self.functions, function) if function is not None else self.functions
        try:
            yield
        finally:
            self.scope_of, self.known, self.shadowed, self.instance, self.functions = outer

    @contextmanager
    def shadowing(self, names: set[str]) -> Iterator[None]:
        outer = self.shadowed
        self.shadowed = outer | names
        try:
            yield
        finally:
            self.shadowed = outer

    def unhashable(self) -> frozenset[str]:
        """The names the scope in hand binds only to values that cannot be hashed, less those shadowed here."""
        if self.known is None:
            self.known = frozenset() if self.scope_of is None else unhashable_names(*self.scope_of)
        return self.known - self.shadowed

    def try_(self, stmt: ast.Try | ast.TryStar, names: tuple[str, ...], live: set[str]) -> None:
        live |= self.branch(stmt.body, names, live)
        for handler in stmt.handlers:
            if handler.type is not None:
                self.exprs([handler.type], names, live)
            bound = handler_binds(handler.name, isinstance(stmt, ast.TryStar))
            inner = set(live) | bound
            self.block(handler.body, names, inner)
            live |= inner
            live -= bound  # Python unbinds the handler's name when the handler ends
        live |= self.branch(stmt.orelse, names, live)
        self.block(stmt.finalbody, names, live)

    def compound_or_simple(self, stmt: ast.stmt, names: tuple[str, ...], live: set[str]) -> None:
        bodies = [getattr(stmt, attr) for attr in ("body", "orelse") if isinstance(getattr(stmt, attr, None), list)]
        own: list[ast.AST] = [
            child
            for child in ast.iter_child_nodes(stmt)
            if isinstance(child, (ast.expr, ast.withitem, ast.keyword)) and child is not getattr(stmt, "target", None)
        ]
        if isinstance(stmt, ast.Match):
            bodies = [case.body for case in stmt.cases]
            own += [case.guard for case in stmt.cases if case.guard is not None]
        self.exprs(own, names, live)
        self.bind(stmt, live)
        for body in bodies:
            live |= self.branch(body, names, live)

    def bind(self, stmt: ast.stmt, live: set[str]) -> None:
        """Names a statement (re)binds: live if their value carries a live exception, cleared otherwise (the rule
        site discovery follows too: `rule.liveness.rebind`)."""
        rebind(stmt, live, may_carry=bool(live) or self.mentions_sys)

    def exprs(self, nodes: Iterable[ast.AST], names: tuple[str, ...], live: set[str]) -> None:
        for node in nodes:
            if self.touches(node):
                self.calls(node, names, frozenset(live))

    def calls(self, node: ast.AST, names: tuple[str, ...], live: frozenset[str]) -> None:
        """Every `*_once` call inside an expression, lambdas and comprehensions included (their parameters and
        targets shadow)."""
        if isinstance(node, ast.Lambda):
            live = live - params(node.args)
            shadowed = params(node.args)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            shadowed = {n.id for gen in node.generators for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
        else:
            shadowed = set()
            once = once_call(node, self.aliases, self.receivers, self.functions) if isinstance(node, ast.Call) else None
            if once is not None:
                if once.known:
                    self.receivers.reached.update(cache.key for cache in once.caches)
                self.record(once, names, live)
        with self.shadowing(shadowed) if shadowed else nullcontext():
            for child in ast.iter_child_nodes(node):
                self.calls(child, names, live)

    def record(self, once: OnceCall, names: tuple[str, ...], live: frozenset[str]) -> None:
        qualname, call = ".".join(names) or "<module>", once.node
        instance = None if self.instance in (None, _CLASS_BODY) or self.instance in self.shadowed else self.instance
        unhashable = self.unhashable() if _reads_names(once) else frozenset()  # a scope's walk: only when it counts
        found = list(call_findings(once, self.file, qualname, live, unhashable, instance))
        first, last = call.lineno, call.end_lineno or call.lineno
        if found and any("#" in self.lines[n - 1] for n in range(first, last + 1)):
            found = self.pragmas.accept(found, first, last, _strings(call), qualname)
        self.raw.extend(found)


def _lines_holding(source: str, words: Iterable[str]) -> list[int]:
    """The 1-based numbers of the lines holding one of the words, in order (one search of the whole source)."""
    found, line, at = [], 1, 0
    for match in re.finditer("|".join(map(re.escape, sorted(words))), source):
        line += source.count("\n", at, match.start())
        at = match.start()
        if not found or found[-1] != line:
            found.append(line)
    return found


# What an argument may be for the names a scope binds only to unhashable values to count (`is_unhashable` reads a
# name or attribute, alone or inside these): a call's or a literal's never do.
_NAME_READERS = (ast.Name, ast.Attribute, ast.Tuple, ast.Subscript, ast.BinOp, ast.Starred)


def _reads_names(once: OnceCall) -> bool:
    return any(isinstance(a, _NAME_READERS) for a in (*once.args, *(k.value for k in once.keywords)))


def _strings(node: ast.AST) -> list[Span]:
    """Where the string literals inside a node are (a pragma's text there is not a pragma)."""
    return [
        (n.lineno, n.col_offset, n.end_lineno or n.lineno, n.end_col_offset or n.col_offset)
        for n in ast.walk(node)
        if isinstance(n, ast.JoinedStr) or (isinstance(n, ast.Constant) and isinstance(n.value, (str, bytes)))
    ]


@contextmanager
def _deeper() -> Iterator[None]:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit * DEEPER)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def _pieces(source: str, model: Model) -> tuple[Iterable[ast.Module], Aliases]:
    """The module's pieces to scan, and the aliases of `*_once` methods it assigns, over all of it (a big file whose
    source names a `*_once` method without calling it is parsed twice: once for its aliases)."""
    if not model.methods or not _referenced(model.methods).search(source):
        return modules(source), {}
    whole = list(modules(source)) if len(source) <= 2 * grammar.CHUNK else None  # one piece: parsed once
    aliases: Aliases = {}
    for module in whole or modules(source):
        aliases = aliases_in(module, aliases, model.methods)
    return whole or modules(source), aliases


def _scanned(source: str, file: str, receivers: Receivers) -> list[Finding]:
    live = set[str]()
    try:
        pieces, aliases = _pieces(source, receivers.model)
        scanner = _Scanner(file, source, aliases, receivers)
        whole = list(pieces) if len(source) <= 2 * grammar.CHUNK else None  # one piece: the module's names are known
        if whole:
            scanner.scope_of = ([stmt for module in whole for stmt in module.body], None)
            for module in whole:
                receivers.add(module)
        for module in whole or pieces:  # module-level names bound to a live exception carry over between pieces
            if not whole:
                receivers.add(module)  # what the pieces so far import and bind
            scanner.block(module.body, (), live)
    except DoesNotParse as err:
        return [unchecked(file, err.reason, err.line, err.column)]
    return [*scanner.raw, *scanner.pragmas.findings(source)]


def findings_in_source(
    source: str,
    file: str,
    module: str | None = None,
    model: Model = DEFAULT_MODEL,
    is_package: bool = False,
    reached: set[str] | None = None,
    kept: bool | None = None,
) -> list[Finding]:
    """Every finding in one file's source text: one the prefilter (`needs_parse`) drops is neither parsed nor
    compiled (its pragmas alone are read: one may be unused), so its syntax is not checked. `module` is the file's
    module name (its relative imports are followed to the caches they name), `model` the caches known (`caches.model`);
    `reached` gathers the keys of the rows a call in it reaches (or that it defines); `kept` is `needs_parse`'s answer
    when the caller has it."""
    if not (needs_parse(source, model) if kept is None else kept):
        return numbered(Pragmas(file, source.split("\n")).findings(source)) if MENTIONED.search(source) else []
    reached = reached if reached is not None else set()
    try:
        return numbered(_scanned(source, file, Receivers(module, is_package, model, reached=reached)))
    except RecursionError:
        pass
    with _deeper():
        try:
            return numbered(_scanned(source, file, Receivers(module, is_package, model, reached=reached)))
        except RecursionError:
            return [unchecked(file, "an expression nested too deeply to check")]
