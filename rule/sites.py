"""Site discovery: every kernel-import site of a target, found by parsing its source with libcst.

What a site is, is `rule.site_rule`'s to say; this module walks a file for them and records what the guards need in
the frozen `Site`, the vocabulary everything downstream speaks.
"""

from __future__ import annotations

import ast
import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider
from warnonce_guard.common.errors import SourceDoesNotParse
from warnonce_guard.rule.liveness import UNKNOWN, dotted_name, handled_exception
from warnonce_guard.rule.site_row import Condition, Site, current_package_of
from warnonce_guard.rule.site_rule import (
    Handler,
    Reaching,
    SiteCall,
    TryNode,
    anchor,
    checked_arguments,
    dotted,
    form_of,
    handler_name,
    is_site_try,
    kernel_import,
    log_method,
    names_a_kernel,
    parsed,
    passes,
    reached,
    reaching_callables,
    references,
    site_calls,
    walk,
)
from warnonce_guard.rule.target import PACKAGE, files_to_read, read_source_holding

# ---- discovery ----------------------------------------------------------------------------------


@dataclass
class _Scope:
    names: tuple[str, ...] = ()
    conditions: tuple[Condition, ...] = ()
    body: Sequence[cst.CSTNode] = ()  # the statements of the function (or region) the scope is in, for the flow
    needs_args: bool | None = None  # the outermost function's: it takes arguments to be called (None: in none)


@dataclass(frozen=True)
class _After:
    """A site handler whose names may be logged after its `try`: the names it binds to what the exception made."""

    kernel: str
    import_line: int
    anchor: str
    handler: Handler
    name: str
    derived: frozenset[str]


@dataclass(frozen=True)
class _Region:
    """Lines of a file worth a libcst parse: a statement of a module or class body that holds a site."""

    start: int  # first line (a function's first decorator's), 1-based
    end: int  # last line
    indented: bool  # in a class: parsed inside a one-line wrapper, so its indentation stays as written
    outer: tuple[str, ...]  # the classes around it


_WRAPPER = "class _:\n"  # a one-line block for an indented region: columns and whitespace stay as written


class _SiteFinder:
    def __init__(
        self,
        wrapper: MetadataWrapper,
        file: str,
        module: str,
        package: str,
        line_offset: int = 0,
        reaching: dict[str, Reaching] | None = None,
    ):
        self.module_node = wrapper.module
        self.positions = positions(wrapper)
        self.file, self.module, self.package = file, module, package
        self.current_package = current_package_of(file, module)
        self.line_offset = line_offset  # the region's place in its file
        self.reaching = reaching or {}  # per class name ("" the module's): what reaches a *_once method
        self.sites: list[Site] = []
        self.after: list[_After] = []  # site handlers of this function whose names later calls may log
        self.in_handlers: set[int] = set()  # ids of the calls a site handler runs: each is that handler's site alone

    @classmethod
    def run(cls, source: str, file: str, module: str, package: str) -> list[Site]:
        """Walk one file for sites, parsing only the statements that hold one (`_regions`; libcst is slow:
        a method of vLLM's cpu.py parses in a fraction of the time of the whole file). Sites come out the
        same: branch conditions never cross a `def` or `class`, columns and whitespace are kept, lines are
        offset."""
        lines = source.splitlines(keepends=True)
        found = _regions(source, lines, package, current_package_of(file, module))
        if found is None:
            return cls._whole(source, file, module, package)
        regions, reaching = found
        sites: list[Site] = []
        for region in regions:
            try:
                module_node, top = _parsed_region(lines[region.start - 1 : region.end], region.indented)
            except cst.ParserSyntaxError:
                return cls._whole(source, file, module, package)  # which names the line
            offset = region.start - 1 - (1 if region.indented else 0)
            finder = cls(MetadataWrapper(module_node, unsafe_skip_copy=True), file, module, package, offset, reaching)
            finder.walk(top, _Scope(region.outer, body=top))
            sites += finder.sites
        return _renumbered(sites)

    @classmethod
    def _whole(cls, source: str, file: str, module: str, package: str) -> list[Site]:
        finder = cls(_parsed_file(source, file), file, module, package)
        finder.walk(finder.module_node.body, _Scope(body=finder.module_node.body))
        return _renumbered(finder.sites)

    def line(self, node: cst.CSTNode, end: bool = False) -> int:
        where = self.positions[node]
        return (where.end if end else where.start).line + self.line_offset

    def code(self, node: cst.CSTNode) -> str:
        return self.module_node.code_for_node(node).strip()

    def walk(self, body: Sequence[cst.CSTNode], scope: _Scope) -> None:
        for stmt in body:
            self.visit(stmt, scope)

    def visit(self, stmt: cst.CSTNode, scope: _Scope) -> None:
        if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
            # a new def starts a new branch path, and a flow of its own
            needs = scope.needs_args
            if isinstance(stmt, cst.FunctionDef) and needs is None:  # the function a guard would call
                needs = _needs_arguments(stmt, method=bool(scope.names))
            inner = _Scope((*scope.names, stmt.name.value), (), stmt.body.body, needs)
            outer, self.after = self.after, []
            self.walk(stmt.body.body, inner)
            self.after = outer
        elif isinstance(stmt, cst.If):
            self.visit_if(stmt, scope)
        elif isinstance(stmt, TryNode):  # `except* ImportError` guards an import as `except ImportError` does
            self.visit_try(stmt, scope)
            for block in (stmt, *stmt.handlers, stmt.orelse):
                if block is not None:
                    self.walk(block.body.body, scope)
            self.after += self.handlers_logged_after(stmt)
            if stmt.finalbody is not None:  # runs after the handler: it may log what the handler bound
                self.walk(stmt.finalbody.body.body, scope)
        elif isinstance(stmt, (cst.With, cst.For, cst.While)):
            self.walk(stmt.body.body, scope)
            if not isinstance(stmt, cst.With) and stmt.orelse is not None:
                self.walk(stmt.orelse.body.body, scope)
        elif isinstance(stmt, cst.Match):
            for case in stmt.cases:
                self.walk(case.body.body, scope)
        elif isinstance(stmt, (cst.SimpleStatementLine, cst.BaseSmallStatement)) and self.after:
            self.visit_after(stmt, scope)  # a line, or a statement of a one-line block (`if err: logger...`)

    def visit_if(self, stmt: cst.If, scope: _Scope) -> None:
        test = self.code(stmt.test)
        unsteered = self.reads_handler_names(stmt.test)  # reads what a handler bound: not steered
        self.walk(stmt.body.body, replace(scope, conditions=(*scope.conditions, Condition(test, True, unsteered))))
        negated = replace(scope, conditions=(*scope.conditions, Condition(test, False, unsteered)))
        if isinstance(stmt.orelse, cst.If):
            self.visit_if(stmt.orelse, negated)
        elif isinstance(stmt.orelse, cst.Else):
            self.walk(stmt.orelse.body.body, negated)

    def reads_handler_names(self, node: cst.CSTNode) -> bool:
        return any(references(node, name) for after in self.after for name in after.derived)

    def visit_try(self, stmt: TryNode, scope: _Scope) -> None:
        kernel = kernel_import(stmt, self.package, self.current_package)
        if kernel is None:
            return
        import_line = self.line(stmt.body.body[0])
        digest = anchor(stmt)
        if is_site_try(stmt, self.package, self.current_package):  # the guarded import, whatever its handler writes
            self.sites.append(self.try_row(stmt, kernel, import_line, scope, digest))
        for found in site_calls(stmt, self.package, self.current_package, self.reaching_in(scope)):
            self.in_handlers.add(id(found.call))
            site = self.site(found, kernel, import_line, scope, self.handler_conditions(found.handler, found.call))
            self.sites.append(replace(site, anchor=digest))

    def try_row(self, stmt: TryNode, kernel: str, import_line: int, scope: _Scope, digest: str) -> Site:
        """The row of a guarded import whose handlers run no call discovery recognises (`call: not recognised`)."""
        first = stmt.body.body[0]
        return Site(
            file=self.file,
            module=self.module,
            qualname=".".join(scope.names) or "<module>",
            needs_args=bool(scope.needs_args),
            kernel_module=kernel,
            line=import_line,
            end_line=self.line(first, end=True),
            column=self.positions[first].start.column,
            end_column=self.positions[first].end.column,
            import_line=import_line,
            log_method="",
            form=UNKNOWN,
            exc_name=next((name for h in stmt.handlers if (name := handler_name(h))), ""),
            message=None,
            message_source="",
            args=(),
            exc_arg_index=-1,
            receiver="",
            anchor=digest,
            conditions=scope.conditions,
            logs_exception=False,
            grouped=isinstance(stmt, cst.TryStar),
        )

    def reaching_in(self, scope: _Scope) -> Reaching:
        """What reaches a *_once method from code in this scope: the module's callables, its classes' methods."""
        found = dict(self.reaching.get("", {}))
        for depth, name in enumerate(scope.names, 1):  # a class's methods, what a function defines for itself
            found |= self.reaching.get(name, {}) | self.reaching.get(f"def {'.'.join(scope.names[:depth])}", {})
        return found

    def handlers_logged_after(self, stmt: TryNode) -> list[_After]:
        """The site handlers of a kernel-import `try` that bind names to what their exception made (`err = e`,
        `msg = repr(e)`): a call after the `try` that logs one of them is a site of that handler."""
        kernel = kernel_import(stmt, self.package, self.current_package)
        if kernel is None or not is_site_try(stmt, self.package, self.current_package):
            return []
        out = []
        for handler in stmt.handlers:
            name = handler_name(handler) or ""
            derived = _derived_names(handler, name)
            if derived:
                import_line, digest = self.line(stmt.body.body[0]), anchor(stmt)
                out.append(_After(kernel, import_line, digest, handler, name, frozenset(derived)))
        return out

    def visit_after(self, stmt: cst.SimpleStatementLine | cst.BaseSmallStatement, scope: _Scope) -> None:
        """Logging calls of a statement after a site `try` that log a name one of its handlers bound (or a name
        bound since to a value made of one: `reported = err`)."""
        reaching = self.reaching_in(scope)
        for node in walk(stmt):
            if not isinstance(node, cst.Call) or (log_method(node) is None and reached(node, reaching) is None):
                continue
            if id(node) in self.in_handlers:  # a later site handler's call: its site (and guard) already
                continue
            after = next((a for a in reversed(self.after) if any(passes(node, n) for n in a.derived)), None)
            if after is not None:
                found = SiteCall(node, after.handler, after.name, reached(node, reaching))
                site = self.site(found, after.kernel, after.import_line, scope, (), place="after")
                self.sites.append(replace(site, anchor=after.anchor))
        self.after = [replace(a, derived=a.derived | _made_of(stmt, a.derived)) for a in self.after]

    def site(
        self,
        found: SiteCall,
        kernel: str,
        import_line: int,
        scope: _Scope,
        in_handler: tuple[Condition, ...],
        place: str = "handler",
    ) -> Site:
        """The site of one call; a second row of its identity is numbered over the whole file afterwards."""
        call, name, via = found.call, found.name, found.via
        first = call.args[0].value if call.args else None
        literal = getattr(first, "evaluated_value", None)  # a str or bytes literal's value; None for an f-string
        message = literal if isinstance(literal, str) else None
        rest = [arg.value for arg in call.args[1:] if arg.keyword is None]
        exc_index = next((i for i, arg in enumerate(rest) if references(arg, name)), -1)
        made_of = {name} | _derived_names(found.handler, name)  # a nameless handler's "" names nothing
        logs = any(any(references(arg.value, n) for n in made_of) for arg in checked_arguments(call))
        logs = logs or any(references(arg.value, "sys") for arg in checked_arguments(call))
        return Site(
            file=self.file,
            module=self.module,
            qualname=".".join(scope.names) or "<module>",
            needs_args=bool(scope.needs_args),
            kernel_module=kernel,
            line=self.line(call),
            end_line=self.line(call, end=True),
            column=self.positions[call].start.column,
            end_column=self.positions[call].end.column,
            import_line=import_line,
            log_method=via.method if via is not None else log_method(call) or "",
            form=form_of(found, scope.body),
            exc_name=name,
            message=message if via is None else None,  # through a helper or a partial: its message is elsewhere
            message_source=self.code(first) if first is not None and via is None else "",
            args=tuple(self.code(arg) for arg in rest),
            exc_arg_index=exc_index,
            # without `via`, a call log_method names: a method of its receiver
            receiver=via.receiver if via is not None else self.code(call.func.value),  # type: ignore[attr-defined]
            conditions=scope.conditions + in_handler,
            place=place,
            via=self.code(call.func) if via is not None else "",
            logs_exception=logs,
            grouped=isinstance(found.handler, cst.ExceptStarHandler),
        )

    def handler_conditions(self, handler: Handler, call: cst.Call) -> tuple[Condition, ...]:
        """`if` tests inside the handler that enclose the logging call (none when the call is an `if`'s test)."""

        def holds(node: cst.CSTNode) -> bool:
            return any(found is call for found in walk(node))

        def within(body: Sequence[cst.CSTNode], acc: tuple[Condition, ...]) -> tuple[Condition, ...] | None:
            stmt = next((stmt for stmt in body if holds(stmt)), None)  # None: the call is an `if`'s test
            if isinstance(stmt, cst.If):
                return within_if(stmt, acc)
            return acc if stmt is not None else None

        def within_if(stmt: cst.If, acc: tuple[Condition, ...]) -> tuple[Condition, ...] | None:
            test = self.code(stmt.test)
            if holds(stmt.body):
                return within(stmt.body.body, (*acc, Condition(test, True, True)))
            negated = (*acc, Condition(test, False, True))
            if isinstance(stmt.orelse, cst.If):
                return within_if(stmt.orelse, negated)
            return within(stmt.orelse.body.body, negated) if stmt.orelse is not None else None

        return within(handler.body.body, ()) or ()


def _needs_arguments(function: cst.FunctionDef, method: bool) -> bool:
    """A call of `function` with no argument would fail: a parameter without a default (but a method's `cls`/`self`)."""
    params = function.params
    positional = [*params.posonly_params, *params.params]
    static = any(dotted(decorator.decorator) == "staticmethod" for decorator in function.decorators)
    if method and not static:
        positional = positional[1:]
    return any(param.default is None for param in (*positional, *params.kwonly_params))


_BINDINGS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)


def _derived_names(handler: Handler, name: str) -> set[str]:
    """The names a handler binds to values made of its exception (`err = e`, `msg = repr(e)`, `pair = (e, 1)`,
    `info = sys.exc_info()`, and so on from those), in its own statements: what a call after it can log of it."""
    made_of = {name} if name else set()

    def made(value: ast.AST) -> bool:
        return _uses(value, made_of) or any(handled_exception(n) is not None for n in ast.walk(value))

    for stmt in handler.body.body:
        for tree in parsed(stmt):
            nodes = [n for n in ast.walk(tree) if isinstance(n, _BINDINGS)]
            for node in sorted(nodes, key=lambda n: (n.lineno, n.col_offset)):
                if node.value is None or not made(node.value):
                    continue
                made_of |= _targets(node)
    return made_of - {name}


def _made_of(stmt: cst.CSTNode, names: frozenset[str]) -> frozenset[str]:
    """The names a statement binds to a value made of one of `names` (`reported = err`, `(r := err)`)."""
    if not any(references(stmt, name) for name in names):
        return frozenset()
    bound: set[str] = set()
    for node in (node for tree in parsed(stmt) for node in ast.walk(tree)):
        if isinstance(node, _BINDINGS) and node.value is not None and _uses(node.value, names):
            bound |= _targets(node)
    return frozenset(bound)


def _uses(value: ast.AST, names: frozenset[str] | set[str]) -> bool:
    """`value` reads one of `names` (a name, or an attribute chain: `cls.kernel_error`)."""
    return any(isinstance(n, (ast.Name, ast.Attribute)) and dotted_name(n) in names for n in ast.walk(value))


def _targets(node: ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr) -> set[str]:
    """The names a binding binds: `err`, each of an unpacking's, or an attribute chain (`cls.kernel_error`, not
    `cls`: what else `cls` holds is not the exception's)."""
    todo: list[ast.expr] = list(node.targets) if isinstance(node, ast.Assign) else [node.target]
    bound: set[str] = set()
    while todo:
        target = todo.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            todo += target.elts
        elif isinstance(target, ast.Starred):
            todo.append(target.value)
        elif (name := dotted_name(target)) is not None:
            bound.add(name)
    return bound


@contextlib.contextmanager
def interrupts_kept() -> Iterator[None]:
    """Around libcst's work (parsing, positions, mutmut's generator): an interrupt comes out as the interrupt.

    libcst records a node's position in a `finally` that looks up its children's, which an exception passing
    through never recorded: a Ctrl-C (or the command line's SIGTERM) in the middle came out as a KeyError,
    chained once per level of the tree (megabytes of traceback on vLLM, exit 70).
    """
    try:
        yield
    except Exception as err:
        cause: BaseException | None = err
        seen = set()
        while cause is not None and id(cause) not in seen and not isinstance(cause, KeyboardInterrupt):
            seen.add(id(cause))
            cause = cause.__context__
        if isinstance(cause, KeyboardInterrupt):
            raise cause from None
        raise


def positions(wrapper: MetadataWrapper) -> Mapping[cst.CSTNode, CodeRange]:
    """Where each node of the wrapped module is (libcst's `PositionProvider`; see `interrupts_kept`)."""
    with interrupts_kept():
        return wrapper.resolve(PositionProvider)


def _parsed_file(source: str, file: str) -> MetadataWrapper:
    """Parse one file, turning a syntax error into `SourceDoesNotParse` naming file and line."""
    try:
        return MetadataWrapper(cst.parse_module(source))
    except cst.ParserSyntaxError as err:
        raise SourceDoesNotParse(
            f"{file}:{_error_line(source, err)}: does not parse ({err.message}); fix the file or point at another tree"
        ) from None


def _error_line(source: str, err: cst.ParserSyntaxError) -> int:
    """The line to blame: libcst's `raw_line` is 1 for a tokenizer error and can be off by one; CPython's is exact."""
    try:
        ast.parse(source)
    except (SyntaxError, ValueError) as py_err:
        return getattr(py_err, "lineno", None) or err.raw_line
    return err.raw_line


def sites_in_source(source: str, file: str, module: str, package: str = PACKAGE) -> list[Site]:
    """Every site in one file's source text."""
    return _SiteFinder.run(source, file, module, package) if might_hold_site(source) else []


# Module names a file may import, found by two regexes that start with a literal (fast to scan for):
# `from vllm._C import ops` names the kernel before `import`; `import vllm._C`, `from vllm import (\n _C,\n)`
# `import_module(\n "vllm._C")` and `__import__("vllm._C")` after it, possibly past a parenthesised part spanning lines.
_FROM_MODULE = re.compile(r"from[ \t]+([\w.]+)[ \t]+import")
_IMPORTED = re.compile(r"import(?:_module|__)?\b([^\n(]*(?:\([^)]*\)[^\n]*)?)")
_TOKEN = re.compile(r"[A-Za-z_][\w.]*")


HANDLER = "except"  # a site's try has a handler: a file without the word holds no site (read no further)


# What every name `KERNEL_PATTERN` matches has (`vllm._C`, `C`, `_C_flashmla`): a `C` that ends a word or is followed
# by `_`. The imports of a file without one name no kernel (a regex that starts with a letter scans at C speed).
_KERNELISH = re.compile(r"C(?:_|\b)")


def might_hold_site(source: str) -> bool:
    """Cheap text test that lets most files skip the libcst parse: an `except` and a kernel-ish import."""
    if HANDLER not in source or not _KERNELISH.search(source):
        return False
    imported = (match.group(1) for regex in (_FROM_MODULE, _IMPORTED) for match in regex.finditer(source))
    return any(names_a_kernel(token) for text in imported for token in _TOKEN.findall(text))


def _tries(stmt: ast.stmt | ast.excepthandler | ast.match_case) -> Iterator[ast.Try | ast.TryStar]:
    """The `try` statements in `stmt` (`except*` ones too), outermost first (only statement bodies are searched: a try
    is a statement)."""
    if isinstance(stmt, (ast.Try, ast.TryStar)):
        yield stmt
    for block in ("body", "handlers", "orelse", "finalbody", "cases"):
        for child in getattr(stmt, block, ()):
            yield from _tries(child)


def _parsed_region(lines: list[str], indented: bool) -> tuple[cst.Module, Sequence[cst.BaseStatement]]:
    """Lines of a file parsed alone with libcst, and their statements: an indented block inside `_WRAPPER`, so
    that columns and whitespace stay as written."""
    text = "".join(lines)
    module = cst.parse_module(_WRAPPER + text if indented else text)
    return module, module.body[0].body.body if indented else module.body  # type: ignore[attr-defined]


def _holds_site(stmt: ast.stmt, lines: list[str], package: str, current_package: str) -> bool:
    """Whether `stmt` holds a `try` the site rule looks into (it imports a kernel module and catches ImportError:
    whatever its handlers log, or leave for later, is decided on the statement's libcst parse). The stdlib parser
    (far faster than libcst) finds the tries; each whose text might hold a site is parsed alone with libcst. A try
    libcst cannot parse counts: the parse of its region says where."""
    for node in _tries(stmt):
        try_lines = lines[node.lineno - 1 : node.end_lineno]
        if not might_hold_site("".join(try_lines)):
            continue
        try:
            _, (try_node, *_) = _parsed_region(try_lines, indented=node.col_offset > 0)
        except cst.ParserSyntaxError:
            return True
        if is_site_try(try_node, package, current_package):  # type: ignore[arg-type]
            return True
    return False


def _regions(
    source: str, lines: list[str], package: str, current_package: str
) -> tuple[list[_Region], dict[str, Reaching]] | None:
    """The statements of the module's and its classes' bodies (a function, a method, a `try` or `if` at module
    level) that hold a site, in source order, and the callables of the file that reach a `*_once` method; None when
    `ast` cannot parse the file (libcst then says where)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    found: list[_Region] = []

    def visit(body: list[ast.stmt], outer: tuple[str, ...]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                visit(stmt.body, (*outer, stmt.name))
            elif _holds_site(stmt, lines, package, current_package):
                decorated = isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
                start = min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)]) if decorated else stmt.lineno
                found.append(_Region(start, stmt.end_lineno or stmt.lineno, stmt.col_offset > 0, outer))

    visit(tree.body, ())
    return found, reaching_callables(tree) if found else {}


def _renumbered(sites: list[Site]) -> list[Site]:
    """One file's rows, in source order: a try's recognised `*_once` calls, or else its one row (a plain call's, or
    its import's: not recognised); a second row of one identity numbered (`Site.duplicate`)."""
    by_try: dict[int, list[Site]] = {}
    for site in sorted(sites, key=lambda s: (s.line, s.column)):
        by_try.setdefault(site.import_line, []).append(site)
    rows = []
    for found in by_try.values():
        cached = [site for site in found if site.cached]
        rows += cached or [next((site for site in found if site.recognised), found[0])]
    seen: dict[str, int] = {}
    out = []
    for site in sorted(rows, key=lambda s: (s.line, s.column)):
        out.append(replace(site, duplicate=seen.get(site.id, 0)))
        seen[site.id] = seen.get(site.id, 0) + 1
    return out


def module_name(relative: Path) -> str:
    return ".".join(relative.with_suffix("").parts).removesuffix(".__init__")


def discover(root: Path, package: str = PACKAGE) -> list[Site]:
    """Every site under `root/package`, sorted by file and line.

    A text test picks the few files worth a closer look (its first word on the file's bytes: a file without an
    `except` is not decoded, even one Python could not read), and only their statements that hold a site are
    parsed with libcst: on vLLM, a few hundredths of a second each, so no worker processes.
    """
    found: list[Site] = []
    for path in files_to_read(sorted((root / package).rglob("*.py"))):
        relative = path.relative_to(root)
        if (source := read_source_holding(path, HANDLER.encode())) is not None:  # three files in four have none
            found += sites_in_source(source, relative.as_posix(), module_name(relative), package)
    return sorted(found, key=lambda s: (s.file, s.line))
