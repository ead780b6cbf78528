"""What a mutation run says while it works: its phases, with counts and elapsed seconds.

On a terminal, a rich progress bar follows the phase in hand; anywhere else (a CI log), each phase is one
plain line when it ends, `warnonce-guard: [ 12.3s] mutants tested: 18 of 18`, with no carriage returns
and no spinner frames. mutmut's own output goes to the workspace's log, never here.
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from warnonce_guard.mutations.report.printable import printable


class RunProgress:
    """Phases of one run: `done(line)` for a finished phase, `track(what, total)` and `advance(n)` for counting."""

    def __init__(self, console: Console, started: float | None = None) -> None:
        self.console = console
        self.started = time.monotonic() if started is None else started
        self.live = console.is_terminal
        self._bar: Progress | None = None
        self._task: Any = None
        self._what = ""
        self._total = 0
        self._done = -1

    def __enter__(self) -> RunProgress:
        if self.live:
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self._bar.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()

    def elapsed(self) -> str:
        return f"[{time.monotonic() - self.started:6.1f}s]"

    def say(self, line: str) -> None:
        """One line of what happened (a phase that ended, something discarded), above any bar."""
        # soft_wrap: a log line is never broken at the console width (a long work-directory path stays whole)
        # printable: a path's undecodable byte as \xNN (a console with strict UTF-8 output would refuse it)
        said = printable(f"warnonce-guard: {self.elapsed()} {line}")
        self.console.print(said, markup=False, highlight=False, soft_wrap=True)

    def track(self, what: str, total: int) -> None:
        """Start counting `what` up to `total` (a bar on a terminal; nothing more in a log until it ends)."""
        self._what, self._total, self._done = what, total, -1
        if self._bar is not None:
            if self._task is not None:
                self._bar.remove_task(self._task)
            self._task = self._bar.add_task(what, total=total)

    def advance_to(self, done: int) -> None:
        if done == self._done:
            return
        self._done = done
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=done)

    def end(self, line: str) -> None:
        """The counted phase ended: its line, and the bar goes."""
        if self._bar is not None and self._task is not None:
            self._bar.remove_task(self._task)
            self._task = None
        self.say(line)
