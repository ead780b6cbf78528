"""What a guard sees of one site while it runs: whether its blocked import was raised in its function, and every
record any logger emitted meanwhile, judged by behaviour, whatever call the handler wrote.

Everything recorded is a plain value (strings, counts, booleans): the observer must never keep the exception, or a
record (which holds its arguments), alive itself.
"""

from __future__ import annotations

import logging
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple

from warnonce_guard.guards.blocker import BlockedKernelImport


@dataclass
class Observation:
    """Plain facts about one driven site; the detectors read only this."""

    site_id: str
    calls: int  # how many times the site's code was driven
    imports_blocked: int = 0  # blocked imports of the site's kernel module raised while its function ran
    emitted: list[str] = field(default_factory=list)  # the site's records: emitted while its blocked import was handled
    once_emitted: list[str] = field(default_factory=list)  # every record of the drive emitted through a *_once cache
    exceptions_raised: int = 0
    exceptions_alive: int = 0
    exception_holders: list[str] = field(default_factory=list)
    owners_alive: int = 0
    owner_holders: list[str] = field(default_factory=list)
    expects_once: bool = False  # the handler's *_once call is recognised: its text must come out, once
    expected_message: str | None = None
    expected_fragment: str | None = None  # the %r rendering the message must contain, when not literal
    steered: dict[str, int] = field(default_factory=dict)  # branch tests patched -> times they were evaluated

    @property
    def reached(self) -> bool:
        return self.imports_blocked > 0


class Record(NamedTuple):
    """One emitted record, as plain values."""

    text: str  # record.getMessage()
    msg: str | None  # the unformatted message, when a str
    once: bool  # a *_once cache's function was on the stack: the cache let it through
    handling: bool  # emitted while the site's blocked import (or an exception it led to) was being handled


def _handling(kernel_module: str) -> bool:
    """The exception being handled is the blocked import of `kernel_module` (or the group an `except*` handles it
    in), or was raised while handling it."""
    exc: BaseException | None = sys.exc_info()[1]
    for _ in range(16):  # `__context__` chains are short; a cycle must not loop
        if exc is None:
            return False
        if blocked(exc, kernel_module):
            return True
        exc = exc.__context__ or exc.__cause__
    return False


def blocked(exc: BaseException, kernel_module: str | None = None) -> bool:
    """`exc` is a blocked import (of `kernel_module`, if given), or a group (an `except*` handler's) holding one."""
    if isinstance(exc, BaseExceptionGroup):
        return any(blocked(inner, kernel_module) for inner in exc.exceptions)
    return isinstance(exc, BlockedKernelImport) and kernel_module in (None, exc.name)


def _through(codes: frozenset[types.CodeType]) -> bool:
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


@contextmanager
def records(kernel_module: str, once_codes: frozenset[types.CodeType]) -> Iterator[list[Record]]:
    """Every record any logger emits meanwhile, at any level, as a `Record`; none reaches a handler (pytest's log
    capture would keep it, and its arguments, alive for the test's duration, which would look like retention)."""
    found: list[Record] = []
    handle, enabled = logging.Logger.handle, logging.Logger.isEnabledFor

    def taken(self: logging.Logger, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception as err:  # a format its arguments do not fit: logging would print a traceback
            text = f"<unformattable record {record.msg!r}: {type(err).__name__}>"
        msg = record.msg if isinstance(record.msg, str) else None
        found.append(Record(text, msg, _through(once_codes), _handling(kernel_module)))

    logging.Logger.handle = taken  # type: ignore[method-assign]
    logging.Logger.isEnabledFor = lambda self, level: True  # type: ignore[method-assign]
    try:
        yield found
    finally:
        logging.Logger.handle = handle  # type: ignore[method-assign]
        logging.Logger.isEnabledFor = enabled  # type: ignore[method-assign]


def runs(code_name: str, name: str) -> bool:
    """A frame of `code_name` runs the function `name`, or one of mutmut's copies of it (`x_name__mutmut_1`,
    `xǁClassǁname__mutmut_orig`)."""
    return code_name == name or (code_name.startswith(("x_", "xǁ")) and f"{name}__mutmut_" in code_name)


def in_function(name: str) -> Callable[[], bool]:
    """Whether a frame on the caller's stack runs the function `name`."""

    def running() -> bool:
        frame = sys._getframe(1)
        while frame is not None:
            if runs(frame.f_code.co_name, name):
                return True
            frame = frame.f_back
        return False

    return running
