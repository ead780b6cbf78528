"""`warnonce-guard history`'s options: a bad one is one line and exit 2, before the index is read or a path made."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from warnonce_guard.cli.main import main
from warnonce_guard.common.errors import ExitCode

from tests.history_support import Served, index_server


@pytest.fixture
def empty_index(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Served]:
    """An index that lists no release, run from an empty directory."""
    monkeypatch.chdir(tmp_path)
    with index_server([]) as index:
        yield index


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--only", ""], "argument --only: an empty value"),  # refused by the command line itself (exit 2 too)
        (["--only", " , "], "--only: no version given"),
        (["--only", "0.29.0,,0.30.0"], "--only 0.29.0,,0.30.0: an empty item"),
        (["--only", "0.29.0,latest"], "--only latest: not a version"),
        (["--only", "0.29.0", "--from", "0.27.0"], "--only names exact releases: give it without --from/--to"),
        (["--from", "latest"], "--from latest: not a version"),
        (["--from", "0.30.0", "--to", "0.29.0"], "--from 0.30.0 is newer than --to 0.29.0"),
        (["--timeout", "0"], "--timeout 0: not a number of seconds above 0"),
        (["--timeout", "-5"], "--timeout -5: not a number of seconds above 0"),
        (["--timeout", "nan"], "--timeout nan: not a number of seconds above 0"),
        (["--timeout", "inf"], "--timeout inf: not a number of seconds above 0"),
        (["--index-url", ""], "argument --index-url: an empty value"),
        (["--index-url", "pypi.org/simple"], "--index-url pypi.org/simple: not an http(s) URL"),
    ],
)
def test_a_bad_option_is_one_line_and_exit_2_before_any_work(
    tmp_path: Path, empty_index: Served, capsys: pytest.CaptureFixture[str], options: list[str], said: str
) -> None:
    # any bad option must be refused before the index is asked (a bad --index-url given after this one wins)
    try:
        code = main(["history", "--index-url", empty_index.url, *options])
    except SystemExit as stop:  # argparse's errors
        code = stop.code
    assert code == ExitCode.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warnonce-guard: error: ") and said in err[0], err
    assert empty_index.asked == [], "the index was read"
    assert list(tmp_path.iterdir()) == []


def test_spaces_around_only_items_are_fine(empty_index: Served, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "--index-url", empty_index.url, "--only", " 0.29.0 , 0.30.0"]) == ExitCode.NOTHING_TO_CHECK
    err = capsys.readouterr().err.strip().splitlines()  # the versions reached the index, spaces gone
    assert err == ["warnonce-guard: error: --only: 0.29.0, 0.30.0 not on the index; it lists no release"]
