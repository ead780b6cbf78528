"""What a guard sees of one site while it runs: how often it logs, and the records emitted.

Everything recorded is a plain value (strings, counts, booleans): the observer must never keep the
exception alive itself.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from warnonce_guard.guards.blocker import BlockedKernelImport


@dataclass
class Observation:
    """Plain facts about one driven site; the detectors read only this."""

    site_id: str
    calls: int  # how many times the site's code was driven
    log_calls: int = 0  # logger calls the site made while handling its blocked import
    emitted: list[str] = field(default_factory=list)  # log records the site's calls emitted
    exceptions_raised: int = 0
    exceptions_alive: int = 0
    exception_holders: list[str] = field(default_factory=list)
    owners_alive: int = 0
    owner_holders: list[str] = field(default_factory=list)
    expected_message: str | None = None
    expected_fragment: str | None = None  # the %r rendering the message must contain, when not literal
    steered: dict[str, int] = field(default_factory=dict)  # branch tests patched -> times they were evaluated

    @property
    def reached(self) -> bool:
        return self.log_calls > 0


class LoggerSpy:
    """Stands in for a module's `logger` (or wraps the partial a site calls): counts the calls made for the site.

    A call counts for the site when the exception being handled is the blocker's for the site's kernel module (for
    a call after the handler, `after`, when it is not: the handler's own calls are not the site's, and with a literal
    `message`, only a call of that message: the function's other calls are not either) and the caller is the site's
    function or the helper it calls (mutmut's mangled copies included). With `once`, the site's `*_once` calls go to
    `once(real, name)` in place of the logger's own (`guards.stock_cache.StockOnce`).
    """

    def __init__(
        self,
        real: logging.Logger,
        kernel_module: str,
        function_names: tuple[str, ...],
        after: bool = False,
        message: str | None = None,
        once: Callable[[logging.Logger, str], Callable[..., Any]] | None = None,
    ) -> None:
        self._real = real
        self._kernel_module = kernel_module
        self._function_names = tuple(name for name in function_names if name)
        self._after = after
        self._message = message if after else None  # no operator rewrites a call after the handler: it stays
        self._once = once
        self.calls = 0
        self.in_site_call = False

    def _is_site_call(self) -> bool:
        handled = sys.exc_info()[1]
        if (isinstance(handled, BlockedKernelImport) and handled.name == self._kernel_module) == self._after:
            return False
        caller = sys._getframe(2).f_code.co_name
        return any(name in caller for name in self._function_names)

    def _counted(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        self.in_site_call = True
        try:
            return call(*args, **kwargs)
        finally:
            self.in_site_call = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._real, name)
        if not callable(attr) or not self._is_site_call():
            return attr
        if self._once is not None and name.endswith("_once"):
            attr = self._once(self._real, name)

        def spy(msg: Any = "", *args: Any, **kwargs: Any) -> Any:
            if self._message is not None and msg != self._message:
                return attr(msg, *args, **kwargs)
            return self._counted(attr, msg, *args, **kwargs)

        return spy

    def wrapping(self, call: Any) -> Any:
        """`call` (a partial of a `*_once` method, or the method itself, bound to the real logger), counted."""

        def spy(*args: Any, **kwargs: Any) -> Any:
            if not self._is_site_call():
                return call(*args, **kwargs)
            return self._counted(call, *args, **kwargs)

        return spy


class RecordCapture(logging.Handler):
    """Collects the rendered text of records emitted during the spy's site calls."""

    def __init__(self, spy: LoggerSpy):
        super().__init__(logging.DEBUG)
        self.spy = spy
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if self.spy.in_site_call:
            self.texts.append(record.getMessage())
