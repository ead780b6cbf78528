"""The cache-level fix of a vLLM-shaped logger module: its `*_once` caches keep the rendered message only.

vLLM's `_print_{debug,info,warning,error}_once` are `functools.lru_cache`s on `(logger, msg, *args)`: whatever a
caller passes (an exception, and through its traceback every frame and its locals) stays in the cache. `patched`
rewrites such a module's source so that each `*_once` method renders `msg % args` first, as
`logging.LogRecord.getMessage` does, and hands the cache `(logger, text)` alone:

    @lru_cache
    def _print_warning_once(logger: Logger, msg: str) -> None:      # (logger, msg): the cache holds text only
        logger.warning(msg, stacklevel=3)                            # the caller's file:line, as before

    text = _render_once(msg, args)                                   # in warning_once, after the scope check
    if text is None:  # logging reports the mismatch; nothing is cached
        self.warning(msg, *args, stacklevel=2)
    else:
        _print_warning_once(self, text)

What is emitted is the same text (a record of the rendered message and no arguments), from the same file and line;
a call whose arguments do not fit its message goes to logging as it is, which reports it as it reports any such
call (each time: the cache never sees it). The edits are made in place, so the rest of the module keeps its bytes
and its diff is small; what is inserted is written as `ruff format` writes it at vLLM's settings.

A patched module is told from vLLM's by `rule.renders_first`, the audit's and strict mode's reading of a logger
module: nothing but rendered text reaches a cache. `PATCH_MUTANTS` are the three ways back to a cache that keeps the
arguments, which the patch's own test must kill.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from warnonce_guard.caches.renders_first import renders_first
from warnonce_guard.common.errors import LoggerNotPatchable, NothingToCheck

PRINTER = re.compile(r"_print_(?P<level>debug|info|warning|error)_once")
HELPER = "_render_once"  # the function the patch adds before the first printer
LINE_LENGTH = 88  # vLLM's (ruff's default, which its pyproject.toml keeps)
_FALLBACK_COMMENT = "logging reports the mismatch; nothing is cached"
_TEXT_NAMES = ("text", "rendered", "rendered_message")  # the local holding the rendered message: the first unused


__all__ = ["PATCH_MUTANTS", "LoggerNotPatchable", "PatchMutant", "Printer", "patched", "printers"]


@dataclass(frozen=True)
class Printer:
    """One `lru_cache`d `_print_<level>_once` of a logger module."""

    name: str
    level: str
    node: ast.FunctionDef

    @property
    def keeps_arguments(self) -> bool:
        """It takes more than `(logger, msg)`: what a caller passes beside the message is part of the cache's key."""
        params = self.node.args
        named = params.posonlyargs + params.args + params.kwonlyargs
        return len(named) != 2 or params.vararg is not None or params.kwarg is not None


def _is_lru_cache(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
    return name == "lru_cache"


def printers(tree: ast.Module) -> list[Printer]:
    """The module's `lru_cache`d `_print_<level>_once` functions, in source order."""
    found = []
    for node in tree.body:
        match = PRINTER.fullmatch(node.name) if isinstance(node, ast.FunctionDef) else None
        if match and any(_is_lru_cache(d) for d in node.decorator_list):
            found.append(Printer(node.name, match["level"], node))
    return found


@dataclass(frozen=True)
class _Edit:
    """Replace the source from (line, column) to (end line, end column): 1-based lines, UTF-8 byte columns."""

    line: int
    column: int
    end_line: int
    end_column: int
    text: str

    @classmethod
    def between(cls, start: ast.expr | ast.arg, end: ast.expr | ast.arg, text: str = "") -> _Edit:
        """From the end of `start` to the end of `end`."""
        return cls(start.end_lineno or 0, start.end_col_offset or 0, end.end_lineno or 0, end.end_col_offset or 0, text)

    @classmethod
    def lines(cls, first: int, last: int, text: str) -> _Edit:
        """Lines `first` to `last`, whole (their line ends included)."""
        return cls(first, 0, last + 1, 0, text)


def _apply(source: str, edits: list[_Edit]) -> str:
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, column: int) -> int:
        if line > len(lines):
            return len(source)
        return starts[line - 1] + len(lines[line - 1].encode("utf-8")[:column].decode("utf-8"))

    out = source
    for edit in sorted(edits, key=lambda e: (e.line, e.column), reverse=True):
        out = out[: offset(edit.line, edit.column)] + edit.text + out[offset(edit.end_line, edit.end_column) :]
    return out


def _printer_edits(printer: Printer) -> tuple[list[_Edit], int]:
    """Drop `*args` from the printer's parameters and from its one logging call; that call's stacklevel."""
    node, what = printer.node, f"{printer.name} (line {printer.node.lineno})"
    params, vararg = node.args, node.args.vararg
    if vararg is None or len(params.args) != 2 or params.kwonlyargs or params.kwarg or params.posonlyargs:
        raise LoggerNotPatchable(f"{what} does not take (logger, msg, *args) as vLLM's do")
    logger, msg = (arg.arg for arg in params.args)
    calls = [
        n
        for n in ast.walk(node)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and ast.unparse(n.func) == f"{logger}.{printer.level}"
    ]
    if len(calls) != 1 or [ast.unparse(a) for a in calls[0].args] != [msg, f"*{vararg.arg}"]:
        raise LoggerNotPatchable(f"{what} does not make one `{logger}.{printer.level}({msg}, *{vararg.arg}, ...)` call")
    (call,) = calls
    levels = [k.value for k in call.keywords if k.arg == "stacklevel"]
    if len(call.keywords) != 1 or not (isinstance(levels[0], ast.Constant) and isinstance(levels[0].value, int)):
        raise LoggerNotPatchable(f"{what} does not log with a constant stacklevel and nothing else")
    return [_Edit.between(params.args[-1], vararg), _Edit.between(call.args[0], call.args[1])], levels[0].value


@dataclass(frozen=True)
class _Site:
    """A statement `_print_<level>_once(logger, msg, *args)` and the function it is in."""

    printer: Printer
    statement: ast.Expr
    logger: str
    msg: str
    args: str
    function: ast.FunctionDef | None


def _call_sites(tree: ast.Module, by_name: dict[str, Printer]) -> Iterator[_Site]:
    def visit(node: ast.AST, function: ast.FunctionDef | None) -> Iterator[_Site]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id in by_name:
                yield _site_of(child, node, by_name[child.func.id], function)
            yield from visit(child, child if isinstance(child, ast.FunctionDef) else function)

    yield from visit(tree, None)


def _site_of(call: ast.Call, parent: ast.AST, printer: Printer, function: ast.FunctionDef | None) -> _Site:
    names = [ast.unparse(a) for a in call.args]
    shaped = len(names) == 3 and names[0].isidentifier() and names[1].isidentifier() and names[2][1:].isidentifier()
    if not isinstance(parent, ast.Expr) or call.keywords or not shaped or not names[2].startswith("*"):
        raise LoggerNotPatchable(
            f"the call of {printer.name} on line {call.lineno} is not `{printer.name}(self, msg, *args)` as a statement"
        )
    return _Site(printer, parent, names[0], names[1], names[2][1:], function)


def _text_name(function: ast.FunctionDef | None) -> str:
    if function is None:
        return _TEXT_NAMES[0]
    used = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}
    used |= {a.arg for a in ast.walk(function) if isinstance(a, ast.arg)}
    return next(name for name in _TEXT_NAMES if name not in used)


def _site_block(site: _Site, stacklevel: int, indent: str) -> str:
    """What replaces `_print_X_once(self, msg, *args)`: render first, then cache the text alone."""
    text, level = _text_name(site.function), site.printer.level
    lines = (
        f"{text} = {HELPER}({site.msg}, {site.args})",
        f"if {text} is None:  # {_FALLBACK_COMMENT}",
        f"    {site.logger}.{level}({site.msg}, *{site.args}, stacklevel={stacklevel - 1})",
        "else:",
        f"    {site.printer.name}({site.logger}, {text})",
    )
    return "".join(f"{indent}{line}\n" for line in lines)


def helper_source(msg_annotation: str | None, args_annotation: str | None, mapping: str) -> str:
    """The function the patch adds before the first printer (annotated as the printers are)."""
    if msg_annotation is not None:
        values = f"tuple[{args_annotation or 'object'}, ...]"
        signature = f"def {HELPER}(msg: {msg_annotation}, args: {values}) -> str | None:"
    else:
        signature = f"def {HELPER}(msg, args):"
    return f'''\
{signature}
    """Render a *_once message as logging.LogRecord.getMessage does.

    The *_once caches key on this text, never on the arguments: an argument kept
    there (an exception, with every frame on its traceback) would never be freed.
    None when the arguments do not fit the message: logging reports that call.
    """
    values{": object" if msg_annotation is not None else ""} = args
    if len(args) == 1 and isinstance(args[0], {mapping}) and args[0]:
        values = args[0]  # as LogRecord takes a single mapping
    try:
        return str(msg) % values if args else str(msg)
    except Exception:
        return None


'''


def _annotation(arg: ast.arg | None) -> str | None:
    return ast.unparse(arg.annotation) if arg is not None and arg.annotation is not None else None


def _imported_module(node: ast.Import | ast.ImportFrom) -> str:
    return (node.module or "") if isinstance(node, ast.ImportFrom) else node.names[0].name


def _from_import(module: str, names: list[str]) -> str:
    flat = f"from {module} import {', '.join(names)}\n"
    if len(flat) <= LINE_LENGTH + 1:
        return flat
    return "".join([f"from {module} import (\n", *(f"    {name},\n" for name in names), ")\n"])


def _mapping_import(tree: ast.Module) -> tuple[str, list[_Edit]]:
    """The name `Mapping` has in the module, and the edit that imports it (none when it is imported)."""
    top = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    for node in top:
        if isinstance(node, ast.ImportFrom) and node.module in ("collections.abc", "typing"):
            for alias in node.names:
                if alias.name == "Mapping":
                    return alias.asname or "Mapping", []
    for node in top:
        if isinstance(node, ast.ImportFrom) and node.module == "collections.abc" and not node.level:
            names = sorted([*(ast.unparse(alias) for alias in node.names), "Mapping"])
            end = node.end_lineno or node.lineno
            return "Mapping", [_Edit.lines(node.lineno, end, _from_import("collections.abc", names))]
    # A line of its own among the standard library's `from` imports, where isort puts it (else after its imports).
    stdlib = [node for node in top if _imported_module(node).split(".")[0] in sys.stdlib_module_names]
    if not stdlib:
        raise LoggerNotPatchable("it imports nothing from the standard library: no place for `Mapping`'s import")
    after = [n for n in stdlib if isinstance(n, ast.ImportFrom) and _imported_module(n).lower() > "collections.abc"]
    line = after[0].lineno if after else (stdlib[-1].end_lineno or stdlib[-1].lineno) + 1
    return "Mapping", [_Edit(line, 0, line, 0, "from collections.abc import Mapping\n")]


def patched(source: str, where: str = "the logger module") -> str:
    """The module's source with the fix: `NothingToCheck` when its caches render first already,
    `LoggerNotPatchable` when they are not shaped as vLLM's (`where` names the file in both)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise LoggerNotPatchable(f"{where} does not parse ({err.msg}, line {err.lineno})") from None
    found = printers(tree)
    if not found:
        raise LoggerNotPatchable(f"{where} has no lru_cache'd _print_<level>_once function: not vLLM's *_once cache")
    if not any(p.keeps_arguments for p in found):
        raise NothingToCheck(f"{where} renders *_once messages before caching them already: nothing to patch")
    if HELPER in {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}:
        raise LoggerNotPatchable(f"{where} defines {HELPER} already")
    try:
        result = _apply(source, _edits(tree, found, source.splitlines(keepends=True)))
    except LoggerNotPatchable as err:
        raise LoggerNotPatchable(f"{where}: {err}") from None
    if renders_first(result) is not True:  # a check of this function's own work
        raise AssertionError(f"{where}: the patched module still passes more than the text to a _print_*_once cache")
    return result


def _edits(tree: ast.Module, found: list[Printer], lines: list[str]) -> list[_Edit]:
    edits: list[_Edit] = []
    stacklevels = {}
    for printer in found:
        printer_edits, stacklevels[printer.name] = _printer_edits(printer)
        edits += printer_edits
    sites = list(_call_sites(tree, {p.name: p for p in found}))
    for printer in found:
        if not any(site.printer is printer for site in sites):
            raise LoggerNotPatchable(f"nothing calls {printer.name}")
    for site in sites:
        first, last = site.statement.lineno, site.statement.end_lineno or site.statement.lineno
        indent = lines[first - 1][: site.statement.col_offset]
        if indent.strip() or lines[last - 1][site.statement.end_col_offset or 0 :].strip():
            raise LoggerNotPatchable(f"the call on line {first} shares its line with other code")
        edits.append(_Edit.lines(first, last, _site_block(site, stacklevels[site.printer.name], indent)))
    mapping, import_edits = _mapping_import(tree)
    first_printer = found[0].node
    start = min([first_printer.lineno, *(d.lineno for d in first_printer.decorator_list)])
    params = first_printer.args
    helper = helper_source(_annotation(params.args[1]), _annotation(params.vararg), mapping)
    return [*edits, *import_edits, _Edit(start, 0, start, 0, helper)]


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


_PRINTER_DEF = r"(def _print_\w+_once\(\w+(?:: [\w.]+)?, \w+(?:: [\w.]+)?)\)"  # def _print_x_once(logger, msg)
_PRINTER_CALL = r"^(\s+\w+\.\w+)\((\w+), stacklevel=(\d+)\)$"  # logger.x(msg, stacklevel=3)
_CACHED = r"^(\s+_print_\w+_once)\((\w+), (\w+)\)$"  # _print_x_once(self, text)
_RENDERED = rf"^(\s+\w+) = {HELPER}\((\w+), \w+\)$"  # text = _render_once(msg, args)


def _cache_on_args(text: str) -> str:
    text = _sub(_PRINTER_DEF, r"\1, *args)", text)
    return _sub(_CACHED, r"\1(\2, \3, *args)", text)


def _render_dropped(text: str) -> str:
    text = _sub(_PRINTER_DEF, r"\1, *args)", text)
    text = _sub(_PRINTER_CALL, r"\1(\2, *args, stacklevel=\3)", text)
    text = _sub(_RENDERED, r"\1 = \2", text)
    return _sub(_CACHED, r"\1(\2, \3, *args)", text)


def _render_lazily(text: str) -> str:
    text = _sub(_PRINTER_DEF, r"\1, args)", text)
    text = _sub(_PRINTER_CALL, rf"\1({HELPER}(\2, args), stacklevel=\3)", text)
    text = _sub(_RENDERED, r"\1 = \2", text)
    return _sub(_CACHED, r"\1(\2, \3, args)", text)


PATCH_MUTANTS: tuple[PatchMutant, ...] = (
    PatchMutant("cache-on-args", "the cache keys on the raw arguments again, beside the text", _cache_on_args),
    PatchMutant("render-dropped", "no eager render: the cache gets msg and args, as vLLM's", _render_dropped),
    PatchMutant("render-lazily", "the render moves into the cache, keyed on (msg, args)", _render_lazily),
)
