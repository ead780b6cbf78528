"""What a run says while it works (a progress bar on a terminal, whole lines in a CI log), and text any console or
file can take (`printable`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # rich only when a console is used: the command line prints every error through `printable`
    from rich.console import Console
    from rich.progress import Progress


def printable(text: str) -> str:
    """`text` with each surrogate escaped: an undecodable path byte as `\\xNN` (as `os.fsencode` would give the
    byte back), any other lone surrogate as `\\udNNN`; text without one is returned as it is."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that no undecodable byte made
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def print_line(console: Console, line: str) -> None:
    """`line` on `console` as it is: no markup or highlighting, never broken at the console width (a long
    work-directory path stays whole), an undecodable path byte as `\\xNN` (strict UTF-8 output would refuse it)."""
    console.print(printable(line), markup=False, highlight=False, soft_wrap=True)


def printable_json(value: Any) -> Any:
    """A JSON value (dicts, lists, strings, ...) with every string `printable`, keys included."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_json(k): printable_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(printable_json(v) for v in value)
    return value


class RunProgress:
    """Phases of one run: `say(line)` for what happened, `track(what, total)`, `describe(what)` and
    `advance_to(done)` for counting, `end(line)` when the counted phase is over."""

    def __init__(self, console: Console, started: float | None = None, stamped: bool = True) -> None:
        self.console = console
        self.started = time.monotonic() if started is None else started
        self.stamped = stamped  # each line starts `warnonce-guard: [elapsed]`
        self.live = console.is_terminal
        self._bar: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> RunProgress:
        if self.live:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

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

    def __exit__(self, *exc_info: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def elapsed(self) -> str:
        return f"[{time.monotonic() - self.started:6.1f}s]"

    def say(self, line: str) -> None:
        """One line of what happened (a phase that ended, something discarded), above any bar."""
        print_line(self.console, f"warnonce-guard: {self.elapsed()} {line}" if self.stamped else line)

    def track(self, what: str, total: int) -> None:
        """Start counting `what` up to `total` (a bar on a terminal; nothing more in a log until it ends)."""
        if self._bar is not None:
            if self._task is not None:
                self._bar.remove_task(self._task)
            self._task = self._bar.add_task(what, total=total)

    def describe(self, what: str) -> None:
        """What the bar says is under way now (e.g. a release and its stage)."""
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=what)

    def advance_to(self, done: int) -> None:
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=done)

    def end(self, line: str) -> None:
        """The counted phase ended: its line, and the bar goes."""
        if self._bar is not None and self._task is not None:
            self._bar.remove_task(self._task)
            self._task = None
        self.say(line)
