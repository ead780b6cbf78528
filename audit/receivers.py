"""Which once-cache a call reaches, read from the module that makes it (`caches.model` is the table of caches).

A method call's receiver is followed to where the module gets it: a factory it calls (`init_logger(__name__)`,
`logging.get_logger(__name__)`), an instance it imports (`from vllm.logger import logger`), a logger imported from a
module of a package whose loggers are known (`from transformers.trainer import logger`), through the names and
`self.x` attributes the module binds to those. A call of a name is a cached function when the name is imported from a
row's dotted name, or is an lru_cache'd `*_once` function the module defines. A receiver not followed to any of
those may be any logger with that method: the call is checked against every row that has it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from warnonce_guard.caches.model import DEFAULT_MODEL, FUNCTION, LOGGER, Cache, Model, cached_function
from warnonce_guard.rule.liveness import dotted_name

_DEPTH = 8  # how many bindings a receiver is followed through (`a = b`, `b = init_logger(...)`, ...)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _absolute(module: str | None, is_package: bool, level: int, name: str | None) -> str | None:
    """`from ..x import y`'s module (`..x`) as an absolute name, given the importing module's own name."""
    if level == 0:
        return name
    if module is None:
        return None
    package = module.split(".") if is_package else module.split(".")[:-1]
    if level - 1 >= len(package):
        return None  # above the top-level package: Python refuses it too
    base = package[: len(package) - (level - 1)]
    return ".".join([*base, name]) if name else ".".join(base)


@dataclass
class Receivers:
    """What one module imports and binds, gathered from its statements (`add`, piece by piece for a file read in
    pieces), and the caches its calls reach."""

    module: str | None = None  # the file's module (`vllm.platforms.cpu`), None when not known
    is_package: bool = False  # the file is a package's `__init__.py`
    model: Model = DEFAULT_MODEL
    # (the function whose local it is, None: the module's; local name) -> the dotted name it stands for
    imports: dict[tuple[ast.AST | None, str], str] = field(default_factory=dict)
    # (the function whose local it is, None: the module's or an attribute chain's; name or `self.x`) -> its values
    bindings: dict[tuple[ast.AST | None, str], list[ast.expr]] = field(default_factory=dict)
    functions: dict[str, Cache] = field(default_factory=dict)  # lru_cache'd `*_once` functions the module defines
    defined: set[str] = field(default_factory=set)  # every other name the module's own `def`s and classes bind
    reached: set[str] = field(default_factory=set)  # the keys of the rows a call reaches, or whose function it defines

    def add(self, tree: ast.AST) -> None:
        """Gather the imports, bindings and cached functions of a module (or a piece of one)."""
        todo: list[tuple[ast.stmt, ast.AST | None]] = [(stmt, None) for stmt in reversed(getattr(tree, "body", ()))]
        while todo:  # statements only (what binds a name here is one), in source order
            node, scope = todo.pop()
            inner = node if isinstance(node, _FUNCTIONS) else scope
            todo.extend((child, inner) for child in reversed(list(_blocks(node))))
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.imports[scope, alias.asname] = alias.name
                    else:
                        top = alias.name.partition(".")[0]
                        self.imports[scope, top] = top
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(self.module, self.is_package, node.level, node.module)
                for alias in node.names:
                    if base is not None and alias.name != "*":
                        self.imports[scope, alias.asname or alias.name] = f"{base}.{alias.name}"
            elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if (name := dotted_name(target)) is not None:  # `self.x` is the class's, whichever method binds it
                        key = (scope if isinstance(target, ast.Name) else None, name)
                        self.bindings.setdefault(key, []).append(node.value)
        for node in getattr(tree, "body", ()):  # the module's own functions and classes
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                listed = self.model.named(f"{self.module}.{node.name}") if self.module else None
                row = listed if listed is not None and listed.kind == FUNCTION else None
                row = row or cached_function(node, self.module, node.lineno, self.dotted)
                if listed is not None:
                    self.reached.add(listed.key)
                if row is not None:
                    self.functions[node.name] = row
                    continue
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.defined.add(node.name)

    def _imported(self, name: str, scopes: tuple[ast.AST, ...]) -> str | None:
        """What an imported name stands for where it is read: the innermost function's import of it, else the
        module's."""
        for scope in (*reversed(scopes), None):
            if (scope, name) in self.imports:
                return self.imports[scope, name]
        return None

    def dotted(self, node: ast.expr, scopes: tuple[ast.AST, ...] = ()) -> str | None:
        """The dotted name an expression stands for, through the module's imports (`logging.get_logger` after
        `from ..utils import logging` in `transformers.models.x`: `transformers.utils.logging.get_logger`)."""
        name = dotted_name(node)
        if name is None:
            return None
        first, dot, rest = name.partition(".")
        imported = self._imported(first, scopes)
        if imported is not None:
            return f"{imported}{dot}{rest}"
        if first in self.defined and self.module:
            return f"{self.module}.{name}"
        return name

    def function(self, func: ast.expr, scopes: tuple[ast.AST, ...] = ()) -> Cache | None:
        """The cached function a call of `func` (made in `scopes`) reaches, else None."""
        name = dotted_name(func)
        if name is None:
            return None
        if name in self.functions:
            return self.functions[name]
        row = self.model.named(self.dotted(func, scopes) or name)
        return row if row is not None and row.kind == FUNCTION else None

    def caches(
        self, receiver: ast.expr | None, method: str, scopes: tuple[ast.AST, ...] = ()
    ) -> tuple[tuple[Cache, ...], bool]:
        """The caches a call of `method` on `receiver` may reach, and whether the receiver was followed to them
        (else every logger row with the method). `scopes` are the functions the call is in, outermost first."""
        found = self._loggers(receiver, _DEPTH, scopes) if receiver is not None else None
        if found is not None:
            rows = tuple(row for row in found if row.takes(method))
            if rows:
                return rows, True
        return self.model.with_method(method), False

    def _bound(self, name: str, scopes: tuple[ast.AST, ...]) -> tuple[list[ast.expr], tuple[ast.AST, ...]] | None:
        """The values `name` is bound to where it is read (in the innermost function that binds it, else the module),
        and the functions those values are read in."""
        if "." not in name:
            for depth in range(len(scopes), 0, -1):
                if (scopes[depth - 1], name) in self.bindings:
                    return self.bindings[scopes[depth - 1], name], scopes[:depth]
        values = self.bindings.get((None, name))
        return None if values is None else (values, ())

    def _loggers(self, node: ast.expr, depth: int, scopes: tuple[ast.AST, ...]) -> tuple[Cache, ...] | None:
        """The logger rows an expression's value is one of, or None when it is not followed to any."""
        if depth <= 0:
            return None
        if isinstance(node, ast.Call):
            dotted = self.dotted(node.func, scopes)
            row = self.model.named(dotted) if dotted else None
            return (row,) if row is not None and row.kind == LOGGER else None
        if isinstance(node, ast.IfExp | ast.BoolOp):  # `a if x else b`, `a or b`: either
            either = [node.body, node.orelse] if isinstance(node, ast.IfExp) else node.values
            rows = [self._loggers(value, depth - 1, scopes) for value in either]
            return None if any(r is None for r in rows) else _union(r for r in rows if r is not None)
        name = dotted_name(node)
        if name is None:
            return None
        bound = self._bound(name, scopes)
        if bound is not None:
            values, where = bound
            rows = [self._loggers(value, depth - 1, where) for value in values]
            if any(r is None for r in rows):
                return None
            return _union(r for r in rows if r is not None)
        if self._imported(name.partition(".")[0], scopes) is None:
            return None
        dotted = self.dotted(node, scopes)
        if dotted is None:
            return None
        row = self.model.named(dotted)
        if row is not None and row.kind == LOGGER:
            return (row,)
        module = dotted.rpartition(".")[0]
        row = self.model.of_package(module) if module else None  # `from transformers.trainer import logger`
        return (row,) if row is not None else None


def _blocks(stmt: ast.stmt) -> Iterator[ast.stmt]:
    """The statements right inside a statement's blocks (a function's, a branch's, a handler's, a case's)."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if isinstance(block, list):
            yield from block
    for holder in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
        yield from holder.body


def _union(groups: Iterable[tuple[Cache, ...]]) -> tuple[Cache, ...]:
    return tuple(dict.fromkeys(row for group in groups for row in group))
