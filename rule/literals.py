"""Editing one conversion letter of a %-format string literal in place (libcst), its layout kept.

The mutation operators (`mutations.operators`: `%s` -> `%r`, putting the leak back) and the audit's fixer
(`audit.codemod`: `%r` -> `%s`, taking it out) both ask `retarget_placeholder`: quotes, prefix, escapes and
implicit concatenation stay as written, and a letter spelled by an escape is left alone.
"""

from __future__ import annotations

import re

import libcst as cst
from warnonce_guard.rule.formatting import placeholder_for_arg, with_conversion

_ESCAPE = re.compile(r"\\(?:\r\n|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|N\{[^}]*\}|[0-7]{1,3}|.)", re.DOTALL)
_ONE_CHAR_ESCAPES = frozenset("\\'\"abfnrtv01234567xuUN")


def literal_offsets(node: cst.SimpleString) -> list[int | None]:
    """For each character of the string's value, its offset in `node.value` when written literally, else None."""
    prefix, body_start = node.prefix, len(node.prefix) + len(node.quote)
    body = node.value[body_start : len(node.value) - len(node.quote)]
    if "r" in prefix.lower():
        return [body_start + i for i in range(len(body))]
    offsets: list[int | None] = []
    i = 0
    while i < len(body):
        if body[i] != "\\":
            offsets.append(body_start + i)
            i += 1
            continue
        unit = _ESCAPE.match(body, i)
        assert unit is not None  # `.` with DOTALL matches whatever follows the backslash
        escaped = unit.group()[1]
        width = 0 if escaped in "\r\n" else 1 if escaped in _ONE_CHAR_ESCAPES else 2
        offsets.extend([None] * width)
        i = unit.end()
    return offsets


def string_parts(node: cst.BaseExpression) -> list[cst.SimpleString] | None:
    """The literal pieces of a (possibly implicitly concatenated) str literal; None for f-strings and bytes."""
    if isinstance(node, cst.ConcatenatedString):
        left, right = string_parts(node.left), string_parts(node.right)
        return left + right if left is not None and right is not None else None
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        return [node]
    return None


def retarget_placeholder(message: cst.BaseExpression, arg_index: int, old: str, new: str) -> cst.BaseExpression | None:
    """`message` with the conversion of the placeholder formatting `arg_index` changed from `old` to `new`.

    Only the conversion letter changes, in place: quotes, prefix, escapes and implicit concatenation stay
    as written. Skipped (None) when the message is not a str literal (f-string, bytes, a name), when no
    placeholder formats that argument or it is not `%old`, or when the letter is spelled by an escape.
    """
    parts = string_parts(message)
    if parts is None:
        return None
    values = [str(part.evaluated_value) for part in parts]
    fmt = "".join(values)
    placeholder = placeholder_for_arg(fmt, arg_index)
    if placeholder is None or placeholder.conversion != old:
        return None
    target = placeholder.end - 1  # the conversion letter, in the value of the whole message
    for part, value in zip(parts, values, strict=True):
        if target >= len(value):
            target -= len(value)
            continue
        offsets = literal_offsets(part)
        offset = offsets[target] if len(offsets) == len(value) else None
        if offset is None or part.value[offset] != old:
            return None  # the letter comes from an escape (or the mapping disagrees): leave the site alone
        changed = part.with_changes(value=part.value[:offset] + new + part.value[offset + 1 :])
        result = message.deep_replace(part, changed)
        expected = with_conversion(fmt, placeholder, new)
        return result if "".join(str(p.evaluated_value) for p in string_parts(result) or ()) == expected else None
    return None
