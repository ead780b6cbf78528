"""Site discovery: every kernel-import site of a target, found by parsing its source with libcst.

A site is a `try:` that imports a kernel module (`import vllm._C`, `from vllm import _C`,
`importlib.import_module("vllm._C")`) with an `except ImportError as NAME:` handler whose body logs
NAME through a logger method, in any argument (the message included: `f"...: {e!r}"`). `*_once` calls
are cached (and guarded); plain `warning` & co. are listed as not cached. A site is `live` when the
liveness policy (`guards.liveness`, shared with the audit) says an argument carries the exception
itself, else `eager`. The frozen `Site` record is the vocabulary everything downstream speaks.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from guards.errors import SourceDoesNotParse
from guards.liveness import EXCEPTION, IGNORED_KEYWORDS, classify_source

ONCE_METHODS = frozenset({"debug_once", "info_once", "warning_once", "error_once"})
PLAIN_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical"})
IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
# A kernel module's last component has a `C` token: _C, _C_AVX2, _moe_C_stable_libtorch, fs_io_C.
DEFAULT_KERNEL_PATTERN = r"(?:^|_)C(?:_|$)"


@dataclass(frozen=True)
class Condition:
    """An `if` test on the way to a site and the truth value the site needs."""

    expr: str
    want: bool
    in_handler: bool = False


@dataclass(frozen=True)
class Site:
    """One kernel-import site; `id` survives line shifts between vLLM releases."""

    file: str  # posix path relative to the target root, e.g. vllm/platforms/cpu.py
    module: str  # vllm.platforms.cpu
    qualname: str  # CpuPlatform.import_kernels
    kernel_module: str  # vllm._C_AVX2
    occurrence: int  # index among sites with the same file, qualname and kernel module
    line: int  # first line of the logging call
    end_line: int  # last line of the logging call
    column: int  # 0-based column where the call starts
    end_column: int  # 0-based column just past the call's end
    import_line: int
    log_method: str  # warning_once, info_once, ..., or a plain warning
    form: str  # "eager" (formatted before the call) or "live" (the exception reaches the call)
    exc_name: str
    message: str | None  # the format string, when it is a literal
    message_source: str  # the source of the first argument (a literal, an f-string, a name, ...)
    args: tuple[str, ...]  # source of the positional arguments after the message
    exc_arg_index: int  # which of `args` references the exception (-1: only the message or a keyword does)
    receiver: str  # the logger expression the call goes through, e.g. `logger`
    conditions: tuple[Condition, ...] = field(default=())
    driver: str | None = None  # `module:Class` whose import_kernels the guard calls (a platform plugin)

    @property
    def id(self) -> str:
        return f"{self.file}::{self.qualname}::{self.kernel_module}#{self.occurrence}"

    @property
    def test_id(self) -> str:
        """The id of the site's guard in pytest node ids (no `::` or `/`, which node ids reserve)."""
        via = f"-via-{self.driver.replace(':', '.')}" if self.driver else ""
        return f"{Path(self.file).stem}-{self.qualname}-{self.kernel_module}-{self.occurrence}{via}"

    @property
    def package(self) -> str:
        """The top-level package the site lives in (vllm, or a platform plugin's)."""
        return self.module.split(".")[0]

    @property
    def cached(self) -> bool:
        return self.log_method in ONCE_METHODS

    @property
    def class_name(self) -> str | None:
        parts = self.qualname.split(".")
        return parts[-2] if len(parts) > 1 else None

    @property
    def function_name(self) -> str:
        return self.qualname.split(".")[-1]

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data.update(id=self.id, cached=self.cached)
        return data

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Site:
        fields = {k: v for k, v in data.items() if k not in ("id", "cached")}
        fields["args"] = tuple(fields["args"])  # type: ignore[arg-type]
        fields["conditions"] = tuple(Condition(**c) for c in fields["conditions"])  # type: ignore[arg-type,union-attr]
        return cls(**fields)  # type: ignore[arg-type]


# ---- node predicates, shared with the mutators -------------------------------------------------


def dotted(node: cst.BaseExpression | cst.ImportFrom | None) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def is_kernel_module(name: str, package: str, pattern: str = DEFAULT_KERNEL_PATTERN) -> bool:
    """A module inside `package` whose last component names a compiled kernel."""
    return name.startswith(package + ".") and re.search(pattern, name.rsplit(".", 1)[-1]) is not None


def imported_modules(stmt: cst.CSTNode, current_package: str) -> Iterator[str]:
    """Dotted names a statement imports, including `importlib.import_module("x")` calls."""
    for node in walk(stmt):
        if isinstance(node, cst.Import):
            for alias in node.names:
                name = dotted(alias.name)
                if name:
                    yield name
        elif isinstance(node, cst.ImportFrom):
            base = dotted(node.module) or ""
            if node.relative:
                parts = current_package.split(".")
                up = len(node.relative) - 1
                anchor = ".".join(parts[: len(parts) - up] if up else parts)
                base = f"{anchor}.{base}" if base else anchor
            yield base
            if not isinstance(node.names, cst.ImportStar):
                for alias in node.names:
                    name = dotted(alias.name)
                    if name:
                        yield f"{base}.{name}"
        elif (
            isinstance(node, cst.Call)
            and (dotted(node.func) or "").endswith("import_module")
            and node.args
            and isinstance(node.args[0].value, cst.SimpleString)
        ):
            yield str(node.args[0].value.evaluated_value)


def catches_import_error(handler: cst.ExceptHandler) -> bool:
    """`except ImportError as e` (or a tuple or base class that includes it)."""
    if handler.type is None:
        return False
    types = [el.value for el in handler.type.elements] if isinstance(handler.type, cst.Tuple) else [handler.type]
    return any((dotted(t) or "").rsplit(".", 1)[-1] in IMPORT_ERRORS for t in types)


def handler_name(handler: cst.ExceptHandler) -> str | None:
    if handler.name is not None and isinstance(handler.name.name, cst.Name):
        return handler.name.name.value
    return None


def references(node: cst.CSTNode, name: str) -> bool:
    return any(isinstance(n, cst.Name) and n.value == name for n in walk(node))


def liveness(expr: cst.BaseExpression, name: str) -> str | None:
    """The liveness policy's kind for one argument, with `name` bound to the live exception (`guards.liveness`)."""
    return classify_source(cst.Module([]).code_for_node(expr), {name})


def checked_arguments(call: cst.Call) -> list[cst.Arg]:
    """The arguments that reach a logger method's cache: all positionals (the message too) and keywords but `scope=`."""
    return [arg for arg in call.args if not (arg.keyword is not None and arg.keyword.value in IGNORED_KEYWORDS)]


def log_method(call: cst.Call) -> str | None:
    """The logger method a call invokes (`logger.warning_once(...)` -> warning_once)."""
    if isinstance(call.func, cst.Attribute):
        method = call.func.attr.value
        if method in ONCE_METHODS or method in PLAIN_METHODS:
            return method
    return None


def logging_calls(handler: cst.ExceptHandler, name: str) -> list[cst.Call]:
    """Logger calls in a handler body that pass (something made of) the exception `name`, in any argument."""
    return [
        node
        for node in walk(handler.body)
        if isinstance(node, cst.Call)
        and log_method(node) is not None
        and any(references(arg.value, name) for arg in checked_arguments(node))
    ]


def kernel_import(try_node: cst.Try, package: str, current_package: str, pattern: str) -> str | None:
    """The first kernel module the `try` body imports, or None."""
    for stmt in try_node.body.body:
        for name in imported_modules(stmt, current_package):
            if is_kernel_module(name, package, pattern):
                return name
    return None


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and every node below it, in source order (pre-order)."""
    yield node
    for child in node.children:
        yield from walk(child)


# ---- discovery ----------------------------------------------------------------------------------


@dataclass
class _Scope:
    names: tuple[str, ...] = ()
    conditions: tuple[Condition, ...] = ()


class _SiteFinder:
    def __init__(self, wrapper: MetadataWrapper, file: str, module: str, package: str, pattern: str):
        self.module_node = wrapper.module
        self.positions = wrapper.resolve(PositionProvider)
        self.file, self.module, self.package, self.pattern = file, module, package, pattern
        self.current_package = module if file.endswith("__init__.py") else module.rpartition(".")[0]
        self.sites: list[Site] = []

    @classmethod
    def run(cls, source: str, file: str, module: str, package: str, pattern: str) -> list[Site]:
        """Parse one file and walk it for sites."""
        finder = cls(parse(source, file), file, module, package, pattern)
        finder.walk(finder.module_node.body, _Scope())
        return finder.sites

    def code(self, node: cst.CSTNode) -> str:
        return self.module_node.code_for_node(node).strip()

    def walk(self, body: Sequence[cst.CSTNode], scope: _Scope) -> None:
        for stmt in body:
            self.visit(stmt, scope)

    def visit(self, stmt: cst.CSTNode, scope: _Scope) -> None:
        if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
            inner = _Scope((*scope.names, stmt.name.value), ())  # a new def starts a new branch path
            self.walk(stmt.body.body, inner)
        elif isinstance(stmt, cst.If):
            self.visit_if(stmt, scope, in_handler=False)
        elif isinstance(stmt, cst.Try):
            self.visit_try(stmt, scope)
            self.walk(stmt.body.body, scope)
            for handler in stmt.handlers:
                self.walk(handler.body.body, scope)
            for extra in (stmt.orelse, stmt.finalbody):
                if extra is not None:
                    self.walk(extra.body.body, scope)
        elif isinstance(stmt, (cst.With, cst.For, cst.While)):
            self.walk(stmt.body.body, scope)

    def visit_if(self, stmt: cst.If, scope: _Scope, in_handler: bool) -> None:
        test = self.code(stmt.test)
        self.walk(stmt.body.body, _Scope(scope.names, (*scope.conditions, Condition(test, True, in_handler))))
        negated = _Scope(scope.names, (*scope.conditions, Condition(test, False, in_handler)))
        if isinstance(stmt.orelse, cst.If):
            self.visit_if(stmt.orelse, negated, in_handler)
        elif isinstance(stmt.orelse, cst.Else):
            self.walk(stmt.orelse.body.body, negated)

    def visit_try(self, stmt: cst.Try, scope: _Scope) -> None:
        kernel = kernel_import(stmt, self.package, self.current_package, self.pattern)
        if kernel is None:
            return
        import_line = self.positions[stmt.body.body[0]].start.line
        for handler in stmt.handlers:
            name = handler_name(handler)
            if name is None or not catches_import_error(handler):
                continue
            for call in logging_calls(handler, name):
                self.sites.append(self.site(call, kernel, import_line, name, scope, handler))

    def site(
        self, call: cst.Call, kernel: str, import_line: int, name: str, scope: _Scope, handler: cst.ExceptHandler
    ) -> Site:
        first = call.args[0].value if call.args else None
        message = (
            str(first.evaluated_value)
            if isinstance(first, (cst.SimpleString, cst.ConcatenatedString)) and isinstance(first.evaluated_value, str)
            else None
        )
        rest = [arg.value for arg in call.args[1:] if arg.keyword is None]
        exc_index = next((i for i, arg in enumerate(rest) if references(arg, name)), -1)
        live = any(liveness(arg.value, name) == EXCEPTION for arg in checked_arguments(call))
        occurrence = sum(
            1 for s in self.sites if (s.qualname, s.kernel_module) == (".".join(scope.names) or "<module>", kernel)
        )
        return Site(
            file=self.file,
            module=self.module,
            qualname=".".join(scope.names) or "<module>",
            kernel_module=kernel,
            occurrence=occurrence,
            line=self.positions[call].start.line,
            end_line=self.positions[call].end.line,
            column=self.positions[call].start.column,
            end_column=self.positions[call].end.column,
            import_line=import_line,
            log_method=log_method(call) or "",
            form="live" if live else "eager",
            exc_name=name,
            message=message,
            message_source=self.code(first) if first is not None else "",
            args=tuple(self.code(arg) for arg in rest),
            exc_arg_index=exc_index,
            receiver=self.code(call.func.value) if isinstance(call.func, cst.Attribute) else "",
            conditions=scope.conditions + self.handler_conditions(handler, call),
        )

    def handler_conditions(self, handler: cst.ExceptHandler, call: cst.Call) -> tuple[Condition, ...]:
        """`if` tests inside the handler that enclose the logging call."""
        found: list[Condition] = []

        def descend(body: Sequence[cst.CSTNode], acc: tuple[Condition, ...]) -> bool:
            for stmt in body:
                if any(node is call for node in walk(stmt)):
                    if isinstance(stmt, cst.If):
                        return descend_if(stmt, acc)
                    found.extend(acc)
                    return True
            return False

        def descend_if(stmt: cst.If, acc: tuple[Condition, ...]) -> bool:
            test = self.code(stmt.test)
            if any(node is call for node in walk(stmt.body)):
                return descend(stmt.body.body, (*acc, Condition(test, True, True)))
            negated = (*acc, Condition(test, False, True))
            if isinstance(stmt.orelse, cst.If):
                return descend_if(stmt.orelse, negated)
            return stmt.orelse is not None and descend(stmt.orelse.body.body, negated)

        descend(handler.body.body, ())
        return tuple(found)


def parse(source: str, file: str) -> MetadataWrapper:
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


def sites_in_source(
    source: str, file: str, module: str, package: str = "vllm", pattern: str = DEFAULT_KERNEL_PATTERN
) -> list[Site]:
    """Every site in one file's source text."""
    if not might_hold_site(source, pattern) or not _logs_a_caught_exception(source, pattern):
        return []
    return _SiteFinder.run(source, file, module, package, pattern)


# Module names a file may import, found by two regexes that start with a literal (fast to scan for):
# `from vllm._C import ops` names the kernel before `import`; `import vllm._C`, `from vllm import (\n _C,\n)`
# and `import_module(\n "vllm._C")` after it, possibly past a parenthesised part spanning lines.
_FROM_MODULE = re.compile(r"from[ \t]+([\w.]+)[ \t]+import")
_IMPORTED = re.compile(r"import(?:_module)?\b([^\n(]*(?:\([^)]*\)[^\n]*)?)")
_TOKEN = re.compile(r"[A-Za-z_][\w.]*")


def might_hold_site(source: str, pattern: str = DEFAULT_KERNEL_PATTERN) -> bool:
    """Cheap text test that lets most files skip the libcst parse: an `except` and a kernel-ish import."""
    if "except" not in source:
        return False
    for regex in (_FROM_MODULE, _IMPORTED):
        for match in regex.finditer(source):
            for token in _TOKEN.findall(match.group(1)):
                if re.search(pattern, token.rsplit(".", 1)[-1]):
                    return True
    return False


def _ast_imported_names(statements: list[ast.stmt]) -> Iterator[str]:
    for node in (n for stmt in statements for n in ast.walk(stmt)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield node.module or ""
            yield from (alias.name for alias in node.names)
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.args[0].value  # importlib.import_module("...") and look-alikes: a superset is fine


def _logs_a_caught_exception(source: str, pattern: str = DEFAULT_KERNEL_PATTERN) -> bool:
    """A second, structural prefilter with the stdlib parser (far faster than libcst): some `try` imports a
    kernel-looking module and a handler `except ... as NAME` logs NAME through a logger method. A file
    `ast` cannot parse goes on to libcst, which reports where."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return True
    methods = ONCE_METHODS | PLAIN_METHODS
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try) or not any(
            re.search(pattern, name.rsplit(".", 1)[-1]) for name in _ast_imported_names(node.body)
        ):
            continue
        for handler in node.handlers:
            if handler.name and any(
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr in methods
                and any(isinstance(n, ast.Name) and n.id == handler.name for a in call.args for n in ast.walk(a))
                for stmt in handler.body
                for call in ast.walk(stmt)
            ):
                return True
    return False


def module_name(relative: Path) -> str:
    parts = list(relative.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sites_of(job: tuple[str, str, str, str, str]) -> list[Site]:
    source, file, module, package, pattern = job
    return _SiteFinder.run(source, file, module, package, pattern)


def discover(root: Path, package: str = "vllm", pattern: str = DEFAULT_KERNEL_PATTERN) -> list[Site]:
    """Every site under `root/package`, sorted by file and line.

    Cheap prefilters pick the few files worth a libcst parse; those are parsed on every core.
    """
    jobs = []
    for path in sorted((root / package).rglob("*.py")):
        source = path.read_text(encoding="utf-8", errors="replace")
        if might_hold_site(source, pattern) and _logs_a_caught_exception(source, pattern):
            relative = path.relative_to(root)
            jobs.append((source, relative.as_posix(), module_name(relative), package, pattern))
    if len(jobs) > 1:
        workers = min(len(jobs), os.cpu_count() or 1)
        with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("fork")) as pool:
            results = list(pool.map(_sites_of, jobs))
    else:
        results = [_sites_of(job) for job in jobs]
    return sorted((site for found in results for site in found), key=lambda s: (s.file, s.line))
