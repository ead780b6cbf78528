"""Whether a logger module's `*_once` methods render the message before caching (then only text is kept), read from
its source: the audit reads the target's `vllm/logger.py`, strict mode the module it runs.

Each `*_once` method (of a class in the module, else a module-level `_print_*_once`) is followed through the module's
own functions with its `*args` raw; the values are `RAW` (the arguments themselves may be in them) or `TEXT`. A
cache is a call of an lru_cache'd function of the module, or a module-level container that a value is added to;
a call of anything not known to keep nothing counts as one too. The module renders first when no raw value reaches
any of them: `text = msg % args` (or `str(...)`, an f-string, a helper that returns one) before the cache keyed
on it, as issue 35's patch and sglang's multimodal logger do; vLLM 0.33.0's `@lru_cache` on `_print_*_once(logger,
msg, *args)` does not. The message itself is taken as the str its signature says it is.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from warnonce_guard.caches.model import Resolve, cache_decorator, decorator_maxsize, imports_of

RAW, TEXT = True, False
_RENDERERS = frozenset({"str", "repr", "ascii", "format"})
# Builtins and methods that make something new from their arguments and keep nothing.
_KEEP_NOTHING = _RENDERERS | frozenset(
    {"len", "bool", "int", "isinstance", "hasattr", "getattr", "id", "hash", "tuple", "list", "type", "callable"}
    | {"any", "all", "map", "filter", "sorted", "reversed", "enumerate", "zip", "min", "max", "sum", "iter", "next"}
)
_TEXT_METHODS = frozenset({"format", "join", "getMessage", "format_map"})
_DEPTH = 4  # how deep helpers are followed


@dataclass(frozen=True)
class _Module:
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]
    cached: frozenset[str]  # names an lru_cache wraps by assignment (`name = lru_cache(...)(f)`); a decorated function
    # is a cache to `_Flow.run` itself, followed with the values the call binds
    globals: frozenset[str]  # names the module binds at its top level (a container among them keeps what it gets)
    resolve: Resolve  # what a name stands for through the module's imports (an aliased `lru_cache` is one)


def _module(tree: ast.Module) -> _Module:
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    cached: set[str] = set()
    bound: set[str] = set()
    resolve = imports_of(tree)
    for node in tree.body:
        if not isinstance(node, ast.Assign | ast.AnnAssign):
            continue
        targets, value = (node.targets if isinstance(node, ast.Assign) else [node.target]), node.value
        bound |= {t.id for t in targets if isinstance(t, ast.Name)}
        if isinstance(value, ast.Name) and value.id in functions:  # an alias: `_print_info_once = _print_once`
            functions.update({t.id: functions[value.id] for t in targets if isinstance(t, ast.Name)})
            cached |= {t.id for t in targets if isinstance(t, ast.Name) and value.id in cached}
        if isinstance(value, ast.Call) and decorator_maxsize(value.func, resolve)[0]:  # name = lru_cache(...)(f)
            cached |= {t.id for t in targets if isinstance(t, ast.Name)}
    return _Module(functions, frozenset(cached), frozenset(bound | set(functions)), resolve)


def _entries(tree: ast.Module, module: _Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The `*_once` methods of the module's classes (any level, any name); without any, its `*_once` functions."""
    methods = [
        node
        for cls in tree.body
        if isinstance(cls, ast.ClassDef)
        for node in cls.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.endswith("_once")
    ]
    return methods or [function for name, function in module.functions.items() if name.endswith("_once")]


def once_methods(source: str) -> tuple[str, ...]:
    """The names a logger of the module has its `*_once` methods under (`warning_once`, ...), in source order: the
    `*_once` functions that no other function of the module calls, their leading underscores dropped."""
    tree = ast.parse(source)
    entries = _entries(tree, _module(tree))
    called = {
        n.func.id for e in entries for n in ast.walk(e) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }
    return tuple(dict.fromkeys(e.name.lstrip("_") for e in entries if e.name not in called))


class _Flow:
    """Follows raw values through one function (and the module's functions it calls); `leaks` once one reaches a
    cache."""

    def __init__(self, module: _Module, depth: int = 0) -> None:
        self.module = module
        self.depth = depth
        self.leaks = False

    def run(self, function: ast.FunctionDef | ast.AsyncFunctionDef, env: dict[str, bool]) -> bool:
        """Follow the function's body from its parameters' values `env`; whether what it returns may be raw."""
        if cache_decorator(function, self.module.resolve)[0] and any(env.values()):
            self.leaks = True  # the function itself is the cache, and it is given raw values
        returned = TEXT
        for node, nested in _own_nodes(function.body):
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value is not None:
                value = self.value(node.value, env)
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:  # in a branch, or added to: the name may hold either value
                    self.bind(target, value, env, keep_old=nested or isinstance(node, ast.AugAssign))
            elif isinstance(node, ast.For | ast.AsyncFor):
                self.bind(node.target, self.value(node.iter, env), env, keep_old=True)
            elif isinstance(node, ast.Return) and node.value is not None:
                returned = returned or self.value(node.value, env)
            else:
                for expr in _own_exprs(node):
                    self.value(expr, env)
        return returned

    def bind(self, target: ast.expr, value: bool, env: dict[str, bool], keep_old: bool) -> None:
        if isinstance(target, ast.Subscript | ast.Attribute):  # container[key] = value, obj.attr = value
            stored = value or (isinstance(target, ast.Subscript) and self.value(target.slice, env))
            if self._kept(target.value) and stored:
                self.leaks = True
            return
        for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
            env[name] = value or (keep_old and env.get(name, TEXT))

    def _kept(self, node: ast.expr) -> bool:
        """A container that outlives the call: a module-level name, or an attribute of one."""
        while isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.module.globals

    def value(self, node: ast.expr, env: dict[str, bool]) -> bool:
        """Whether the expression's value may hold a raw argument (recording a leak when one reaches a cache)."""
        if isinstance(node, ast.Name):
            return env.get(node.id, TEXT)
        if isinstance(node, ast.Call):
            return self.call(node, env)
        parts = [self.value(child, env) for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr)]
        if isinstance(node, ast.Constant | ast.JoinedStr | ast.Compare) or (
            isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)  # msg % args: rendered
        ):
            return TEXT
        if isinstance(node, ast.IfExp):
            return parts[1] or parts[2]  # the test is not the value
        return any(parts)

    def call(self, node: ast.Call, env: dict[str, bool]) -> bool:
        args = [self.value(a, env) for a in node.args]  # a starred one is as raw as what it spreads
        keywords = {k.arg: self.value(k.value, env) for k in node.keywords}
        raw = any(args) or any(keywords.values())
        func = node.func
        if isinstance(func, ast.Name):
            if func.id in self.module.cached:
                self.leaks = self.leaks or raw
                return TEXT
            if func.id in self.module.functions:
                return self.helper(self.module.functions[func.id], node, args, keywords)
            if func.id in _RENDERERS:
                return TEXT
            if func.id not in _KEEP_NOTHING:  # a function of another module: it may keep what it is given
                self.leaks = self.leaks or raw
            return raw
        if isinstance(func, ast.Attribute):
            owner = self.value(func.value, env)
            if func.attr in _TEXT_METHODS:
                return TEXT
            if raw and not _local(func.value, env):  # a method of a module-level object (a set's add), of a module
                self.leaks = True  # (another module's cache): it may keep what it is given
            return owner or raw  # a method of a parameter or a local (a logger's own warning, info, ...)
        self.value(func, env)
        self.leaks = self.leaks or raw
        return raw

    def helper(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, args: list[bool], keywords: dict
    ) -> bool:
        """A module function called with these values: its parameters bound as the call binds them."""
        raw = any(args) or any(keywords.values())
        if self.depth >= _DEPTH:
            self.leaks = self.leaks or raw
            return raw
        inner = _Flow(self.module, self.depth + 1)
        returned = inner.run(function, _bound(function.args, call, args, keywords))
        self.leaks = self.leaks or inner.leaks
        return returned


def _local(node: ast.expr, env: dict[str, bool]) -> bool:
    """Whether an attribute chain starts at a parameter or a local of the function (`logger.warning`, `self._log`)."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return isinstance(node, ast.Name) and node.id in env


def _bound(signature: ast.arguments, call: ast.Call, args: list[bool], keywords: dict) -> dict[str, bool]:
    """Each parameter's value for a call: a starred argument spreads its value over every parameter from there."""
    positional = [a.arg for a in (*signature.posonlyargs, *signature.args)]
    env = {name: TEXT for name in positional + [a.arg for a in signature.kwonlyargs]}
    starred = next((i for i, a in enumerate(call.args) if isinstance(a, ast.Starred)), None)
    for index, name in enumerate(positional):
        if index < len(args) and (starred is None or index < starred):
            env[name] = args[index]
        elif starred is not None and index >= starred:
            env[name] = any(args[starred:])
    rest = args[len(positional) :] if starred is None else args[min(starred, len(positional)) :]
    if signature.vararg:
        env[signature.vararg.arg] = any(rest)
    for name, value in keywords.items():
        if name is None or name not in env:  # **kw, or a keyword into **kwargs
            if signature.kwarg:
                env[signature.kwarg.arg] = env.get(signature.kwarg.arg, TEXT) or value
            env.update({n: env[n] or value for n in env} if name is None else {})
        else:
            env[name] = value
    return env


def _own_nodes(body: Sequence[ast.stmt], nested: bool = False) -> Iterator[tuple[ast.stmt, bool]]:
    """The statements of a body, nested blocks included, in order (not those of a nested function or class), and
    whether each is inside a block that may not run (a branch, a loop, a handler)."""
    for stmt in body:
        yield stmt, nested
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        runs = isinstance(stmt, ast.With | ast.AsyncWith)  # its body runs whenever the statement does
        yield from _own_nodes(getattr(stmt, "body", []), nested or not runs)
        for field in ("orelse", "finalbody"):
            yield from _own_nodes(getattr(stmt, field, []), True)
        for handler in getattr(stmt, "handlers", []):
            yield from _own_nodes(handler.body, True)
        for case in getattr(stmt, "cases", []):
            yield from _own_nodes(case.body, True)


def _own_exprs(stmt: ast.stmt) -> Iterable[ast.expr]:
    """The expressions a statement evaluates itself (not those of the blocks it holds)."""
    if isinstance(stmt, ast.Expr | ast.Raise):
        return [e for e in (getattr(stmt, "value", None), getattr(stmt, "exc", None)) if e is not None]
    if isinstance(stmt, ast.If | ast.While | ast.Assert):
        return [stmt.test]
    if isinstance(stmt, ast.With | ast.AsyncWith):
        return [item.context_expr for item in stmt.items]
    return []


def leaking(source: str) -> list[str]:
    """The `*_once` methods (or functions) of the logger module `source` whose arguments may reach a cache before they
    are rendered, in source order (empty when the source does not parse or has none)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    module = _module(tree)
    found = []
    for entry in _entries(tree, module):
        args = entry.args
        env = {a.arg: TEXT for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        if args.vararg:
            env[args.vararg.arg] = RAW
        if args.kwarg:
            env[args.kwarg.arg] = RAW
        flow = _Flow(module)
        flow.run(entry, env)
        if flow.leaks:
            found.append(entry.name)
    return found


def renders_first(source: str) -> bool | None:
    """Whether every `*_once` method of the logger module `source` renders the message before anything caches it;
    None when the source does not parse or holds no `*_once` method."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    if not _entries(tree, _module(tree)):
        return None
    return not leaking(source)
