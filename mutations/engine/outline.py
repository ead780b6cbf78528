"""A site file as mutmut needs to see it: the functions and classes holding no site stubbed out, line for line.

mutmut parses, positions and re-renders a whole file with libcst to mutate the few lines of its sites, and libcst
spends its time per node: on vLLM's platform files, nine tenths of the generation's CPU went to functions no
operator of ours touches. `outline` keeps every line of the file where it was: each function or class (module level,
or in the body of a class holding a site) that holds none of the sites' lines becomes a stub of the same height
(`def` and a string), and everything else stays as written. mutmut's output on the outline is its output on the file
but for the stubs, each found once and put back as written by `restore`: the mutants, their names, lines and
columns are those of the whole file (tests/mutations/test_outline.py compares them byte for byte).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection
from dataclasses import dataclass

_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True)
class Outline:
    """A file's outline (`code`), and each stub in it with the text it stands for."""

    code: str
    stubs: tuple[tuple[str, str], ...]  # (stub, original), in file order

    def restore(self, generated: str) -> str | None:
        """mutmut's output on the outline with each stub put back as written; None when a stub is not in it exactly
        once (then the outline is of no use: generate from the file)."""
        for stub, original in self.stubs:
            if generated.count(stub) != 1:
                return None
            generated = generated.replace(stub, original)
        return generated


def _first_line(node: _Def) -> int:
    """Where a definition begins: its first decorator's line, else its own."""
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def _holds(node: _Def, lines: Collection[int]) -> bool:
    """Whether one of `lines` lies in `node`, from its first decorator to its last line."""
    return any(_first_line(node) <= line <= (node.end_lineno or node.lineno) for line in lines)


def _without(body: list[ast.stmt], lines: Collection[int]) -> list[_Def]:
    """The functions and classes of `body` holding none of `lines`."""
    return [node for node in body if isinstance(node, _Def) and not _holds(node, lines)]


def _stubbed(body: list[ast.stmt], lines: Collection[int]) -> list[_Def]:
    """The module's functions and classes holding none of `lines`, and in a class holding one (mutmut arranges a
    top-level class's methods), those of its body: one level, as mutmut's trampolines go."""
    out = _without(body, lines)
    for node in body:
        if isinstance(node, ast.ClassDef) and node not in out:
            out += _without(node.body, lines)
    return sorted(out, key=lambda node: node.lineno)


def _stub(number: int, text: str, body_indent: str | None) -> str:
    """A `def` as high as `text` (whole lines, the last with its newline if it has one), at its indentation: its body
    an indented string at `body_indent`; with None (a body on the `def` line itself, as in `def f(): return (` or
    `@overload` then `def g(x): ...`), on the stub's last line, its parameters' parentheses spanning the lines before
    (what follows then attaches to the next statement, as it does after a body on the `def` line)."""
    indent = text[: len(text) - len(text.lstrip(" \t"))]
    ending = "\n" if text.endswith("\n") else ""
    height = text.count("\n") + (0 if ending else 1)
    head = f"{indent}def _warnonce_stub_{number}_("
    if body_indent is None:
        return f"{head}" + "\n" * (height - 1) + f"): ...{ending}"
    return f'{head}):\n{body_indent}"""' + "\n" * (height - 2) + f'"""{ending}'


def _continued(line: str) -> bool:
    """A physical line that a backslash joins to the next."""
    return line.rstrip("\n").endswith("\\")


def _joined(body_indent: str, code: str, starts: list[int], body_line: int) -> bool:
    """Whether a body on a line after its `def` starts after more than indentation (the header's last line), or on
    a line a backslash joins to the one before."""
    return not body_indent.isspace() or _continued(code[starts[body_line - 2] : starts[body_line - 1]])


def outline(code: str, lines: Collection[int] | None) -> Outline | None:
    """`code` with what holds none of `lines` stubbed out; None when nothing would be (or it cannot be done: no
    lines to keep, a file `ast` cannot parse, a newline other than `\\n` or a form feed, a `no mutate` pragma, whose
    regions may cross what is stubbed, a definition a backslash joins to the line after it or to its body)."""
    if not lines or "\r" in code or "\x0c" in code or "no mutate" in code:
        return None
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    stubbed = _stubbed(tree.body, lines)
    if not stubbed:
        return None
    starts = [0, *(match.end() for match in re.finditer("\n", code)), len(code)]  # line n starts at starts[n - 1]
    parts, stubs, at = [], [], 0
    for number, node in enumerate(stubbed):
        last = node.end_lineno or node.lineno
        begin, end = starts[_first_line(node) - 1], starts[last]
        text = code[begin:end]
        inner = node.body[0]
        body_line = code[starts[inner.lineno - 1] : starts[inner.lineno]]
        body_indent = body_line[: inner.col_offset] if inner.lineno > node.lineno else None
        if _continued(text) or (body_indent is not None and _joined(body_indent, code, starts, inner.lineno)):
            return None  # a backslash joins it to the next line, or its header to a one-line body: no stub fits
        stub = _stub(number, text, body_indent)
        parts += [code[at:begin], stub]
        stubs.append((stub, text))
        at = end
    parts.append(code[at:])
    return Outline("".join(parts), tuple(stubs))
