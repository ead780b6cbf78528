"""The cache-level fix of a vLLM-shaped logger module: its `*_once` methods remember the rendered message, never the
arguments, and emit the record vLLM emits.

vLLM's `_print_{debug,info,warning,error}_once` are `functools.lru_cache`s on `(logger, msg, *args)`: whatever a
caller passes (an exception, and through its traceback every frame and its locals) stays in the cache. `patched`
rewrites such a module's source, for every `*_once` cache it defines (any level, any name, `lru_cache` or `cache`):

    def _print_warning_once(logger: Logger, msg: str, *args: Hashable) -> None:   # no cache: the same record,
        logger.warning(msg, *args, stacklevel=3)                                    # from the caller's line

    key = _once_key(self, logging.WARNING, msg, args)   # first in warning_once: (logger, level, text), or None
    if key is None:  # the level is off, or the message was logged already         # when the level is off (nothing
        return                                                                       # rendered) or seen already
    ...                                                  # the method as it was (the scope= check)
    _once_logged[key] = None                             # a bounded set of keys (a dict), the older half dropped
    _print_warning_once(self, msg, *args)

The first call of a message emits exactly vLLM's record (`msg` the template, `args` the arguments, the caller's
file:line); only what is remembered changed. A repeated call returns before the scope check, so it costs less than
vLLM's; a call whose arguments do not fit is keyed by their types and logged once, as vLLM's cache logged it
(logging reports it). The edits are made in place, so the rest of the module keeps its bytes; what is inserted is
written as `ruff format` writes it at vLLM's settings.

A patched module is told from vLLM's by `caches.renders_first`, the audit's and strict mode's reading of a logger
module: nothing but text reaches a cache. `PATCH_MUTANTS` are three ways back to keeping the arguments, which the
patch's own test must kill.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from warnonce_guard.caches.model import Resolve, decorator_maxsize, imports_of
from warnonce_guard.caches.renders_first import leaking, once_methods
from warnonce_guard.common.errors import LoggerNotPatchable, NothingToCheck

KEY, TEXT, CLEAR = "_once_key", "_once_text", "_once_clear"  # the functions the patch adds
STORE, MAXSIZE = "_once_logged", "_ONCE_MAXSIZE"
LINE_LENGTH = 88  # vLLM's (ruff's default, which its pyproject.toml keeps)
_SEEN_COMMENT = "the level is off, or the message was logged already"
_KEY_NAMES = ("key", "once_key", "logged_key")  # the local holding the key: the first unused
# A logging method's level, as `logging` names it (`logger.warn` and `logger.fatal` are its aliases).
LEVELS = {"debug": "DEBUG", "info": "INFO", "warning": "WARNING", "warn": "WARNING", "error": "ERROR"}
LEVELS |= {"exception": "ERROR", "critical": "CRITICAL", "fatal": "CRITICAL"}


__all__ = [
    "PATCH_MUTANTS",
    "LoggerNotPatchable",
    "PatchMutant",
    "Printer",
    "once_methods",
    "patched",
    "printers",
    "python_lines",
]


@dataclass(frozen=True)
class Printer:
    """A cached function of a logger module that a `*_once` method passes its message and arguments to."""

    name: str
    node: ast.FunctionDef
    maxsize: int | None  # the cache's bound (None: unbounded, `functools.cache`)
    decorators: tuple[ast.expr, ...]  # its cache decorators, as the module's imports name them (`imports_of`)

    @property
    def where(self) -> str:
        return f"{self.name} (line {self.node.lineno})"


def _cache_decorators(node: ast.FunctionDef, resolve: Resolve) -> list[tuple[ast.expr, int | None]]:
    found = []
    for decorator in node.decorator_list:
        cached, maxsize = decorator_maxsize(decorator, resolve)
        if cached:
            found.append((decorator, maxsize))
    return found


def _passed_args(node: ast.AST) -> set[str]:
    """The functions `node` passes a `*args` to (where a `*_once` method's arguments go)."""
    calls = [n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    return {call.func.id for call in calls if any(isinstance(a, ast.Starred) for a in call.args)}  # type: ignore[attr-defined]


def _once_functions(tree: ast.Module) -> Iterator[ast.FunctionDef]:
    """Every `def` of the module named `*_once`: at its top, or a method of one of its classes."""
    for node in tree.body:
        inner = node.body if isinstance(node, ast.ClassDef) else [node]
        yield from (n for n in inner if isinstance(n, ast.FunctionDef) and n.name.endswith("_once"))


def printers(tree: ast.Module) -> list[Printer]:
    """The module's `*_once` caches, in source order: its cached top-level functions named `*_once`, or given a
    `*_once` function's or method's `*args`."""
    called = set().union(*(_passed_args(f) for f in _once_functions(tree)))
    found, resolve = [], imports_of(tree)
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or not (node.name.endswith("_once") or node.name in called):
            continue
        decorators = _cache_decorators(node, resolve)
        if decorators:
            found.append(Printer(node.name, node, decorators[0][1], tuple(d for d, _ in decorators)))
    return found


@dataclass(frozen=True)
class _Edit:
    """Replace the lines from `line` up to `end_line` (1-based, `end_line` not included) by `text`."""

    line: int
    end_line: int
    text: str

    @classmethod
    def lines(cls, first: int, last: int, text: str) -> _Edit:
        """Lines `first` to `last`, whole (their line ends included)."""
        return cls(first, last + 1, text)

    @classmethod
    def before(cls, line: int, text: str) -> _Edit:
        return cls(line, line, text)


def python_lines(source: str) -> list[str]:
    """`source`'s lines with their ends, as Python numbers them: `str.splitlines` also ends one at a form feed, U+2028
    or U+0085, which Python does not."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+", source)


def _apply(source: str, edits: list[_Edit]) -> str:
    """`source` with `edits` made; of edits starting on one line, a later one's text goes before an earlier one's."""
    starts = [0]  # where each line starts, and the end of the source
    for line in python_lines(source):
        starts.append(starts[-1] + len(line))
    out = source
    for edit in sorted(edits, key=lambda e: e.line, reverse=True):  # stable: edits of one line in their order
        out = out[: starts[edit.line - 1]] + edit.text + out[starts[edit.end_line - 1] :]
    return out


def _last_line(node: ast.stmt | ast.expr) -> int:
    return node.end_lineno or node.lineno


def _code_after(node: ast.stmt | ast.expr, lines: list[str]) -> bool:
    """Whether code follows `node` on its last line (after a `;`); a comment is no code. (Not for a decorator: a
    comment there may precede its closing parenthesis.)"""
    rest = lines[_last_line(node) - 1].encode()[node.end_col_offset :].decode().strip()
    return bool(rest) and not rest.startswith("#")


def _level(printer: Printer) -> str:
    """The level the printer logs at (`WARNING`), from its one `logger.<level>(msg, *args, ...)` call."""
    node, params = printer.node, printer.node.args
    if params.vararg is None or len(params.args) != 2 or params.kwonlyargs or params.kwarg or params.posonlyargs:
        raise LoggerNotPatchable(f"{printer.where} does not take (logger, msg, *args) as vLLM's do")
    logger, msg, vararg = params.args[0].arg, params.args[1].arg, params.vararg.arg
    calls = [
        n
        for n in ast.walk(node)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and ast.unparse(n.func.value) == logger
    ]
    if len(calls) != 1 or [ast.unparse(a) for a in calls[0].args] != [msg, f"*{vararg}"]:
        raise LoggerNotPatchable(f"{printer.where} does not make one `{logger}.<level>({msg}, *{vararg}, ...)` call")
    method = calls[0].func.attr  # type: ignore[attr-defined]
    if method not in LEVELS:
        raise LoggerNotPatchable(f"{printer.where} logs with `{logger}.{method}`, not a method of one level")
    return LEVELS[method]


def _decorator_edits(printer: Printer, lines: list[str]) -> tuple[list[_Edit], set[str]]:
    """Remove the printer's cache decorator lines; the names they used (whose imports may go)."""
    edits, names = [], set()
    for decorator in printer.decorators:
        first, last = decorator.lineno, _last_line(decorator)  # a printer is at the module's top: no indentation
        if not lines[first - 1].startswith("@") or lines[last - 1][decorator.end_col_offset :].strip():
            raise LoggerNotPatchable(f"{printer.where}: its cache decorator shares its line with other code")
        edits.append(_Edit.lines(first, last, ""))
        root = decorator.func if isinstance(decorator, ast.Call) else decorator
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name):
            names.add(root.id)
    return edits, names


@dataclass(frozen=True)
class _Site:
    """A statement `printer(logger, msg, *args)` in the `*_once` function `function`."""

    printer: Printer
    statement: ast.Expr
    logger: str
    msg: str
    args: str
    function: ast.FunctionDef


def _call_sites(tree: ast.Module, by_name: dict[str, Printer]) -> Iterator[_Site]:
    def visit(node: ast.AST, function: ast.FunctionDef | None) -> Iterator[_Site]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id in by_name:
                yield _site_of(child, node, by_name[child.func.id], function)
            yield from visit(child, child if isinstance(child, ast.FunctionDef) else function)

    yield from visit(tree, None)


def _site_of(call: ast.Call, parent: ast.AST, printer: Printer, function: ast.FunctionDef | None) -> _Site:
    names = [ast.unparse(a) for a in call.args]
    where = f"the call of {printer.name} on line {call.lineno}"
    if not isinstance(parent, ast.Expr) or call.keywords or len(names) != 3 or not names[2].startswith("*"):
        raise LoggerNotPatchable(f"{where} is not `{printer.name}(self, msg, *args)` as a statement")
    if function is None:
        raise LoggerNotPatchable(f"{where} is not in a function")
    logger, msg, args = names[0], names[1], names[2][1:]
    params = function.args
    own = {a.arg for a in (*params.posonlyargs, *params.args)}
    stored = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    vararg = params.vararg.arg if params.vararg else None
    if logger not in own or msg not in own or args != vararg or stored & {logger, msg, args}:
        raise LoggerNotPatchable(f"{where} does not pass {function.name}'s own (self, msg, *args) as it got them")
    return _Site(printer, parent, logger, msg, args, function)


def _key_name(function: ast.FunctionDef) -> str:
    used = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}
    used |= {a.arg for a in ast.walk(function) if isinstance(a, ast.arg)}
    return next(name for name in _KEY_NAMES if name not in used)


def _site_edits(site: _Site, level: str, lines: list[str]) -> list[_Edit]:
    """The key first in the `*_once` function (after its docstring); remembered just before the printer's call."""
    first = site.statement.lineno
    indent = lines[first - 1][: site.statement.col_offset]
    if indent.strip() or _code_after(site.statement, lines):
        raise LoggerNotPatchable(f"the call on line {first} shares its line with other code")
    key = _key_name(site.function)
    body = site.function.body
    docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    head = lines[body[0].lineno - 1][: body[0].col_offset]  # the function's indentation (its call's is checked)
    at = _last_line(body[0]) + 1 if docstring else body[0].lineno
    key_block = (
        f"{key} = {KEY}({site.logger}, logging.{level}, {site.msg}, {site.args})",
        f"if {key} is None:  # {_SEEN_COMMENT}",
        "    return",
    )
    block, remember = "".join(f"{head}{line}\n" for line in key_block), f"{indent}{STORE}[{key}] = None\n"
    if at == first:  # the call is the function's first statement
        return [_Edit.before(first, block + remember)]
    return [_Edit.before(at, block), _Edit.before(first, remember)]


def helper_source(
    logger_type: str | None, args_type: str | None, sizes: list[int | None], names: dict[str, str]
) -> str:
    """The functions the patch adds before the first printer (annotated as the printers are)."""
    mapping = names["Mapping"]
    if logger_type is not None:
        key_type, values = f"tuple[{logger_type}, int, str]", f"tuple[{args_type or 'object'}, ...]"
        store = f"{STORE}: dict[{key_type}, None] = {{}}"
        key_def = (
            f"def {KEY}(\n    logger: {logger_type}, level: int, msg: str, args: {values}\n) -> {key_type} | None:"
        )
        text_def = f"def {TEXT}(msg: str, args: {values}) -> str:"
        clear_def = f"def {CLEAR}(level: int) -> None:"
    else:
        store, key_def, text_def = f"{STORE} = {{}}", f"def {KEY}(logger, level, msg, args):", f"def {TEXT}(msg, args):"
        clear_def = f"def {CLEAR}(level):"
    what = "lru_cache" if len(sizes) == 1 else f"{len(sizes)} lru_caches"
    if None in sizes:
        bound, forget = f"# What the *_once methods logged (unbounded, as the {what} before).\n", ""
    else:
        maxsize = sum(filter(None, sizes))
        each = f"{maxsize // len(sizes)} calls each" if len(set(sizes)) == 1 < len(sizes) else f"{maxsize} calls in all"
        bound = f"{MAXSIZE} = {maxsize}  # as the {what} of the *_once methods kept {each}\n"
        forget = f"""\
    if len({STORE}) >= {MAXSIZE}:  # full: the older half is forgotten
        for old in list({STORE})[: {MAXSIZE} // 2]:
            {STORE}.pop(old, None)
"""
    return f'''\
{bound}{store}


{key_def}
    """The key a *_once call is remembered by: its logger, level and text.

    The text as logging.LogRecord.getMessage renders it, never the arguments: an
    argument kept in a cache (an exception, with every frame on its traceback)
    would never be freed. None when the level is disabled (nothing is rendered)
    or the message was logged already.
    """
    if not logger.isEnabledFor(level):
        return None
    try:
        text = str(msg) % args if args else str(msg)
    except Exception:
        text = {TEXT}(msg, args)
    key = (logger, level, text)
    if key in {STORE}:
        return None
{forget}    return key


{text_def}
    """The text of a *_once call that `str(msg) % args` refuses: a single mapping
    renders as logging renders it; arguments that do not fit the message are
    known by their types (logging reports the call when it is logged).
    """
    single = len(args) == 1 and isinstance(args[0], {mapping}) and args[0]
    try:
        return str(msg) % (args[0] if single else args)
    except Exception:
        return f"{{msg!r}} % ({{', '.join(type(arg).__name__ for arg in args)}})"


{clear_def}
    """Forget one level's messages: what cache_clear() of its lru_cache did."""
    for key in [key for key in {STORE} if key[1] == level]:
        {STORE}.pop(key, None)


'''


def clear_source(levels: list[tuple[str, str]]) -> str:
    """After the last printer: each printer's `cache_clear()`, as its lru_cache had (vLLM's tests call it)."""
    pairs = "".join(f"    ({name}, logging.{level}),\n" for name, level in levels)
    return f"""

# As the lru_caches had: _print_<level>_once.cache_clear() forgets that level.
for _printer, _level in (
{pairs}):
    _printer.cache_clear = partial({CLEAR}, _level)  # type: ignore[attr-defined]
"""


def _annotation(arg: ast.arg | None) -> str | None:
    return ast.unparse(arg.annotation) if arg is not None and arg.annotation is not None else None


def _stdlib_module(node: ast.Import | ast.ImportFrom) -> str | None:
    """The module of the standard library `node` imports from, or None (a relative import is the package's own)."""
    if isinstance(node, ast.ImportFrom) and node.level:
        return None
    module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
    return module if module is not None and module.split(".")[0] in sys.stdlib_module_names else None


def _from_import(module: str, names: list[str]) -> str:
    flat = f"from {module} import {', '.join(names)}\n"
    if len(flat) <= LINE_LENGTH + 1:
        return flat
    return "".join([f"from {module} import (\n", *(f"    {name},\n" for name in names), ")\n"])


def _own_lines(node: ast.stmt, lines: list[str]) -> tuple[int, int]:
    """The first and last line of `node`, an import to rewrite: refused when it shares them with other code (after a
    `;`), which the rewrite would drop."""
    first, last = node.lineno, _last_line(node)
    if lines[first - 1][: node.col_offset].strip() or _code_after(node, lines):
        raise LoggerNotPatchable(f"`{ast.unparse(node)}` shares its line with other code: give it a line of its own")
    return first, last


def _top_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    return [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]


def _import_edits(tree: ast.Module, lines: list[str]) -> tuple[dict[str, str], list[_Edit]]:
    """The name `Mapping` has in the module, and the edits that import it and `logging` where isort puts them (none
    for what is imported already)."""
    top = _top_imports(tree)
    stdlib = [(node, found) for node in top if (found := _stdlib_module(node))]
    if not stdlib:
        raise LoggerNotPatchable("it imports nothing from the standard library: no place for the patch's imports")
    after_stdlib = _last_line(stdlib[-1][0]) + 1
    # the from-imports an insertion may precede: never `from __future__`, which must come first
    froms = [(n.lineno, m) for n, m in stdlib if isinstance(n, ast.ImportFrom) and m != "__future__"]
    inserted: dict[int, list[str]] = {}  # line -> the import lines inserted before it
    edits = []
    if not any(isinstance(n, ast.Import) and any(a.name == "logging" and not a.asname for a in n.names) for n in top):
        # before the first later plain import (`import logging as x` included, as isort sorts) or from-import
        later = [node.lineno for node, module in stdlib if isinstance(node, ast.Import) and module >= "logging"]
        inserted.setdefault(min([*later, *(line for line, _ in froms), after_stdlib]), []).append("import logging\n")
    names = {}
    for modules, name in ((("collections.abc", "typing"), "Mapping"), (("functools",), "partial")):
        held = [
            alias.asname or alias.name
            for node in top
            if isinstance(node, ast.ImportFrom) and node.module in modules and not node.level
            for alias in node.names
            if alias.name == name
        ]
        names[name] = held[0] if held else name
        if held:
            continue
        module = modules[0]
        same = [n for n in top if isinstance(n, ast.ImportFrom) and n.module == module and not n.level]
        if same:  # it gains the name (an insertion on its line goes before it)
            kept = sorted([*(ast.unparse(alias) for alias in same[0].names), name])
            edits.append(_Edit.lines(*_own_lines(same[0], lines), _from_import(module, kept)))
            continue
        later = [line for line, other in froms if other.lower() > module]
        inserted.setdefault(min([*later, after_stdlib]), []).append(f"from {module} import {name}\n")
    edits += [_Edit.before(line, "".join(lines)) for line, lines in inserted.items()]
    return names, edits


def _unused_imports(source: str, names: set[str]) -> str:
    """The source without the imports of `names` (the cache decorators) that nothing uses any more."""
    tree, lines = ast.parse(source), python_lines(source)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    edits = []
    for node in _top_imports(tree):
        bound = [(alias, alias.asname or alias.name.split(".")[0]) for alias in node.names]
        kept = [ast.unparse(alias) for alias, name in bound if name not in names or name in used]
        if len(kept) == len(bound):
            continue
        first, last = _own_lines(node, lines)
        if not kept:
            edits.append(_Edit.lines(first, last, ""))
        elif isinstance(node, ast.ImportFrom):
            edits.append(_Edit.lines(first, last, _from_import("." * node.level + (node.module or ""), kept)))
        else:
            edits.append(_Edit.lines(first, last, f"import {', '.join(kept)}\n"))
    return _apply(source, edits)


def patched(source: str, where: str = "the logger module") -> str:
    """The module's source with the fix: `NothingToCheck` when no `*_once` method's arguments reach a cache already,
    `LoggerNotPatchable` naming the function that cannot be patched (`where` names the file in both)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise LoggerNotPatchable(f"{where} does not parse ({err.msg}, line {err.lineno})") from None
    if not list(_once_functions(tree)):
        raise LoggerNotPatchable(f"{where} defines no *_once function or method: not vLLM's logger module")
    if not leaking(source):
        raise NothingToCheck(f"{where} renders *_once messages before caching them already: nothing to patch")
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign | ast.AnnAssign) for t in _targets(n)}
    taken = sorted({KEY, TEXT, CLEAR, STORE, MAXSIZE} & defined)
    if taken:
        raise LoggerNotPatchable(f"{where} defines {taken[0]} already")
    try:
        found = printers(tree)
        if not found:
            raise LoggerNotPatchable(
                f"{', '.join(leaking(source))} passes its arguments to a cache that is not a cached function of the "
                "module; patch it by hand"
            )
        edits, names = _edits(tree, found, python_lines(source))
        result = _unused_imports(_apply(source, edits), names)
    except LoggerNotPatchable as err:
        raise LoggerNotPatchable(f"{where}: {err}") from None
    still = leaking(result)
    if still:
        raise LoggerNotPatchable(f"{where}: {', '.join(still)} still passes its arguments to a cache after the patch")
    return result


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.Name]:
    return [t for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)]


def _edits(tree: ast.Module, found: list[Printer], lines: list[str]) -> tuple[list[_Edit], set[str]]:
    edits: list[_Edit] = []
    names: set[str] = set()
    levels = {printer.name: _level(printer) for printer in found}
    for printer in found:
        decorator_edits, used = _decorator_edits(printer, lines)
        edits += decorator_edits
        names |= used
    sites = list(_call_sites(tree, {p.name: p for p in found}))
    for printer in found:
        if not any(site.printer is printer for site in sites):
            raise LoggerNotPatchable(f"nothing calls {printer.name}")
    seen: set[str] = set()
    for site in sites:
        if site.function.name in seen:
            raise LoggerNotPatchable(f"{site.function.name} calls a *_once cache twice")
        seen.add(site.function.name)
        edits += _site_edits(site, levels[site.printer.name], lines)
    bound, import_edits = _import_edits(tree, lines)
    last = found[-1].node  # printers are in source order
    clear = clear_source([(p.name, levels[p.name]) for p in found]).replace("partial(", f"{bound['partial']}(")
    edits.append(_Edit.before(_last_line(last) + 1, clear))
    first = found[0].node
    start = min([first.lineno, *(d.lineno for d in first.decorator_list)])
    sizes = [p.maxsize for p in found]
    helper = helper_source(_annotation(first.args.args[0]), _annotation(first.args.vararg), sizes, bound)
    return [*edits, *import_edits, _Edit.before(start, helper)], names


@dataclass(frozen=True)
class PatchMutant:
    """A way back from the patched module to a cache that keeps the arguments (the patch's test must kill it)."""

    name: str
    description: str
    apply: Callable[[str], str]


def _sub(pattern: str, replacement: str, text: str) -> str:
    out, count = re.subn(pattern, replacement, text, flags=re.MULTILINE)
    if not count:
        raise ValueError(f"the patched module has no `{pattern}`: the patch's shape changed")
    return out


def _cache_on_args(text: str) -> str:
    return _sub(r"^(def _print_\w+_once\()", r"import functools\n\n\n@functools.lru_cache\n\1", text)


def _key_on_args(text: str) -> str:
    return _sub(r"^(    key = \(logger, level, text)\)$", r"\1, args)", text)


def _render_dropped(text: str) -> str:
    return _sub(r"^(        text = )str\(msg\) % args if args else str\(msg\)$", r"\1(msg, *args)", text)


PATCH_MUTANTS: tuple[PatchMutant, ...] = (
    PatchMutant("cache-on-args", "the lru_cache on (logger, msg, *args) is back on each printer", _cache_on_args),
    PatchMutant("key-on-args", "the remembered key holds the arguments beside the text", _key_on_args),
    PatchMutant("render-dropped", "no render: the key holds the message and its arguments", _render_dropped),
)
