"""The site rule: the one place that says what a kernel-import site is (docs/ARCHITECTURE.md, Site discovery).

Every logging call (`*_once`: cached; a plain one: not cached) that a handler `except ImportError [as NAME]:` of a
`try:` importing a kernel module of the package runs, whatever its arguments (`site_calls`): a method call, or a
call of a callable that reaches a `*_once` method (`Reach`: a helper function, an alias, a partial). What its
arguments carry (the site's form) is the liveness policy's to say (`form_of`), never a filter.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import re
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import libcst as cst
from warnonce_guard.rule.liveness import (
    EAGER,
    EXCEPTION,
    IGNORED_KEYWORDS,
    LIVE,
    ONCE_METHODS,
    UNKNOWN,
    argument_kind,
    comprehension_names,
    dotted_name,
    flow,
    handler_binds,
    rebind,
    safe_names,
)

PLAIN_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical"})
IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
# A kernel module's last component has a `C` token: _C, _C_AVX2, _moe_C_stable_libtorch, fs_io_C.
KERNEL_PATTERN = re.compile(r"(?:^|_)C(?:_|$)")
_NOT_RUN_BY_THE_HANDLER = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
# A `try` that may guard a kernel import (a type and what `isinstance` asks): `except*` catches its ImportError too,
# in a group that holds it
TryNode = cst.Try | cst.TryStar
Handler = cst.ExceptHandler | cst.ExceptStarHandler


class Reach(NamedTuple):
    """A callable that reaches a `*_once` method when called: a helper function of the module (or of the class, as
    `cls.name`, `self.name`), or a name the module binds to the method or to a `functools.partial` of it."""

    method: str  # the *_once method at the end, e.g. warning_once
    receiver: str  # the logger expression it is called on there, e.g. logger
    function: str = ""  # the helper function whose own call `form` judges; "" for an alias (and a helper calling one)
    form: str = LIVE  # a helper's: eager when it formats whatever it is given; live when it passes a parameter on


Reaching = dict[str, Reach]  # callee as written in the handler (`warn`, `cls._log_failure`) -> what it reaches


class SiteCall(NamedTuple):
    """One site's logging call, with the handler it stands in and the exception name it logs ("" for a handler
    without `as NAME`); `via` is the callable it reaches a `*_once` method through, for a call that is none."""

    call: cst.Call
    handler: Handler
    name: str
    via: Reach | None = None


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
    return KERNEL_PATTERN.search(name.rpartition(".")[2]) is not None


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
    """Dotted names a statement imports, including `importlib.import_module("x")` and `__import__("x")` calls."""
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
            and (dotted(node.func) or "").endswith(("import_module", "__import__"))
            and node.args
            and isinstance(node.args[0].value, cst.SimpleString)
        ):
            yield str(node.args[0].value.evaluated_value)


def kernel_import(try_node: TryNode, package: str, current_package: str) -> str | None:
    """The first kernel module the `try` body imports, or None."""
    imported = (name for stmt in try_node.body.body for name in imported_modules(stmt, current_package))
    return next((name for name in imported if is_kernel_module(name, package)), None)


def catches_import_error(handler: Handler) -> bool:
    """`except ImportError as e` (or a tuple or base class that includes it), a bare `except:`, or a class the source
    only names (`except _ERRORS`, `except errors.KernelMissing`): the guard's drive tells whether it catches."""
    if handler.type is None:
        return True
    types = [el.value for el in handler.type.elements] if isinstance(handler.type, cst.Tuple) else [handler.type]
    return any(_may_catch_import_error((dotted(t) or "").rpartition(".")[2]) for t in types)


def _may_catch_import_error(name: str) -> bool:
    """A class named `name` catches ImportError, or the name is none of the builtin exceptions that do not."""
    builtin = getattr(builtins, name, None)
    return name in IMPORT_ERRORS or not (isinstance(builtin, type) and issubclass(builtin, BaseException))


def handler_name(handler: Handler) -> str | None:
    if handler.name is not None and isinstance(handler.name.name, cst.Name):
        return handler.name.name.value
    return None


def log_method(call: cst.Call) -> str | None:
    """The logger method a call invokes (`logger.warning_once(...)` -> warning_once)."""
    if isinstance(call.func, cst.Attribute) and dotted(call.func.value) != "sys":  # sys.exception() logs nothing
        method = call.func.attr.value
        if method in ONCE_METHODS or method in PLAIN_METHODS:
            return method
    return None


def reached(call: cst.Call, reaching: Reaching) -> Reach | None:
    """The `Reach` of a call of a callable that reaches a `*_once` method, or None."""
    callee = dotted(call.func)
    return reaching.get(callee) if callee is not None else None


def checked_arguments(call: cst.Call) -> list[cst.Arg]:
    """The arguments that reach a logger method (and a `*_once` cache): all positionals and keywords but `scope=`."""
    return [arg for arg in call.args if not (arg.keyword is not None and arg.keyword.value in IGNORED_KEYWORDS)]


def references(node: cst.CSTNode, name: str) -> bool:
    """`node` reads `name`: a name, or a dotted one (`cls.kernel_error`) as an attribute chain."""
    if "." in name:
        return any(isinstance(n, cst.Attribute) and dotted(n) == name for n in walk(node))
    return bool(name) and any(isinstance(n, cst.Name) and n.value == name for n in walk(node))


def passes(call: cst.Call, name: str) -> bool:
    """The call passes (something made of) `name` in an argument that reaches the logger."""
    return any(references(arg.value, name) for arg in checked_arguments(call))


_RENDER = cst.Module([]).code_for_node


def parsed(node: cst.CSTNode) -> list[ast.stmt]:
    """A statement (or an expression, as one) as the standard library parses it: what the liveness policy reads. An
    expression is parsed in parentheses, as it stood in its call's: its text may span lines (`"a: %s; "` over
    `"b"`), which alone does not parse."""
    if isinstance(node, cst.BaseExpression):
        return [ast.Expr(ast.parse(f"({_RENDER(node)}\n)", mode="eval").body)]
    return ast.parse(_RENDER(node)).body


def holds(node: cst.CSTNode, target: cst.CSTNode) -> bool:
    return any(found is target for found in walk(node))


def live_names(body: Sequence[cst.CSTNode], call: cst.CSTNode) -> set[str]:
    """The names holding a live exception where `call` runs, `body` (a function's or module's statements) followed
    from its start as the audit follows it (`liveness.flow`): a handler's name inside its handler, and what is
    bound to a value carrying one, in the handler and after it."""
    live: set[str] = set()
    _flow_to(body, call, live)
    return live


def _flow_to(body: Sequence[cst.CSTNode], call: cst.CSTNode, live: set[str]) -> None:
    """Follow `body` up to the statement holding `call`, `live` changed in place."""
    for stmt in body:
        if not holds(stmt, call):
            flow(parsed(stmt), live)
            continue
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if holds(small, call):  # a comprehension around the call binds its own names
                    live |= comprehension_names(parsed(cst.SimpleStatementLine([small]))[0], live)
                    return
                for parsed_small in parsed(cst.SimpleStatementLine([small])):
                    rebind(parsed_small, live)
            return
        if isinstance(stmt, TryNode) and stmt.finalbody is not None and holds(stmt.finalbody, call):
            # after the body, a handler or the `else`: what any of them bound
            if stmt.handlers:
                flow(parsed(stmt.with_changes(finalbody=None)), live)
            else:
                live |= _branch(stmt.body.body, live)
            _flow_to(stmt.finalbody.body.body, call, live)
            return
        holder = next((h for h in stmt.handlers if holds(h, call)), None) if isinstance(stmt, TryNode) else None
        if isinstance(stmt, TryNode) and holder is not None:  # the body ran (or part of it), then this handler alone
            live |= _branch(stmt.body.body, live)
            inner = live | handler_binds(handler_name(holder), isinstance(holder, cst.ExceptStarHandler))
            _flow_to(holder.body.body, call, inner)
            live |= inner
            return
        for block in _blocks(stmt):
            if holds(block, call):
                inner = set(live)
                _flow_to(block.body, call, inner)  # type: ignore[attr-defined]
                live |= inner
                return
        return


def _branch(body: Sequence[cst.CSTNode], live: set[str]) -> set[str]:
    inner = set(live)
    for stmt in body:
        flow(parsed(stmt), inner)
    return inner


def _blocks(stmt: cst.CSTNode) -> list[cst.CSTNode]:
    """The blocks of a compound statement that hold statements: its body, `else`, `elif`s, `finally`, cases."""
    found: list[cst.CSTNode] = []
    for child in stmt.children:
        if isinstance(child, cst.IndentedBlock):
            found.append(child)
        elif isinstance(child, cst.If):
            found += _blocks(child)
        elif isinstance(child, (cst.Else, cst.Finally, cst.MatchCase)):
            found.append(child.body)
    return found


def _argument(arg: cst.Arg) -> ast.expr:
    """An argument as the standard library parses it; `*xs` as `ast.Starred` (what it unpacks reaches the call)."""
    value: ast.expr = parsed(arg.value)[0].value  # type: ignore[attr-defined]
    return ast.Starred(value, ast.Load()) if arg.star else value


def form_of(site: SiteCall, body: Sequence[cst.CSTNode]) -> str:
    """What the site's call passes the cache, as the liveness policy says with the names `live_names` follows through
    `body` (the enclosing function's): `live` when an argument carries a live exception, `eager` when every argument
    is safe, else `unknown`. A helper that formats whatever it is given is eager whatever it is given."""
    helper = site.via.form if site.via is not None and site.via.function else LIVE
    if helper == EAGER:
        return EAGER
    names = live_names(body, site.call)
    values = [_argument(arg) for arg in checked_arguments(site.call)]
    safe = safe_names([tree for stmt in body for tree in parsed(stmt)]) - names
    kinds = [None if isinstance(v, ast.Name) and v.id in safe else argument_kind(v, names) for v in values]
    if EXCEPTION in kinds:
        return LIVE
    if helper == UNKNOWN:  # a helper that logs what the source cannot tell, whatever it is given
        return UNKNOWN
    # what is neither safe nor the exception, but only the exception's data (`e.msg`, `type(e)`): eager too
    data = [any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(value)) for value in values]
    return EAGER if all(kind is None or of_it for kind, of_it in zip(kinds, data, strict=True)) else UNKNOWN


def _site_handlers(try_node: TryNode, package: str, current_package: str) -> list[tuple[Handler, str]]:
    """The handlers of a kernel-import `try` that catch ImportError, with their names ("" for none)."""
    if kernel_import(try_node, package, current_package) is None:
        return []
    return [(h, handler_name(h) or "") for h in try_node.handlers if catches_import_error(h)]


def is_site_try(try_node: TryNode, package: str, current_package: str) -> bool:
    """A `try` that imports a kernel module and catches ImportError: whatever it logs, and where, is looked at."""
    return bool(_site_handlers(try_node, package, current_package))


def _calls_in(
    node: cst.CSTNode,
    name: str,
    handler: Handler,
    package: str,
    current_package: str,
    reaching: Reaching,
) -> Iterator[SiteCall]:
    """Logging calls under `node` that the handler runs, but those a nested site handler runs (they are its own)."""
    if isinstance(node, _NOT_RUN_BY_THE_HANDLER):
        return
    if isinstance(node, cst.Call):
        if log_method(node) is not None:
            yield SiteCall(node, handler, name)
        elif (via := reached(node, reaching)) is not None:
            yield SiteCall(node, handler, name, via)
    inner = {id(h) for h, _ in _site_handlers(node, package, current_package)} if isinstance(node, TryNode) else set()
    for child in node.children:
        if id(child) not in inner:
            yield from _calls_in(child, name, handler, package, current_package, reaching)


def site_calls(
    try_node: TryNode, package: str, current_package: str, reaching: Reaching | None = None
) -> list[SiteCall]:
    """Every site call that belongs to this `try` (none unless it imports a kernel module), in source order:
    every logging call its ImportError handlers run, and every call of a callable in `reaching` they run."""
    found: list[SiteCall] = []
    for handler, name in _site_handlers(try_node, package, current_package):
        found += _calls_in(handler.body, name, handler, package, current_package, reaching or {})
    return found


def anchor(try_node: TryNode) -> str:
    """A digest of the `try` statement's source: how the operators recognise a try that discovery recorded.

    It runs from the `try:` line to the last line of code: the comment and blank lines before and after are
    left out, as libcst gives them to the try or to a neighbour depending on how much of the file it parsed.
    """
    lines = cst.Module([]).code_for_node(try_node).splitlines()
    code = [i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")]
    text = "\n".join(lines[code[0] : code[-1] + 1])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ---- callables that reach a *_once method (helpers, aliases, partials), found over a whole file ---------------

_PARTIALS = frozenset({"partial", "functools.partial"})


def _once_reference(node: ast.expr) -> tuple[str, str] | None:
    """(method, receiver) for `<receiver>.<once method>` or a `functools.partial` of one, else None."""
    if isinstance(node, ast.Call) and dotted_name(node.func) in _PARTIALS and node.args:
        return _once_reference(node.args[0])
    if isinstance(node, ast.Attribute) and node.attr in ONCE_METHODS:
        return node.attr, ast.unparse(node.value)
    return None


def _own_calls(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.Call]:
    """The calls a function's body makes itself (not in a function, lambda or class defined in it), in order."""
    todo: list[ast.AST] = list(reversed(function.body))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Call):
            yield node
        todo.extend(reversed(list(ast.iter_child_nodes(node))))


def _helper_form(function: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, method: bool) -> str:
    """How a helper's `*_once` call treats what it is given: eager when every argument is safe whatever its
    parameters hold, live when one passes a parameter on."""
    args = function.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
    if method and [*args.posonlyargs, *args.args]:
        names.discard([*args.posonlyargs, *args.args][0].arg)  # self or cls: the object, not what it was given
    values = [*call.args, *(k.value for k in call.keywords if k.arg not in IGNORED_KEYWORDS)]
    kinds = [argument_kind(value, names) for value in values]
    if EXCEPTION in kinds:
        return LIVE
    return EAGER if all(kind is None for kind in kinds) else UNKNOWN


def reaching_callables(tree: ast.Module) -> dict[str, Reaching]:
    """Per scope, the callables that reach a `*_once` method when called: a name bound to the method or a partial
    of it, a function whose own body calls one (or calls such a callable: followed until nothing changes). Scopes:
    "" the module's (its functions and names, and each class's `Class.method`), a class's name its methods and those
    it inherits from a class of the module but does not define, `def QUALNAME` what a function defines for itself
    (`def Platform.import_kernels`: a nested `def _report(err)`, `warn = logger.warning_once`). Keys are the callee
    as code writes it: `warn`, `_log_failure`, `cls._log_failure`, `self._log_failure`, `Platform._log_failure`."""
    found: dict[str, Reaching] = {"": {}}
    functions: list[_Function] = []
    bases: dict[str, list[str]] = {}

    def visit(body: Sequence[ast.AST], cls: str, outer: str) -> None:
        scope = f"def {outer}" if outer else cls  # where a name bound here is seen: a function's, a class's, ""
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                method = bool(cls) and not outer
                keys = [f"cls.{stmt.name}", f"self.{stmt.name}", f"{cls}.{stmt.name}"] if method else [stmt.name]
                qualname = f"{outer or cls}.{stmt.name}".lstrip(".")
                functions.append(_Function(stmt, scope, keys, (cls, scope), method))
                found.setdefault(scope, {})
                visit(stmt.body, cls, qualname)
            elif isinstance(stmt, ast.ClassDef):
                found.setdefault(stmt.name, {})
                bases[stmt.name] = [b.id for b in stmt.bases if isinstance(b, ast.Name)]
                visit(stmt.body, stmt.name, "")
            elif isinstance(stmt, ast.Assign) and (outer or not cls) and (held := _once_reference(stmt.value)):
                names = [target.id for target in stmt.targets if isinstance(target, ast.Name)]
                found.setdefault(scope, {}).update(dict.fromkeys(names, Reach(*held)))
            else:  # the statements under a statement (an `if`, a loop, a `try` and its handlers, a match's cases)
                for block in ("body", "orelse", "finalbody", "handlers", "cases"):
                    visit(getattr(stmt, block, ()), cls, outer)

    visit(tree.body, "", "")
    taken = [(f.scope, f"{obj}.{f.node.name}") for f in functions if f.method for obj in ("cls", "self")]
    defined = {cls: {key for scope, key in taken if scope == cls} for cls in bases}  # the keys its methods take
    changed = True
    while changed:
        changed = False
        for cls in bases:  # what a class inherits from a class of the module, but what a nearer class defines
            hidden = set(defined[cls])
            for base in _bases(cls, bases):
                for key, reach in list(found[base].items()):
                    inherited = key.startswith(("cls.", "self.")) and key not in found[cls]
                    if inherited and key not in hidden:
                        found[cls][key] = reach
                        changed = True
                hidden |= defined[base]
        for function in functions:
            if function.keys[0] in found[function.scope]:
                continue
            klass, own = (found[scope] for scope in function.visible)
            reach = _reach_of(function, found[""] | klass | own)
            if reach is not None:
                found[function.scope].update(dict.fromkeys(function.keys, reach))
                if function.method:  # `Class.method`, from anywhere in the module
                    found[""][function.keys[2]] = reach
                changed = True
    return found


def _bases(cls: str, bases: dict[str, list[str]]) -> list[str]:
    """The classes of the module `cls` (one of them) inherits from, nearest first, each once."""
    out: list[str] = []
    todo = list(bases[cls])
    while todo:
        base = todo.pop(0)
        if base in bases and base not in out and base != cls:
            out.append(base)
            todo += bases[base]
    return out


class _Function:
    """A function of the module, a method, or a function a function defines, as `reaching_callables` follows it:
    the scope its name is bound in, the keys a caller writes, the scopes it sees (its class's, its function's)."""

    def __init__(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        scope: str,
        keys: list[str],
        visible: tuple[str, str],
        method: bool,
    ) -> None:
        self.node, self.scope, self.keys, self.visible, self.method = node, scope, keys, visible, method
        # its own calls that may reach a *_once method, in order, found once: (call, None) for one of the method
        # itself, (call, callee) for a call of a dotted name
        self.calls: list[tuple[ast.Call, str | None]] = []
        for call in _own_calls(node):
            if isinstance(call.func, ast.Attribute) and call.func.attr in ONCE_METHODS:
                self.calls.append((call, None))
            elif (callee := dotted_name(call.func)) is not None:
                self.calls.append((call, callee))


def _reach_of(function: _Function, visible: Reaching) -> Reach | None:
    """What a function reaches through its first `*_once` call, direct or through a callable in `visible`."""
    for call, callee in function.calls:
        if callee is None:
            method = call.func.attr  # type: ignore[attr-defined]
            form = _helper_form(function.node, call, function.method)
            return Reach(method, ast.unparse(call.func.value), function.node.name, form)  # type: ignore[attr-defined]
        if (inner := visible.get(callee)) is not None:
            return inner  # an alias's too: `form_of` reads a live form from the site's own arguments
    return None
