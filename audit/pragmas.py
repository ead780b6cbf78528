"""Pragmas: `# noqa` (with ruff's meaning) and `# warnonce: ok[CODES] <reason>` (the audit's own), and the findings
about pragmas themselves (WOG100, WOG101; docs/reference.md, The audit)."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from warnonce_guard.audit.findings import Finding
from warnonce_guard.audit.rules import BY_CODE, REASONLESS, UNUSED

OURS = re.compile(r"#\s*warnonce:\s*ok\b(?:\[(?P<codes>[^\]]*)\])?[ \t:]*(?P<reason>[^\n]*)")
NOQA = re.compile(r"#\s*(?i:noqa)(?P<colon>\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)?)?")
_CODE = re.compile(r"[A-Z]+[0-9]+")
# Text that may be a pragma this module reports on anywhere in a file (not only on a call).
MENTIONED = re.compile(r"#\s*warnonce:|#\s*(?i:noqa)\s*:[^\n]*WOG")

Span = tuple[int, int, int, int]  # first line, first column, last line, end column (1-based lines, 0-based columns)


@dataclass
class Pragma:
    """One pragma comment, and the codes it has accepted in this file."""

    line: int
    column: int  # 0-based, of its `#`
    text: str  # as written, from its `#` to the end of the line
    ours: bool  # the audit's own pragma, else ruff's and flake8's noqa
    codes: frozenset[str] | None  # the codes it names; None: every code
    reason: str  # ours: why the call is fine (required); noqa: the pragma itself
    qualname: str = "<module>"
    used: set[str] = field(default_factory=set)

    def accepts(self, code: str) -> bool:
        return (not self.ours or bool(self.reason)) and (self.codes is None or code in self.codes)


def on_line(text: str, line: int) -> Iterator[Pragma]:
    """The pragmas one line of source may hold (whether each is a comment is the caller's question)."""
    if "#" not in text:
        return
    for found in OURS.finditer(text):
        codes = found.group("codes")
        named = None if codes is None else frozenset(_CODE.findall(codes.upper()))
        comment = text[found.start() :].rstrip()
        yield Pragma(line, found.start(), comment, True, named, found.group("reason").strip())
    for found in NOQA.finditer(text):
        if found.group("colon") is None:  # a bare noqa (or noqa and words): every code
            named: frozenset[str] | None = None
        else:  # a colon and codes; without codes it accepts nothing (ruff warns about it)
            named = frozenset(_CODE.findall(found.group("codes") or ""))
        yield Pragma(line, found.start(), found.group(0).rstrip(), False, named, found.group(0).lstrip("# ").rstrip())


def _comments(source: str) -> set[tuple[int, int]] | None:
    """(line, column) of every comment's `#` (columns in characters), or None if the source does not tokenize."""
    try:
        tokens = tokenize.generate_tokens(io.StringIO(source).readline)
        return {t.start for t in tokens if t.type == tokenize.COMMENT}
    except (tokenize.TokenError, SyntaxError):
        return None


class Pragmas:
    """The pragmas of one file: which findings they accept, and the findings about them."""

    def __init__(self, file: str, lines: Sequence[str]) -> None:
        self.file = file
        self.lines = lines
        self.met: dict[tuple[int, int], Pragma] = {}  # (line, column) -> the pragma, on calls

    def _on(self, line: int, strings: Sequence[Span], qualname: str) -> list[Pragma]:
        found = []
        for pragma in on_line(self.lines[line - 1], line):
            at = (line, len(self.lines[line - 1][: pragma.column].encode()))  # as ast counts: in bytes
            if not any((first, start) <= at < (last, end) for first, start, last, end in strings):  # in no string
                found.append(self.met.setdefault((line, pragma.column), replace(pragma, qualname=qualname)))
        return found

    def accept(
        self, findings: Iterable[Finding], first: int, last: int, strings: Sequence[Span], qualname: str
    ) -> list[Finding]:
        """The findings of one call (on lines `first` to `last`, its string literals at `strings`), each with the
        reason of the first pragma that accepts it."""
        ours = [p for n in range(first, last + 1) for p in self._on(n, strings, qualname) if p.ours]
        out = []
        for finding in findings:
            noqa = [p for p in self._on(finding.line, strings, qualname) if not p.ours]
            accepting = [p for p in (*ours, *noqa) if p.accepts(finding.code)]
            for pragma in accepting:
                pragma.used.add(finding.code)
            out.append(replace(finding, suppressed=accepting[0].reason) if accepting else finding)
        return out

    def findings(self, source: str) -> list[Finding]:
        """WOG100 for each `# warnonce: ok` without a reason; WOG101 for each pragma (or WOG code) that accepted
        nothing."""
        every = dict(self.met)
        if MENTIONED.search(source):
            comments = _comments(source)
            for number, text in enumerate(self.lines, 1):
                for pragma in on_line(text, number):
                    where = (number, pragma.column)
                    if where not in every and (comments is None or where in comments):
                        every[where] = pragma
        out = []
        for pragma in sorted(every.values(), key=lambda p: (p.line, p.column)):
            if pragma.ours and not (pragma.reason and pragma.used):
                out.append(self._finding(pragma, UNUSED if pragma.reason else REASONLESS, f"`{pragma.text}`"))
                continue
            for code in sorted((pragma.codes or frozenset()) - pragma.used):
                if code.startswith("WOG"):
                    unknown = "" if code in BY_CODE else " (an unknown code)"
                    out.append(self._finding(pragma, UNUSED, f"{code}{unknown} of `{pragma.text}`"))
        return out

    def _finding(self, pragma: Pragma, kind: str, argument: str) -> Finding:
        """A finding at the pragma, its columns in UTF-8 bytes as ast counts (as every other finding's)."""
        start = len(self.lines[pragma.line - 1][: pragma.column].encode())
        end = start + len(pragma.text.encode())
        return Finding(
            self.file, pragma.line, pragma.qualname, "", argument, kind, column=start + 1,
            end_line=pragma.line, end_column=end + 1,
        )  # fmt: skip
