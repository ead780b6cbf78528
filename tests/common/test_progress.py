"""What a run says while it works (`mutations.progress.RunProgress`): plain lines in a log, a bar on a terminal."""

from __future__ import annotations

import io
import re

from rich.console import Console
from warnonce_guard.common.console import RunProgress


def log_console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=200, force_terminal=False), out


def terminal_console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=120, force_terminal=True, force_interactive=True), out


def test_in_a_log_each_phase_is_one_plain_line_with_its_elapsed_seconds() -> None:
    console, out = log_console()
    with RunProgress(console, started=0.0) as progress:
        progress.say("staged the target")
        progress.track("mutants", 3)
        for done in (0, 1, 1, 2, 3):
            progress.advance_to(done)
        progress.end("mutants tested: 3 of 3")

    lines = out.getvalue().splitlines()
    assert [re.sub(r"\[ *[0-9.]+s\]", "[Ts]", line) for line in lines] == [
        "warnonce-guard: [Ts] staged the target",
        "warnonce-guard: [Ts] mutants tested: 3 of 3",
    ]  # nothing while counting: no bar, no carriage returns, no spinner frames
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()


def test_a_line_longer_than_the_log_is_wide_stays_one_line() -> None:
    console, out = log_console()
    where = "/tmp/" + "deep/" * 60 + "work"  # a work directory path as CI runners make them
    with RunProgress(console, started=0.0) as progress:
        progress.say(f"staged vLLM 0.33.0: 6 cached site(s); work in {where}")
    (line,) = out.getvalue().splitlines()
    assert line.endswith(f"work in {where}")


def test_on_a_terminal_a_bar_counts_the_phase_and_goes_when_it_ends() -> None:
    console, out = terminal_console()
    with RunProgress(console) as progress:
        assert progress.live
        progress.track("generation", 1)
        progress.end("generated")
        progress.track("guards on the unmutated code, then the mutants", 4)
        progress.advance_to(2)
        progress.advance_to(2)
        shown = progress._bar.tasks  # type: ignore[union-attr]
        assert [(t.description, t.completed, t.total) for t in shown] == [
            ("guards on the unmutated code, then the mutants", 2, 4)
        ]  # one bar: the phase in hand
        progress.end("mutants tested: 4 of 4")
        assert progress._bar.tasks == []  # type: ignore[union-attr]
    assert "mutants tested: 4 of 4" in out.getvalue()
