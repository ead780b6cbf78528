"""What a run says while it works (`common.console.RunProgress`): plain lines in a log, a bar on a terminal; and
text any console takes (`printable`)."""

from __future__ import annotations

import io
import os
import re

from rich.console import Console
from warnonce_guard.common.console import RunProgress, printable, printable_json


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


def test_unstamped_lines_are_printed_as_they_are_and_the_bar_says_what_is_under_way() -> None:
    """The history's way: one line per release as it is, a bar naming the release and its stage."""
    console, out = terminal_console()
    with RunProgress(console, stamped=False) as progress:
        progress.track("", 2)
        progress.describe("1.0.0: fetching")
        (task,) = progress._bar.tasks  # type: ignore[union-attr]
        assert (task.description, task.completed, task.total) == ("1.0.0: fetching", 0, 2)
        progress.say("1.0.0      exposed")
        progress.advance_to(1)
        assert progress._bar.tasks[0].completed == 1  # type: ignore[union-attr]
    assert "1.0.0      exposed" in out.getvalue() and "warnonce-guard: [" not in out.getvalue()
    console, out = log_console()
    with RunProgress(console, stamped=False) as progress:
        progress.track("", 1)
        progress.describe("1.0.0: fetching")
        progress.say("1.0.0      exposed")
        progress.advance_to(1)
    assert out.getvalue() == "1.0.0      exposed\n"


TREE = os.fsdecode(b"/src/tree\xff")  # what Python makes of the byte: a lone surrogate, which UTF-8 refuses
SHOWN = "/src/tree\\xff"


def test_an_undecodable_byte_is_shown_escaped_and_other_text_is_left_as_it_is() -> None:
    assert printable(f"{TREE}/vllm") == f"{SHOWN}/vllm"
    assert printable("vLLM 0.33.0 à Paris ǁ") == "vLLM 0.33.0 à Paris ǁ"
    assert printable("\ud800 alone") == "\\ud800 alone"  # a surrogate no byte made: escaped too
    assert printable_json({TREE: [TREE, 1, None], "ok": (TREE,)}) == {SHOWN: [SHOWN, 1, None], "ok": (SHOWN,)}


def test_a_line_with_an_undecodable_byte_prints_on_a_console_that_refuses_surrogates() -> None:
    stdout = io.BytesIO()
    console = Console(file=io.TextIOWrapper(stdout, encoding="utf-8", errors="strict"), width=200)
    with RunProgress(console, stamped=False) as progress:
        progress.say(f"work in {TREE}")
    console.file.flush()
    assert stdout.getvalue().decode("utf-8") == f"work in {SHOWN}\n"
