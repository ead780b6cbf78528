"""%-style format strings: where each placeholder is and which argument it formats.

Shared by the guards (to render the message the fix preserved) and the mutators (to change only the
placeholder that formats the exception argument).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# %[(key)][flags][width][.precision][length]type, as documented for printf-style formatting.
_PLACEHOLDER = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?(?P<flags>[#0\- +]*)(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d+))?"
    r"[hlL]?(?P<conversion>[diouxXeEfFgGcrsa%])"
)


@dataclass(frozen=True)
class Placeholder:
    """One conversion in a format string, with the index of the argument it consumes."""

    start: int
    end: int
    conversion: str
    arg_index: int | None  # None for `%%` and for mapping keys


def placeholders(fmt: str) -> list[Placeholder]:
    """Every conversion of `fmt`, in order; `*` widths consume an argument of their own."""
    found: list[Placeholder] = []
    next_arg = 0
    for match in _PLACEHOLDER.finditer(fmt):
        conversion = match.group("conversion")
        if conversion == "%" or match.group("key") is not None:
            found.append(Placeholder(match.start(), match.end(), conversion, None))
            continue
        next_arg += (match.group("width") == "*") + (match.group("precision") == "*")
        found.append(Placeholder(match.start(), match.end(), conversion, next_arg))
        next_arg += 1
    return found


def placeholder_for_arg(fmt: str, arg_index: int) -> Placeholder | None:
    """The placeholder that formats positional argument `arg_index`, if any."""
    return next((p for p in placeholders(fmt) if p.arg_index == arg_index), None)


def with_conversion(fmt: str, placeholder: Placeholder, conversion: str) -> str:
    """`fmt` with one placeholder's conversion letter replaced, flags and width kept."""
    return fmt[: placeholder.end - 1] + conversion + fmt[placeholder.end :]
