"""Audit: every `*_once` call of a target whose arguments can keep a live object in the lru_cache.

vLLM's `logger.debug_once/info_once/warning_once/error_once` are `functools.lru_cache`d on their
arguments, so anything passed to them (other than an immutable primitive) is kept for the life of the
process. This module parses every Python file of the target with `ast` (after a cheap `"_once("` text
test) and reports each argument that is not provably a str/int/float/bool/None/bytes or a tuple of
those. A call is any `<receiver>.<name>(...)` whose method name ends in one of the four; bare-name
calls (vLLM's own `_print_warning_once(...)`, the cache itself) are not audited. Every positional
argument is checked, the message included (a string literal is safe anyway), and every keyword
argument but `scope=`.

What is live, and of which kind, is `guards.liveness`'s policy (shared with site discovery); this
module finds the calls and tracks which names hold a live exception where: a name bound by an
enclosing `except ... as NAME` (also inside nested functions and lambdas, which close over it) or a
name assigned from one (`err = e`). A name re-bound to something without the exception
(`e = str(e)`) no longer counts; a re-binding inside a branch does not clear it after the branch
(either path may run).

The target is a vLLM tree (`audit`), or any files and package directories (`audit_paths`): a platform
plugin, or the files pre-commit passes. Each finding has a stable code per kind (`CODES`: WOG001 is a
live exception). `# warnonce: ok <reason>` on one of a call's lines accepts its findings (they move to
`AuditResult.suppressed`); without a reason the pragma accepts nothing. Standard library only: the
audit runs wherever vLLM's own checks run.

A finding's `key` (file, qualified function, level, argument text, occurrence index among findings
with the same four) has no line number, so a baseline of accepted findings survives line shifts. The
argument text is `ast.unparse`d, so re-wrapping or re-quoting a call does not change it either.
"""

from __future__ import annotations

import ast
import bisect
import json
import re
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from warnonce_guard.common.errors import BadBaseline, ExitCode, NoPythonFiles, SourceDoesNotParse
from warnonce_guard.rule.liveness import EXCEPTION, IGNORED_KEYWORDS, ONCE_METHODS, argument_kind, carries, params

PREFILTER = "_once("
BASELINE_VERSION = 1
# Stable codes per kind (`path:line:col: WOG001 ...`, SARIF rule ids); WOG001 is the leak itself.
CODES = {
    EXCEPTION: "WOG001",
    "name": "WOG002",
    "attribute": "WOG003",
    "subscript": "WOG004",
    "call": "WOG005",
    "container": "WOG006",
    "starred": "WOG007",
    "lambda": "WOG008",
    "expression": "WOG009",
}
# `# warnonce: ok <reason>` on any line of the call accepts its findings; the reason is required.
PRAGMA = re.compile(r"#\s*warnonce:\s*ok\b[ \t:]*(?P<reason>[^\n]*)")

@dataclass(frozen=True)
class Finding:
    """One argument of one `*_once` call that can keep a live object in the cache."""

    file: str  # posix path as shown: relative to the target root or the current directory, e.g. vllm/platforms/cpu.py
    line: int  # line of the argument (for display; not part of the key)
    qualname: str  # CpuPlatform.import_kernels, or <module>
    level: str  # the method called: warning_once, info_once, ...
    argument: str  # the argument's source, ast.unparse'd; `*x`, `**x` and `name=x` for those forms
    kind: str  # the liveness policy's kind (guards.liveness)
    occurrence: int = 0  # index among findings with the same file, qualname, level and argument
    column: int = 1  # 1-based column of the argument
    end_line: int = 0  # where the argument ends (1-based, end column exclusive)
    end_column: int = 0
    suppressed: str | None = None  # the reason of a `# warnonce: ok <reason>` pragma on the call

    @property
    def key(self) -> str:
        """Identity stable across line shifts: what a baseline stores."""
        return f"{self.file}::{self.qualname}::{self.level}::{self.argument}#{self.occurrence}"

    @property
    def code(self) -> str:
        return CODES[self.kind]

    @property
    def message(self) -> str:
        """One line for a human: what reaches the cache and what to do."""
        call = f"logger.{self.level}(...)"
        if self.kind == EXCEPTION:
            return (
                f"{call} passes `{self.argument}`, a live exception: the lru_cache keeps it, its traceback and every "
                'frame on it for the life of the process; format it first ("%s", repr(e))'
            )
        return (
            f"{call} passes `{self.argument}` ({self.kind}), not provably an immutable primitive: the lru_cache "
            "keeps whatever it is; pass a str, number or a tuple of those"
        )

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "key": self.key, "code": self.code}


@dataclass(frozen=True)
class AuditResult:
    """All findings of one target, sorted by file and line, with what was scanned and how long it took.

    `findings` excludes those a pragma accepts; they are in `suppressed`.
    """

    findings: tuple[Finding, ...]
    files_scanned: int  # every *.py file of the package
    files_parsed: int  # those that passed the text prefilter
    seconds: float
    suppressed: tuple[Finding, ...] = ()

    @property
    def exceptions(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.kind == EXCEPTION)


@dataclass(frozen=True)
class Comparison:
    """Findings against a baseline: which are new, which accepted, and which baseline keys match nothing."""

    new: tuple[Finding, ...]
    accepted: tuple[Finding, ...]
    stale: tuple[str, ...] = field(default=())

    @property
    def new_exceptions(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.new if f.kind == EXCEPTION)


# ---- finding the calls ----------------------------------------------------------------------------


def once_level(call: ast.Call) -> str | None:
    """The method a `*_once` call invokes (`logger.warning_once(...)` -> warning_once), else None."""
    func = call.func
    if isinstance(func, ast.Attribute) and any(func.attr.endswith(m) for m in ONCE_METHODS):
        return func.attr
    return None


def call_arguments(call: ast.Call) -> Iterator[tuple[str, ast.expr]]:
    """(display text, value) for each argument to check: all positionals and every keyword but `scope=`."""
    for arg in call.args:
        yield ast.unparse(arg), arg
    for kw in call.keywords:
        if kw.arg in IGNORED_KEYWORDS:
            continue
        text = ast.unparse(kw.value)
        if kw.arg is None:  # `**kwargs`, wrapped so that it classifies as starred
            yield f"**{text}", ast.Starred(kw.value, ast.Load())
        else:
            yield f"{kw.arg}={text}", kw.value


def _stored_names(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}


class _Scanner:
    """Walks statements in order, tracking which names hold a live exception, and records findings."""

    def __init__(self, file: str, source: str) -> None:
        self.file = file
        self.lines = source.split("\n")
        self.raw: list[Finding] = []
        # Lines holding `_once`: code spanning none of them holds no call to look at (a 2x speed-up).
        self.once_lines = [n for n, text in enumerate(source.split("\n"), 1) if "_once" in text]  # as ast counts lines

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
            self.block(stmt.body, (*names, stmt.name), set(live) - params(stmt.args))  # closure sees live
        elif isinstance(stmt, ast.ClassDef):
            self.exprs([*stmt.decorator_list, *stmt.bases, *(k.value for k in stmt.keywords)], names, live)
            self.block(stmt.body, (*names, stmt.name), set(live))
        elif isinstance(stmt, (ast.Try, ast.TryStar)):
            self.try_(stmt, names, live)
        else:
            self.compound_or_simple(stmt, names, live)

    def try_(self, stmt: ast.Try | ast.TryStar, names: tuple[str, ...], live: set[str]) -> None:
        live |= self.branch(stmt.body, names, live)
        for handler in stmt.handlers:
            if handler.type is not None:
                self.exprs([handler.type], names, live)
            inner = set(live) | ({handler.name} if handler.name else set())
            self.block(handler.body, names, inner)
            live |= inner
            if handler.name:  # Python unbinds the handler's name when the handler ends
                live.discard(handler.name)
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
        """Names a statement (re)binds: live if their value carries a live exception, cleared otherwise."""
        pairs: list[tuple[ast.AST, ast.AST | None]] = []
        if isinstance(stmt, ast.Assign):
            pairs = [(t, stmt.value) for t in stmt.targets]
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and stmt.value is not None:
            pairs = [(stmt.target, stmt.value)]
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            pairs = [(stmt.target, stmt.iter)]
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            pairs = [(item.optional_vars, item.context_expr) for item in stmt.items if item.optional_vars]
        elif isinstance(stmt, ast.Delete):
            pairs = [(t, None) for t in stmt.targets]
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            pairs = [(ast.Name((a.asname or a.name).split(".")[0]), None) for a in stmt.names]
        for target, value in pairs:
            bound = _stored_names(target)
            if value is not None and carries(value, live):
                live |= bound
            elif not isinstance(stmt, ast.AugAssign):
                live -= bound

    def exprs(self, nodes: Iterable[ast.AST], names: tuple[str, ...], live: set[str]) -> None:
        for node in nodes:
            if self.touches(node):
                self.calls(node, names, frozenset(live))

    def calls(self, node: ast.AST, names: tuple[str, ...], live: frozenset[str]) -> None:
        """Every `*_once` call inside an expression, lambdas included (their parameters shadow)."""
        if isinstance(node, ast.Lambda):
            live = live - params(node.args)
        elif isinstance(node, ast.Call):
            level = once_level(node)
            if level is not None:
                self.record(node, level, names, live)
        for child in ast.iter_child_nodes(node):
            self.calls(child, names, live)

    def record(self, call: ast.Call, level: str, names: tuple[str, ...], live: frozenset[str]) -> None:
        qualname = ".".join(names) or "<module>"
        for text, value in call_arguments(call):
            kind = argument_kind(value, live)
            if kind is not None:
                at = value if hasattr(value, "lineno") else call
                self.raw.append(
                    Finding(
                        self.file,
                        at.lineno,
                        qualname,
                        level,
                        text,
                        kind,
                        column=at.col_offset + 1,
                        end_line=at.end_lineno or at.lineno,
                        end_column=(at.end_col_offset or at.col_offset) + 1,
                        suppressed=self.pragma(call),
                    )
                )

    def pragma(self, call: ast.Call) -> str | None:
        """The reason of a `# warnonce: ok <reason>` comment on one of the call's lines (None: none, or no reason)."""
        for text in self.lines[call.lineno - 1 : (call.end_lineno or call.lineno)]:
            found = PRAGMA.search(text)
            if found and found.group("reason").strip():
                return found.group("reason").strip()
        return None


def numbered(findings: Iterable[Finding]) -> list[Finding]:
    """Findings in file/line order, each with its occurrence index among findings sharing its key."""
    seen: Counter[tuple[str, str, str, str]] = Counter()
    out = []
    for finding in sorted(findings, key=lambda f: (f.file, f.line)):
        group = (finding.file, finding.qualname, finding.level, finding.argument)
        out.append(Finding(**{**asdict(finding), "occurrence": seen[group]}))
        seen[group] += 1
    return out


def parse(source: str, file: str) -> ast.Module:
    """Parse one file, turning a syntax error into `SourceDoesNotParse` naming file and line."""
    try:
        return ast.parse(source, filename=file)
    except (SyntaxError, ValueError) as err:
        line = getattr(err, "lineno", None) or "?"
        reason = getattr(err, "msg", None) or str(err)
        raise SourceDoesNotParse(
            f"{file}:{line}: does not parse ({reason}); fix the file or point at another tree"
        ) from None


def findings_in_source(source: str, file: str) -> list[Finding]:
    """Every finding in one file's source text (nothing, without parsing, if it has no `_once(`)."""
    if PREFILTER not in source:
        return []
    scanner = _Scanner(file, source)
    scanner.block(parse(source, file).body, (), set())
    return numbered(scanner.raw)


def audit(root: Path, package: str = "vllm") -> AuditResult:
    """Every finding under `root/package`, shown relative to `root`: all *.py files are read, those with `_once(`
    parsed."""
    return _audit_files((path, path.relative_to(root).as_posix()) for path in sorted((root / package).rglob("*.py")))


def python_files(paths: Iterable[Path], cwd: Path | None = None) -> list[tuple[Path, str]]:
    """(file, path as shown) for every Python file given or under a directory given, in order, without repeats.

    A file is shown relative to the current directory when it is inside it (as pre-commit and linters
    show paths), else absolute.
    """
    here = (cwd or Path.cwd()).resolve()
    found: dict[Path, str] = {}
    for given in paths:
        if not given.exists():
            raise NoPythonFiles(f"{given}: no such file or directory; pass Python files or package directories")
        files = sorted(given.rglob("*.py")) if given.is_dir() else [given]
        for path in files:
            real = path.resolve()
            shown = real.relative_to(here).as_posix() if real.is_relative_to(here) else real.as_posix()
            found.setdefault(real, shown)
    if not found:
        raise NoPythonFiles(f"{', '.join(map(str, paths))}: no Python file there; pass Python files or directories")
    return sorted(found.items(), key=lambda item: item[1])


def audit_paths(paths: Iterable[Path], cwd: Path | None = None) -> AuditResult:
    """Every finding in the Python files given, or under the directories given (any package, not only vLLM)."""
    return _audit_files(python_files(list(paths), cwd))


def _audit_files(files: Iterable[tuple[Path, str]]) -> AuditResult:
    start = time.perf_counter()
    found: list[Finding] = []
    scanned = parsed = 0
    for path, shown in files:
        scanned += 1
        data = path.read_bytes()
        if PREFILTER.encode() not in data:
            continue
        parsed += 1
        found.extend(findings_in_source(data.decode("utf-8", errors="replace"), shown))
    every = numbered(found)
    return AuditResult(
        tuple(f for f in every if f.suppressed is None),
        scanned,
        parsed,
        time.perf_counter() - start,
        tuple(f for f in every if f.suppressed is not None),
    )


# ---- baseline ---------------------------------------------------------------------------------------


def load_baseline(path: str | Path) -> frozenset[str]:
    """The keys of the accepted findings in a baseline file written by `write_baseline`."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadBaseline(f"--baseline {path}: no such file; create one with --write-baseline") from None
    except (OSError, UnicodeDecodeError) as err:
        raise BadBaseline(f"--baseline {path}: cannot read it ({err})") from None
    except json.JSONDecodeError as err:
        raise BadBaseline(f"--baseline {path}:{err.lineno}: not valid JSON ({err.msg})") from None
    entries = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("key"), str) for e in entries):
        raise BadBaseline(f'--baseline {path}: not a baseline (want {{"findings": [{{"key": ...}}, ...]}})')
    return frozenset(e["key"] for e in entries)


def baseline_document(findings: Iterable[Finding], target: str) -> dict[str, object]:
    return {
        "version": BASELINE_VERSION,
        "target": target,
        "findings": [f.to_json() for f in sorted(findings, key=lambda f: f.key)],
    }


def write_baseline(path: str | Path, findings: Iterable[Finding], target: str) -> None:
    """Accept every finding: write them all (keys sorted, so the file diffs well)."""
    text = json.dumps(baseline_document(findings, target), indent=2) + "\n"
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as err:
        raise BadBaseline(f"--write-baseline {path}: cannot write it ({err.strerror or err})") from None


def compare(findings: Iterable[Finding], accepted_keys: frozenset[str]) -> Comparison:
    """Split findings into new and accepted; list baseline keys that match no finding (stale)."""
    findings = tuple(findings)
    current = {f.key for f in findings}
    return Comparison(
        new=tuple(f for f in findings if f.key not in accepted_keys),
        accepted=tuple(f for f in findings if f.key in accepted_keys),
        stale=tuple(sorted(accepted_keys - current)),
    )


def failing(comparison: Comparison, strict: bool = False) -> tuple[Finding, ...]:
    """The findings that fail the audit: new live exceptions (with `strict`, every new finding)."""
    return comparison.new if strict else comparison.new_exceptions


def exit_code(comparison: Comparison, strict: bool = False) -> ExitCode:
    """CHECK_FAILED when a live-exception finding (with `strict`, any finding) is not accepted by the baseline."""
    return ExitCode.CHECK_FAILED if failing(comparison, strict) else ExitCode.OK
