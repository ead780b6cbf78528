"""Notes: what a command tells the user without stopping (a target file skipped, another user's directory left).

Library code below the command line does not print: it calls `note`, a warning on the `warnonce_guard.notes`
logger. The command line renders each distinct note once, as one line on stderr (`warnonce-guard: note: ...`);
without it, Python's last-resort handler prints the message alone, and tests read them with `caplog`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

LOGGER = logging.getLogger("warnonce_guard.notes")


def note(message: str) -> None:
    """Tell the user `message` (one line), and go on."""
    LOGGER.warning(message)


class _Lines(logging.Handler):
    """Each distinct note once, as one line on the stderr of the moment (a command's may be wrapped)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.said: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        message = " ".join(record.getMessage().split())
        if message not in self.said:
            self.said.add(message)
            print(f"warnonce-guard: note: {message}", file=sys.stderr, flush=True)


@contextmanager
def shown_as_lines() -> Iterator[None]:
    """For the block (a command), notes are printed as lines on stderr, and go nowhere else."""
    handler, propagate = _Lines(), LOGGER.propagate
    LOGGER.addHandler(handler)
    LOGGER.propagate = False
    try:
        yield
    finally:
        LOGGER.removeHandler(handler)
        LOGGER.propagate = propagate
