"""Newer syntax, made readable by an older Python's `ast` without moving what the audit reports (standard library only).

3.12's type parameters and f-strings (PEP 695, 701) are rewritten in place, every line and column kept
(`downgraded`); 3.14's template strings are not: unlike an f-string, a template keeps the objects it formats.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

_PREFIXES = frozenset({"", "r", "u", "b", "br", "rb", "f", "fr", "rf", "t", "tr", "rt"})
_PREFIX = re.compile(r"(?<!\w)[a-zA-Z]{1,2}\Z")  # letters just before a quote, not ending a longer name
_TYPE_PARAMETERS = re.compile(r"(?<![\w.])(?:def|class)[ \t]+[^\W\d]\w*[ \t]*(?=\[)")
_TYPE_ALIAS = re.compile(r"^[ \t]*(type[ \t]+([^\W\d]\w*)[ \t]*)(?=[\[=])", re.MULTILINE)


@dataclass(frozen=True)
class Span:
    """A stretch of the text: [start, end), and whether it is an f-string."""

    start: int
    end: int
    formatted: bool = False


class _Lexer:
    """Strings and comments of Python source, f-strings' fields followed into (PEP 701's nesting included)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.spans: list[Span] = []  # top-level strings and comments, in order
        self.fields: list[tuple[int, int]] = []  # where each replacement field's expression is

    def prefix(self, quote: int) -> tuple[int, str]:
        """Where the string that opens at `quote` starts, and its prefix (lower case)."""
        found = _PREFIX.search(self.text, max(quote - 2, 0), quote)
        word = found.group().lower() if found else ""
        return (quote - len(word), word) if word in _PREFIXES else (quote, "")

    def string(self, quote: int, prefix: str) -> int | None:
        """The index after the string whose quote is at `quote`; None if it does not end."""
        text = self.text
        closing = text[quote] * 3 if text.startswith(text[quote] * 3, quote) else text[quote]
        formatted, at = "f" in prefix or "t" in prefix, quote + len(closing)
        while at < len(text):
            char = text[at]
            if text.startswith(closing, at):
                return at + len(closing)
            if char == "\\":
                at += 1 if formatted and text.startswith("{", at + 1) else 2
            elif char == "\n" and len(closing) == 1:
                return None
            elif formatted and char == "{":
                if text.startswith("{{", at):
                    at += 2
                elif (after := self.field(at + 1)) is None:
                    return None
                else:
                    at = after
            else:
                at += 1
        return None

    def field(self, at: int) -> int | None:
        """The index after the `}` of the replacement field whose code starts at `at`."""
        text, start = self.text, at
        at = self.code(at, "}!:")
        if at is None:
            return None
        self.fields.append((start, at))
        if text[at] == "!":
            if not text.startswith(("r", "s", "a"), at + 1):
                return None
            at += 2
            while at < len(text) and text[at] in " \t\r\n\f":
                at += 1
        if at is not None and at < len(text) and text[at] == ":":
            at += 1
            while at < len(text) and text[at] != "}":
                if text[at] == "{":
                    at = self.field(at + 1)
                    if at is None:
                        return None
                elif text[at] == "\n":
                    return None
                else:
                    at += 1
        return at + 1 if at is not None and at < len(text) and text[at] == "}" else None

    def code(self, at: int, stops: str = "", top: bool = False) -> int | None:
        """The index of the first of `stops` outside brackets from `at` (None if none: the end, for the top level)."""
        text, depth = self.text, 0
        while at < len(text):
            char = text[at]
            if char == "#":
                end = text.find("\n", at)
                end = len(text) if end < 0 else end
                if top:
                    self.spans.append(Span(at, end))
                at = end
            elif char in "'\"":
                start, prefix = self.prefix(at)
                end = self.string(at, prefix)
                if end is None:
                    return None
                if top:
                    self.spans.append(Span(start, end, "f" in prefix))
                at = end
            elif depth == 0 and char in stops and not text.startswith("!=", at):
                return at
            else:
                depth += char in "([{"
                depth -= char in ")]}"
                at += 1
        return None


def _shaped_string(segment: str) -> str:
    """A plain string literal with the lines of `segment` and, where it can, each line's width in UTF-8 bytes."""
    widths = [len(line.encode()) for line in segment.split("\n")]
    if len(widths) == 1:
        return '"' + " " * max(widths[0] - 2, 1) + '"'
    middle = [" " * width for width in widths[1:-1]]
    return "\n".join(['"""' + " " * max(widths[0] - 3, 0), *middle, " " * max(widths[-1] - 3, 0) + '"""'])


def _spaces(segment: str) -> str:
    return "\n".join(" " * len(line.encode()) for line in segment.split("\n"))


def _expression(code: str) -> bool:
    """Whether a replacement field's code is an expression (once its own newer syntax is rewritten)."""
    code = code.rstrip()
    code = code[:-1] if code.endswith("=") and not code.endswith("==") else code  # `{x=}` shows x and its value
    if not code.strip():
        return False
    for candidate in (code, (downgraded(code) or ("",))[0]):
        try:
            ast.parse(f"(\n{candidate}\n)", mode="eval")
            return True
        except (SyntaxError, ValueError):
            continue
    return False


def downgraded(text: str) -> tuple[str, list[tuple[int, int]]] | None:
    """`text` with 3.12's syntax rewritten in place, and the (first, last) lines rewritten; None if it does not lex
    (or a replacement field holds no expression: a broken f-string is not newer syntax)."""
    lexer = _Lexer(text)
    if lexer.code(0, top=True) is not None or not text:
        return None
    if not all(_expression(text[start:end]) for start, end in lexer.fields):
        return None
    masked = list(text)
    replacements: list[tuple[int, int, str]] = []
    for span in lexer.spans:
        masked[span.start : span.end] = re.sub("[^\n]", " ", text[span.start : span.end])  # positions kept: characters
        if span.formatted:
            replacements.append((span.start, span.end, _shaped_string(text[span.start : span.end])))
    flat = "".join(masked)
    for found in _TYPE_PARAMETERS.finditer(flat):
        close = lexer.code(found.end() + 1, ")]}")  # the bracket closing the `[` found
        if close is not None and "\n" not in flat[found.end() : close]:
            replacements.append((found.end(), close + 1, _spaces(text[found.end() : close + 1])))
    for found in _TYPE_ALIAS.finditer(flat):
        start, name = found.start(1), found.group(2)
        end = flat.find("=", found.end(1))
        if end > 0 and "\n" not in flat[start:end]:
            replacements = [r for r in replacements if not start <= r[0] < end]  # its parameters go with it
            replacements.append((start, end, name + " " * (len(text[start:end].encode()) - len(name.encode()))))
    out, at, lines = [], 0, []
    for start, end, new in sorted(replacements):
        out += [text[at:start], new]
        at = end
        first = text.count("\n", 0, start) + 1
        lines.append((first, first + text.count("\n", start, end)))
    return "".join([*out, text[at:]]), lines
