"""The console every command prints its tables and progress on."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


def console() -> Console:
    """A rich console for tables and progress (CI logs: wide, so table rows stay whole); rich is imported only now
    (`audit` runs without it). No emoji codes: a path holding `:thumbs_up:` is printed as it is, not as an emoji."""
    from rich.console import Console

    return Console(emoji=False) if sys.stdout.isatty() else Console(width=200, emoji=False)
