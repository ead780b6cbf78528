"""`--fix` and `--diff`: the fixes the audit decided (`audit.fixes`), written into the source with libcst.

Only the nodes a fix names change: the argument is wrapped in `repr(...)`, `str(...)` or `ascii(...)`, and
the message's placeholder letter for it becomes `s` in place (`rule.literals`); every other byte of the file,
comments and layout included, stays. A finding whose nodes cannot be found as the audit saw them (libcst does
not parse the file, or the letter is spelled by an escape) is left as it is and counted as not fixed. Needs
libcst (the `mutation` extra); the audit itself does not.
"""

from __future__ import annotations

import codecs
import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider
from warnonce_guard.audit.findings import Finding
from warnonce_guard.audit.fixes import Span
from warnonce_guard.audit.formats import one_line
from warnonce_guard.rule.literals import retarget_placeholder

_LINES = re.compile(r"\r\n|\r|\n")  # how ast (and libcst) count lines
Range = tuple[int, int, int, int]  # libcst's: lines 1-based, columns 0-based in characters


@dataclass(frozen=True)
class Change:
    """One file's fixes: its text before and after (without the BOM it may start with), and the findings fixed."""

    path: Path
    shown: str
    before: str
    after: str
    fixed: tuple[Finding, ...]
    bom: bool = False  # the file starts with UTF-8's byte order mark, which the fixed file keeps

    def encoded(self, text: str) -> bytes:
        """`before` or `after` as the file's bytes."""
        return (codecs.BOM_UTF8 if self.bom else b"") + text.encode("utf-8")

    def diff(self) -> str:
        """A unified diff of the change (`--- a/path`, `+++ b/path`), as git and ruff show one."""
        lines = difflib.unified_diff(
            self.before.splitlines(keepends=True),
            self.after.splitlines(keepends=True),
            f"a/{one_line(self.shown)}",  # a file name holding a newline keeps the header on its line
            f"b/{one_line(self.shown)}",
        )
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _range(span: Span, lines: Sequence[str]) -> Range:
    """A finding's span (columns in UTF-8 bytes, 1-based) as libcst counts (characters, 0-based)."""

    def column(line: int, byte_column: int) -> int:
        return len(lines[line - 1].encode()[: byte_column - 1].decode(errors="replace"))

    return span.line, column(span.line, span.column), span.end_line, column(span.end_line, span.end_column)


class _Nodes(cst.CSTVisitor):
    """The outermost expression at each wanted range, with its parentheses or without (ast counts a tuple's and a
    generator's own parentheses, libcst none)."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, wanted: set[Range]) -> None:
        super().__init__()
        self.wanted = wanted
        self.found: dict[Range, cst.BaseExpression] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseExpression):
            first, last = (node.lpar[0], node.rpar[-1]) if node.lpar and node.rpar else (node, node)
            for start, end in ((node, node), (first, last)):
                a, b = self.get_metadata(PositionProvider, start).start, self.get_metadata(PositionProvider, end).end
                key = (a.line, a.column, b.line, b.column)
                if key in self.wanted and key not in self.found:
                    self.found[key] = node
        return True


class _Replace(cst.CSTTransformer):
    """Replaces the messages (by identity) and wraps the arguments (by identity) the fixes name."""

    def __init__(self, messages: dict[int, cst.BaseExpression], wraps: dict[int, str]) -> None:
        super().__init__()
        self.messages = messages
        self.wraps = wraps

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> cst.CSTNode:
        if id(original) in self.messages:
            return self.messages[id(original)]
        if id(original) in self.wraps and isinstance(updated, cst.BaseExpression):
            return cst.Call(func=cst.Name(self.wraps[id(original)]), args=[cst.Arg(value=updated)])
        return updated


def fix_source(source: str, findings: Iterable[Finding]) -> tuple[str, list[Finding]]:
    """The source with every finding's fix applied, and the findings fixed (the others are left as they were)."""
    findings = [f for f in findings if f.fix is not None]
    if not findings:
        return source, []
    try:
        wrapper = MetadataWrapper(cst.parse_module(source))
    except cst.ParserSyntaxError:
        return source, []
    lines = _LINES.split(source)
    arguments = {id(f): _range(Span(f.line, f.column, f.end_line, f.end_column), lines) for f in findings}
    messages_at = {id(f): _range(f.fix.message, lines) for f in findings if f.fix and f.fix.message}
    visitor = _Nodes({*arguments.values(), *messages_at.values()})
    wrapper.visit(visitor)
    nodes = visitor.found

    messages: dict[int, cst.BaseExpression] = {}  # by the original message's id: the message as retargeted so far
    wraps: dict[int, str] = {}
    fixed = []
    for finding in findings:
        fix = finding.fix
        assert fix is not None
        argument = nodes.get(arguments[id(finding)])
        message = nodes.get(messages_at[id(finding)]) if id(finding) in messages_at else None
        if argument is None or (fix.message is not None and message is None):
            continue
        if fix.conversion is not None:
            assert message is not None
            current = messages.get(id(message), message)
            retargeted = retarget_placeholder(current, fix.index, fix.conversion, "s")
            if retargeted is None:
                continue
            messages[id(message)] = retargeted
        wraps[id(argument)] = fix.wrapper
        fixed.append(finding)
    return (wrapper.module.visit(_Replace(messages, wraps)).code if fixed else source), fixed


def changes(files: Iterable[tuple[Path, str]], findings: Iterable[Finding], shown: Mapping[str, str]) -> list[Change]:
    """The change each file (path, key path) with a fixable finding gets, named as `shown` shows its key.

    A file that is not UTF-8 (a BOM is kept) is not rewritten; a file given under two names (hard or symbolic links)
    is changed once, under the first.
    """
    by_file: dict[str, list[Finding]] = {}
    for finding in findings:
        if finding.fix is not None:
            by_file.setdefault(finding.file, []).append(finding)
    found = []
    changed: set[tuple[int, int]] = set()
    for path, key in files:
        if key not in by_file:
            continue
        status = path.stat()  # through symbolic links: the file itself
        if (status.st_dev, status.st_ino) in changed:
            continue  # fixed under another name: a second write would find it changed
        changed.add((status.st_dev, status.st_ino))
        name = shown.get(key, key)
        data = path.read_bytes()
        bom = data.startswith(codecs.BOM_UTF8)
        try:
            before = data[len(codecs.BOM_UTF8) if bom else 0 :].decode("utf-8")
        except UnicodeDecodeError:
            continue
        after, fixed = fix_source(before, by_file[key])
        found.append(Change(path, name, before, after, tuple(fixed), bom))
    return found
