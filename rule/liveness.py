"""One liveness policy: what an argument to a `*_once` call can keep alive in its lru_cache.

Site discovery (is a site `live`?) and the audit (which arguments are findings, of which kind?) both ask
`argument_kind`; `EXAMPLES` is the policy as a table (docs/reference.md, The audit, shows it and its order).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Literal, NamedTuple, TypeVar

# A kernel-import site's form, what its call passes the cache: formatted before the call, the exception itself, or
# what cannot be known from the source (`rule.site_rule.form_of`).
EAGER, LIVE, UNKNOWN = FORMS = ("eager", "live", "unknown")
EXCEPTION = "exception"
UNHASHABLE = "unhashable"
KEYWORD = "keyword"  # not an argument's kind but the call's: a keyword the `*_once` methods do not take
# vLLM's cached logger methods (`vllm.logger`): what they are passed, their lru_cache keeps.
ONCE_METHODS = frozenset({"debug_once", "info_once", "warning_once", "error_once"})
# vLLM's `*_once(msg, *args, scope=...)`: every argument reaches the cache but `scope`, which only picks a process.
IGNORED_KEYWORDS = frozenset({"scope"})
# The only keywords the `*_once` methods take: any other one makes the call raise TypeError.
ONCE_KEYWORDS = frozenset({"msg", "scope"})
# Attributes of an exception that hold its data (primitives, or the values it was made with), never itself.
EXCEPTION_DATA = frozenset(
    {"args", "name", "path", "msg", "errno", "strerror", "filename", "filename2", "winerror", "characters_written"}
)

_STR_BUILTINS = frozenset({"repr", "str", "ascii", "format", "hex", "oct", "bin", "chr"})
_PRIMITIVE_BUILTINS = _STR_BUILTINS | frozenset(
    {"len", "int", "float", "bool", "ord", "id", "hash", "isinstance", "issubclass", "callable", "hasattr"}
)
_STR_METHODS = frozenset({"format", "join"})
_TYPE_NAME_ATTRS = frozenset({"__name__", "__qualname__"})
# The standard library's level constants, ints: torchtune's `log_once(logger, msg, level=logging.DEBUG)` passes one.
_LOGGING_LEVELS = frozenset({"CRITICAL", "FATAL", "ERROR", "WARNING", "WARN", "INFO", "DEBUG", "NOTSET"})
# Builtins that always return a list, dict, set or bytearray (or raise): what they return cannot be hashed.
_UNHASHABLE_BUILTINS = frozenset({"list", "dict", "set", "sorted", "bytearray", "vars"})
_UNHASHABLE_DISPLAYS = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp)
# `sys`'s view of the exception being handled (or the last one unhandled): calls, then attributes.
_SYS_EXCEPTION_CALLS = frozenset({"exc_info", "exception"})
_SYS_EXCEPTION_ATTRS = frozenset({"last_value", "last_exc", "last_traceback"})
_BOOL_COMPARISONS = (ast.Is, ast.IsNot, ast.In, ast.NotIn)
_KINDS: tuple[tuple[type[ast.AST] | tuple[type[ast.AST], ...], str], ...] = (
    (ast.Name, "name"),
    (ast.Attribute, "attribute"),
    (ast.Subscript, "subscript"),
    (ast.Call, "call"),
    ((ast.Tuple, ast.GeneratorExp), "container"),
    (ast.Starred, "starred"),
    (ast.Lambda, "lambda"),
)


class LivenessExample(NamedTuple):
    """One row of the policy: an argument, with `e` bound to a live exception (and after the statements `bound`, in
    the same function), and its kind (None: safe)."""

    argument: str
    kind: str | None
    bound: str = ""


EXAMPLES: tuple[LivenessExample, ...] = (
    LivenessExample("repr(e)", None),
    LivenessExample("str(e)", None),
    LivenessExample('f"{e!r}"', None),
    LivenessExample('"%s" % e', None),
    LivenessExample('"{}".format(e)', None),
    LivenessExample("type(e).__name__", None),
    LivenessExample("e", EXCEPTION),
    LivenessExample("e.__traceback__", EXCEPTION),
    LivenessExample("(e, 1)", EXCEPTION),
    LivenessExample("foo(e)", EXCEPTION),
    LivenessExample("e.with_traceback(None)", EXCEPTION),
    LivenessExample("e.__class__.__name__", EXCEPTION),
    LivenessExample("sys.exc_info()[1]", EXCEPTION),
    LivenessExample("sys.exception()", EXCEPTION),
    LivenessExample("[e]", UNHASHABLE),
    LivenessExample("sorted(x)[:10]", UNHASHABLE),
    LivenessExample("{x: 1}", UNHASHABLE),
    LivenessExample("(x, [1])", UNHASHABLE),
    LivenessExample("[e] + xs", UNHASHABLE),
    LivenessExample("x", UNHASHABLE, "x = [1, 2]"),
    LivenessExample("ops", UNHASHABLE, "if x:\n    ops = ['+rms_norm']\nelse:\n    ops = ['-rms_norm']"),
    LivenessExample("self.seen", UNHASHABLE, "self.seen = set()"),
    LivenessExample("(x, 1)", UNHASHABLE, "x = {}\nx |= {1: 2}"),
    LivenessExample("z", UNHASHABLE, "x = []\nz = x + [1]"),
    LivenessExample("x", "name", "x = [1, 2]\nif y:\n    x = 'a'"),
    LivenessExample("x", "name", "for x in [[1]]:\n    pass"),
    LivenessExample("-len(xs)", None),
    LivenessExample("logging.DEBUG", None),
    LivenessExample("config.DEBUG", "attribute"),
    LivenessExample("e.args", "attribute"),
    LivenessExample("e.name", "attribute"),
    LivenessExample("e.args[0]", "subscript"),
    LivenessExample("type(e)", "call"),
    LivenessExample("sys.exc_info()[0]", "subscript"),
    LivenessExample("x", "name"),
)


# Every walk down an expression below is a loop over a list, never a recursion: an expression's depth is the user's
# (`a + b + ... + z`, `x.format(a).format(b)...`, hundreds deep, parse without parentheses) and a recursion would fail
# on it at the interpreter's limit (sooner under a debugger, a tracer or mutmut's trampolines, which add frames).
_Part = TypeVar("_Part")


def _reaches(start: _Part, step: Callable[[_Part], Literal[True] | Iterable[_Part]]) -> bool:
    """Whether `step` says True of `start` or of a part it leads to (`step` gives a part's own parts to look at)."""
    todo = [start]
    while todo:
        parts = step(todo.pop())
        if parts is True:
            return True
        todo.extend(parts)
    return False


def dotted_name(node: ast.expr) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    attributes = []
    while isinstance(node, ast.Attribute):
        attributes.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(attributes)]) if isinstance(node, ast.Name) else None


def _builtin_name(call: ast.Call) -> str | None:
    return call.func.id if isinstance(call.func, ast.Name) else None


def is_str(node: ast.expr) -> bool:
    """Provably a str: a string literal, an f-string, or a call that always returns one."""
    while True:  # down `fmt % a % b`'s left operands, `fmt.format(a).format(b)`'s receivers
        if isinstance(node, ast.Constant):
            return isinstance(node.value, str)
        if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Call) and _builtin_name(node) in _STR_BUILTINS):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _STR_METHODS:
            node = node.func.value
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            node = node.left
        else:
            return False


def _is_type_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and _builtin_name(node) == "type" and len(node.args) == 1 and not node.keywords


def _unsafe_parts(node: ast.expr) -> Literal[True] | Sequence[ast.expr]:
    """True when `node` is not safe by itself; else the parts that must all be safe for it to be (none: it is)."""
    if isinstance(node, (ast.Constant, ast.JoinedStr)) or is_str(node):
        return ()
    if isinstance(node, ast.Call):
        return () if _builtin_name(node) in _PRIMITIVE_BUILTINS else True
    if isinstance(node, ast.Attribute):
        if node.attr in _LOGGING_LEVELS:
            return () if dotted_name(node.value) == "logging" else True
        return () if node.attr in _TYPE_NAME_ATTRS and _is_type_call(node.value) else True
    if isinstance(node, ast.Tuple):
        return node.elts
    if isinstance(node, ast.UnaryOp):
        return () if isinstance(node.op, ast.Not) else (node.operand,)
    if isinstance(node, ast.BinOp):
        return (node.left, node.right)
    if isinstance(node, ast.BoolOp):
        return node.values
    if isinstance(node, ast.Compare):
        return () if all(isinstance(op, _BOOL_COMPARISONS) for op in node.ops) else (node.left, *node.comparators)
    if isinstance(node, ast.IfExp):
        return (node.body, node.orelse)
    return True


def is_safe(node: ast.expr) -> bool:
    """Provably an immutable primitive (or a tuple of them): nothing live can reach the cache through it."""
    return not _reaches(node, _unsafe_parts)


def is_unhashable(node: ast.expr, names: frozenset[str] = frozenset()) -> bool:
    """Provably a list, dict, set or bytearray (or an operation that raises TypeError): hashing it raises. `names`
    are the names (and `self.x`) bound only to such values (`unhashable_names`)."""

    def parts(node: ast.expr) -> Literal[True] | Sequence[ast.expr]:  # True: one; else what would make it one
        if isinstance(node, _UNHASHABLE_DISPLAYS):
            return True
        if isinstance(node, (ast.Name, ast.Attribute)):
            return dotted_name(node) in names or ()
        if isinstance(node, ast.Call):
            return _builtin_name(node) in _UNHASHABLE_BUILTINS or ()
        if isinstance(node, ast.Tuple):
            return node.elts
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):  # `sorted(xs)[:10]`: a list again
            return (node.value,)
        if isinstance(node, ast.BinOp):  # `[a] + xs`, `{a} | s`: one of those again, or TypeError (`fmt % [a]`: a str)
            return (node.left,) if isinstance(node.op, ast.Mod) else (node.left, node.right)
        return ()

    return _reaches(node, parts)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp)
_SCOPES += (ast.GeneratorExp,)
_NAMED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler, ast.MatchAs, ast.MatchStar)
Bindings = dict[str, list[ast.expr | None]]  # name -> each value it is bound to (None: a value not known here)


def _walk(body: Sequence[ast.AST]) -> Iterator[tuple[ast.AST, bool]]:
    """Every node under a scope's statements, once, and whether it is the scope's own (not inside a nested
    function, lambda, class or comprehension)."""
    todo = [(node, True) for node in body]
    while todo:
        node, own = todo.pop()
        yield node, own
        inner = own and not isinstance(node, _SCOPES)
        todo.extend((child, inner) for child in ast.iter_child_nodes(node))


def _bind(found: Bindings, target: ast.AST, value: ast.expr | None) -> None:
    """`target = value`: a name, or an attribute chain, bound to `value`; the names inside an unpacking to what
    cannot be known."""
    if isinstance(target, (ast.Name, ast.Attribute)) and (name := dotted_name(target)) is not None:
        found.setdefault(name, []).append(value)
    elif isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                found.setdefault(node.id, []).append(None)


def _bindings(node: ast.AST, found: Bindings) -> None:
    """What one node of a scope binds (an augmented assignment keeps a list, set or dict one: it binds nothing)."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            _bind(found, target, node.value)
    elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
        _bind(found, node.target, node.value)
    elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        _bind(found, ast.Tuple([node.target]), None)
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        _bind(found, ast.Tuple([node.optional_vars]), None)
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            found.setdefault((alias.asname or alias.name).split(".")[0], []).append(None)
    elif isinstance(node, _NAMED) and node.name:  # a def, a class, `except ... as name`, a match's capture
        found.setdefault(node.name, []).append(None)
    elif isinstance(node, ast.MatchMapping) and node.rest:
        found.setdefault(node.rest, []).append(None)


def _attribute_of(name: str, me: str | None) -> bool:
    """`name` is `me.x`: an attribute of the method's `self`."""
    owner, _, attribute = name.partition(".")
    return me is not None and owner == me and "." not in attribute


def unhashable_names(body: Sequence[ast.stmt], args: ast.arguments | None = None) -> frozenset[str]:
    """The names, and attributes of `self` (a method's first parameter), that a scope (a function's body and
    parameters `args`, or a module's statements) binds only to values that cannot be hashed: `x = [1]`, a list on
    every branch, `y = x + [2]`. A parameter, a `global` or `nonlocal` name (anywhere inside), an unpacking or a
    loop's target can be anything; a `self` re-bound leaves its attributes unknown."""
    found: Bindings = {}
    for node, own in _walk(body):
        if own:
            _bindings(node, found)
        if isinstance(node, (ast.Global, ast.Nonlocal)):  # anywhere inside: another scope may re-bind it
            for name in node.names:
                found.setdefault(name, []).append(None)
    for name in params(args) if args else ():
        found.setdefault(name, []).append(None)
    positional = [*args.posonlyargs, *args.args] if args else []
    me = positional[0].arg if positional and len(found[positional[0].arg]) == 1 else None
    candidates = {name: values for name, values in found.items() if "." not in name or _attribute_of(name, me)}
    known: frozenset[str] = frozenset()
    while True:  # the least fixpoint: `y = x + [2]` once `x` is known
        more = frozenset(
            name
            for name, values in candidates.items()
            if all(value is not None and is_unhashable(value, known) for value in values)
        )
        if more == known:
            return known
        known = more


def safe_names(body: Sequence[ast.stmt]) -> frozenset[str]:
    """The names a scope's statements bind only to values that are safe (`is_safe`: `msg = repr(e)`, a string on
    every branch): such a name carries nothing live into the cache. A name bound by anything else (a loop, an
    unpacking, a `global`, a parameter, which is bound nowhere here) is not known to be safe."""
    found: Bindings = {}
    for node, own in _walk(body):
        if own:
            _bindings(node, found)
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                found.setdefault(name, []).append(None)
    return frozenset(
        name
        for name, values in found.items()
        if "." not in name and all(value is not None and is_safe(value) for value in values)
    )


def _is_sys(node: ast.expr, names: frozenset[str]) -> bool:
    return isinstance(node, ast.Attribute) and node.attr in names and dotted_name(node.value) == "sys"


def handled_exception(node: ast.AST) -> bool | None:
    """True for `sys`'s view of the exception being handled (`sys.exc_info()`, `sys.exception()`, ...), False for
    the class alone (`sys.exc_info()[0]`), None for anything else."""
    if isinstance(node, ast.Call):
        return True if _is_sys(node.func, _SYS_EXCEPTION_CALLS) else None
    if isinstance(node, ast.Attribute):
        return True if _is_sys(node, _SYS_EXCEPTION_ATTRS) else None
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call) and handled_exception(node.value):
        index = node.slice
        return False if isinstance(index, ast.Constant) and index.value == 0 else None
    return None


def params(args: ast.arguments) -> set[str]:
    """The names a function's or lambda's parameters bind."""
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return {a.arg for a in every if a is not None}


def carries(node: ast.AST, live: frozenset[str] | set[str]) -> bool:
    """Whether a live exception (one named in `live`, or the one being handled) can reach the expression's value
    (not through a safe part)."""
    return _reaches((node, live), _carrying_parts)


def _carrying_parts(
    at: tuple[ast.AST, frozenset[str] | set[str]],
) -> Literal[True] | Sequence[tuple[ast.AST, frozenset[str] | set[str]]]:
    """True when the node carries a live exception by itself; else its parts that may (each with the names live
    there)."""
    node, live = at
    # An operation is safe when it formats a str or both its operands are: it carries through an operand that
    # carries, so its own `is_safe` (which walks its operands down) is not asked again at every level of
    # `a + b + ... + e` (quadratic in the chain's length).
    if isinstance(node, ast.BinOp):
        return () if is_str(node) else ((node.left, live), (node.right, live))
    if isinstance(node, ast.expr) and is_safe(node):
        return ()
    handled = handled_exception(node)
    if handled is not None:
        return handled or ()
    if isinstance(node, ast.Name):
        return node.id in live or ()
    if isinstance(node, ast.Attribute) and node.attr == "args" and _is_group(node.value, live):
        return True  # an `except*` group's args: its exceptions
    if isinstance(node, ast.Attribute) and node.attr in EXCEPTION_DATA:
        return ()  # the exception's data, not the exception
    if _is_type_call(node):  # type(e): the class
        return ()
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Lambda):  # called at once: what its body makes
        return ((node.func.body, _lambda_live(node.func, node, live)),)
    if isinstance(node, ast.Lambda):  # its defaults are held by the function, and bound to its parameters
        defaults = [d for d in (*node.args.defaults, *node.args.kw_defaults) if d is not None]
        return [*((d, live) for d in defaults), (node.body, set(live) - params(node.args))]
    if isinstance(node, _COMPREHENSIONS):  # a target iterating over what carries one carries it
        inner = set(live) | comprehension_names(node, live)
        return [(child, inner) for child in ast.iter_child_nodes(node)]
    return [(child, live) for child in ast.iter_child_nodes(node)]


def _lambda_live(fn: ast.Lambda, call: ast.Call, live: frozenset[str] | set[str]) -> set[str]:
    """The live names in a lambda's body called at once: the enclosing ones it does not shadow, its parameters given
    a live argument (any one: positions are not followed) or a live default."""
    inner = set(live) - params(fn.args)
    if any(carries(arg, live) for arg in [*call.args, *(k.value for k in call.keywords)]):
        inner |= params(fn.args)
    positional = [*fn.args.posonlyargs, *fn.args.args]
    pairs = [*zip(positional[len(positional) - len(fn.args.defaults) :], fn.args.defaults, strict=True)]
    pairs += [(arg, default) for arg, default in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True) if default]
    return inner | {arg.arg for arg, default in pairs if carries(default, live)}


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def comprehension_names(node: ast.AST, live: frozenset[str] | set[str]) -> set[str]:
    """The names the comprehensions under `node` bind to what iterates over a live exception (`x` of
    `[f(x) for x in [e]]`), generator by generator."""
    bound: set[str] = set()
    for comp in (n for n in ast.walk(node) if isinstance(n, _COMPREHENSIONS)):
        for generator in comp.generators:
            if carries(generator.iter, set(live) | bound):
                bound |= {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
    return bound


def _bound_pairs(stmt: ast.stmt) -> list[tuple[ast.AST, ast.expr | None]]:
    """(target, value) for each binding a statement makes; value None for one that binds what is not known here
    (a `del`, an import)."""
    if isinstance(stmt, ast.Assign):
        return [(target, stmt.value) for target in stmt.targets]
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and stmt.value is not None:
        return [(stmt.target, stmt.value)]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [(stmt.target, stmt.iter)]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [(item.optional_vars, item.context_expr) for item in stmt.items if item.optional_vars]
    if isinstance(stmt, ast.Delete):
        return [(target, None) for target in stmt.targets]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(ast.Name((alias.asname or alias.name).split(".")[0]), None) for alias in stmt.names]
    return []


# In a set of live names, `GROUP + name` says `name` is an `except*` handler's group: its `args` holds its exceptions
# (a plain exception's `args` is its data: `EXCEPTION_DATA`). Never a name itself.
GROUP = "*"


def _is_group(node: ast.AST, live: frozenset[str] | set[str]) -> bool:
    return isinstance(node, ast.Name) and GROUP + node.id in live


def handler_binds(name: str | None, star: bool) -> set[str]:
    """The live names a handler `except ... as name` binds (none without a name); for an `except*` one, its group's
    mark too."""
    return set() if not name else {name, GROUP + name} if star else {name}


def rebind(stmt: ast.stmt, live: set[str], may_carry: bool = True) -> None:
    """What one statement does to the names holding a live exception (in place): a name it binds to a value that
    carries one is live, a name it binds to anything else is not (an augmented assignment adds, never clears).
    `may_carry` False says no value can carry one (no live name, no `sys` in the file): only clearing is left."""
    for target, value in _bound_pairs(stmt):
        bound = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        marks = {GROUP + name for name in bound}
        if value is not None and may_carry and carries(value, live):
            group = _is_group(value, live)  # `err = eg`: a group still
            live -= marks
            live |= bound | (marks if group else set())
        elif not isinstance(stmt, ast.AugAssign):
            live -= bound | marks


def flow(body: Sequence[ast.stmt], live: set[str]) -> None:
    """The names holding a live exception after `body` runs (in place), as the audit follows them: statements in
    order (`rebind`); a block that may or may not run (a branch, a loop's body, a `with`'s body, a `try`'s) adds
    what it binds and clears nothing outside it; a handler's name is live inside it and unbound after it; a
    nested function or class binds its own name only."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            live.discard(stmt.name)
        elif isinstance(stmt, (ast.Try, ast.TryStar)):
            live |= branch(stmt.body, live)
            for handler in stmt.handlers:
                bound = handler_binds(handler.name, isinstance(stmt, ast.TryStar))
                inner = live | bound
                flow(handler.body, inner)
                live |= inner
                live -= bound
            live |= branch(stmt.orelse, live)
            flow(stmt.finalbody, live)
        else:
            rebind(stmt, live)
            bodies = [case.body for case in stmt.cases] if isinstance(stmt, ast.Match) else []
            bodies += [block for attr in ("body", "orelse") if isinstance(block := getattr(stmt, attr, None), list)]
            for block in bodies:
                live |= branch(block, live)


def branch(body: Sequence[ast.stmt], live: set[str]) -> set[str]:
    """The live names after a block that may or may not run: those of `live` and what it binds (`flow`)."""
    inner = set(live)
    flow(body, inner)
    return inner


def argument_kind(
    node: ast.expr, live: frozenset[str] | set[str] = frozenset(), unhashable: frozenset[str] = frozenset()
) -> str | None:
    """None for a safe argument, else its kind (`unhashable`, then `exception` first: docs/reference.md, The audit);
    `unhashable` names what the function binds only to values that cannot be hashed (`unhashable_names`)."""
    if is_safe(node):
        return None
    if is_unhashable(node, unhashable):
        return UNHASHABLE
    if carries(node, live):
        return EXCEPTION
    return next((kind for types, kind in _KINDS if isinstance(node, types)), "expression")


def argument_kind_of_source(argument: str, live: frozenset[str] | set[str]) -> str | None:
    """`argument_kind` for an argument given as source text (as libcst renders it)."""
    return argument_kind(ast.parse(f"({argument})", mode="eval").body, live)
