"""Parsing a module whatever Python runs the audit, in bounded memory: its top-level statements as `ast` trees.

A file that fails where newer syntax is parses again rewritten (`newer`); a big one is parsed a piece at a time
(`CHUNK`, `cuts`): ast's nodes take some 70 times the source's size.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterator

from warnonce_guard.audit.newer import downgraded

CHUNK = 1 << 20
RETRIES = 3
_CUT = re.compile(r"^(?=[^\s#)\]}])(?!(?:else|elif|except|finally)\b)", re.MULTILINE)
# Strings (any prefix, triple-quoted or not), comments and brackets: enough to tell where a statement may start.
_STRINGS = [rf"{q * 3}(?:\\.|[^\\])*?{q * 3}" for q in "'\""] + [rf"{q}(?:\\.|[^\\{q}\n])*{q}" for q in "'\""]
_TOKENS = re.compile(rf"[rRbBuUfFtT]{{0,2}}(?:{'|'.join(_STRINGS)})|#[^\n]*|[()\[\]{{}}]", re.DOTALL)


class DoesNotParse(Exception):
    """The source does not parse: where (1-based line and column) and why."""

    def __init__(self, line: int, column: int, reason: str) -> None:
        super().__init__(f"{line}:{column}: {reason}")
        self.line, self.column, self.reason = line, column, reason


def _failure(err: SyntaxError | ValueError | RecursionError, first_line: int) -> DoesNotParse:
    """The error as a `DoesNotParse`, at its line and column."""
    if isinstance(err, RecursionError):
        return DoesNotParse(first_line, 1, "an expression nested too deeply for Python's parser")
    line, column = getattr(err, "lineno", None) or first_line, getattr(err, "offset", None) or 1
    return DoesNotParse(line, column, f"does not parse ({getattr(err, 'msg', None) or err})")


def parse(text: str, first_line: int = 1) -> ast.Module:
    """`text` (which starts at line `first_line` of its file) parsed; newer syntax than this Python's is read too,
    when the error lies in what `newer.downgraded` rewrites."""
    pad = "\n" * (first_line - 1)
    try:
        return ast.parse(pad + text)
    except (SyntaxError, ValueError, RecursionError) as err:
        failure, syntax = _failure(err, first_line), isinstance(err, SyntaxError)
    rewritten = downgraded(text) if syntax else None
    if rewritten is None or not any(a <= failure.line - first_line + 1 <= b for a, b in rewritten[1]):
        raise failure
    try:
        return ast.parse(pad + rewritten[0])
    except (SyntaxError, ValueError, RecursionError) as err:
        raise _failure(err, first_line) from None


def cuts(source: str) -> list[int]:
    """Where a piece may end: before a line that starts a statement at column 0 (not after a decorator's line), not
    inside a string, a comment or brackets (as far as a quick lexer sees), in order; the end last."""
    candidates = [m.start() for m in _CUT.finditer(source) if source[source.rfind("\n", 0, m.start() - 1) + 1] != "@"]
    safe, depth, at = [], 0, 0
    for token in _TOKENS.finditer(source):
        while at < len(candidates) and candidates[at] < token.start():
            if depth == 0:
                safe.append(candidates[at])
            at += 1
        while at < len(candidates) and candidates[at] < token.end():
            at += 1  # inside the string or comment
        char = token.group()
        depth = max(depth + (char in "([{") - (char in ")]}"), 0) if len(char) == 1 else depth
    if depth == 0:
        safe += candidates[at:]
    return [*safe, len(source)]


def modules(source: str) -> Iterator[ast.Module]:
    """The source's statements, as modules of `CHUNK` characters or more (one, for a source of up to 2 CHUNKs)."""
    if len(source) <= 2 * CHUNK:
        yield parse(source)
        return
    ends = cuts(source)
    start, line = 0, 1
    while start < len(source):
        size, tries = CHUNK, 0
        while True:
            index = bisect.bisect_left(ends, start + size) + tries
            end = ends[min(index, len(ends) - 1)]
            try:
                module = parse(source[start:end], line)
                break
            except DoesNotParse:
                if end == len(source):
                    raise
                tries += 1
                if tries == RETRIES:  # the next few places did not do: a bigger piece
                    size, tries = size * 2, 0
        yield module
        line += source.count("\n", start, end)
        start = end
