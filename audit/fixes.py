"""What `--fix` does to a finding: format the argument first, so that the message renders as before.

The inverse of the mutation operators, offered only where logging renders the message byte for byte as before
(docs/reference.md, The audit); this module decides, `audit.codemod` (libcst) applies the decision.
"""

from __future__ import annotations

from dataclasses import dataclass

from warnonce_guard.rule.formatting import placeholders

# What each placeholder letter calls on its argument: the wrapper that formats it first, the same way.
WRAPPERS = {"s": "str", "r": "repr", "a": "ascii"}
MESSAGE = -1  # the index of the message itself among the arguments a fix formats


@dataclass(frozen=True)
class Span:
    """Where a node is in the source, as findings count: 1-based lines and columns (UTF-8 bytes), end exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Fix:
    """Format the argument first: wrap it in `wrapper(...)`; with `conversion`, the message's placeholder for it
    (argument `index` after the message, in the literal at `message`) changes from that letter to `s`."""

    wrapper: str  # str, repr or ascii
    index: int = MESSAGE
    conversion: str | None = None  # r or a; None when the placeholder stays (`%s`, or the message itself)
    message: Span | None = None


def argument_fixes(fmt: str, count: int, message: Span) -> dict[int, Fix]:
    """The fix for each positional argument (by its index among the `count` after the message `fmt`) that
    formatting first can fix: none where it would change what is rendered."""
    found = placeholders(fmt)
    if any(p.arg_index is None and p.conversion != "%" for p in found):
        return {}  # `%(key)s`: the arguments are a mapping, not these positions
    if max((p.arg_index + 1 for p in found if p.arg_index is not None), default=0) != count:
        return {}  # logging could not render it before: nothing to preserve
    # A `*` width's argument has no placeholder of its own, and `%d` and the like would format differently.
    return {
        p.arg_index: Fix(WRAPPERS[p.conversion], p.arg_index, None if p.conversion == "s" else p.conversion, message)
        for p in found
        if p.arg_index is not None and p.conversion in WRAPPERS
    }


# The fix for a message that is not a string: logging renders `str(msg)`.
MESSAGE_FIX = Fix("str")
