"""Which test started a thread: a thread started by a test is that test's, and so are the threads it starts.

`threading.Thread.start` is wrapped while strict mode is on (put back at the end, unless someone wrapped it
again since) to note, for each new thread, the test that owns the starting thread. Threads started by
`_thread.start_new_thread` directly, or before strict mode was on, have no known origin.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Origin:
    """The test (its node id) that owned the thread that started this one; None: no test was running."""

    test: str | None


class Origins:
    """Each thread's origin, noted when it starts; `owner()` tells which test a thread belongs to."""

    def __init__(self, running: Callable[[], str | None]) -> None:
        self._running = running  # the test in progress in the thread that runs the tests (None between tests)
        self.runner = threading.current_thread()
        self._origins: weakref.WeakKeyDictionary[threading.Thread, Origin] = weakref.WeakKeyDictionary()
        self._start: Callable[[threading.Thread], None] | None = None
        self._ours: Callable[[threading.Thread], None] | None = None

    def owner(self, thread: threading.Thread) -> Origin | None:
        """The test `thread` belongs to: the running test for the test runner, else its origin (None: unknown)."""
        if thread is self.runner:
            return Origin(self._running())
        return self._origins.get(thread)

    def install(self) -> None:
        start = threading.Thread.start

        @functools.wraps(start)
        def start_noting_origin(thread: threading.Thread) -> None:
            origin = self.owner(threading.current_thread())
            if origin is not None:
                self._origins[thread] = origin
            start(thread)

        self._start, self._ours = start, start_noting_origin
        threading.Thread.start = start_noting_origin  # type: ignore[method-assign]

    def uninstall(self) -> None:
        if self._start is not None and threading.Thread.start is self._ours:
            threading.Thread.start = self._start  # type: ignore[method-assign]
        self._start = self._ours = None
