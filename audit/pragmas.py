"""`# warnonce: ok <reason>`: a reviewed call whose findings are accepted; the reason is required."""

from __future__ import annotations

import re
from collections.abc import Sequence

# On any line of the call; without a reason it accepts nothing.
PRAGMA = re.compile(r"#\s*warnonce:\s*ok\b[ \t:]*(?P<reason>[^\n]*)")


def reason(lines: Sequence[str], first: int, last: int) -> str | None:
    """The reason of the first pragma with one on lines `first` to `last` (1-based, inclusive), else None."""
    for text in lines[first - 1 : last]:
        found = PRAGMA.search(text)
        if found and found.group("reason").strip():
            return found.group("reason").strip()
    return None
