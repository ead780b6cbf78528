"""`warnonce-guard history`'s options: a bad one is one line and exit 2, before the index is read or a path made."""

from __future__ import annotations

from pathlib import Path

import pytest
from warnonce_guard.cli.main import main
from warnonce_guard.common.errors import ExitCode
from warnonce_guard.history import run as sweep


@pytest.fixture
def no_index(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Any bad option must be refused before the index is asked (and before the work directory exists)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sweep.releases_index, "fetch_index", lambda url: pytest.fail("the index was read"))


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--only", ""], "--only: no version given"),
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
        (["--index-url", ""], "--index-url : not an http(s) URL"),
        (["--index-url", "pypi.org/simple"], "--index-url pypi.org/simple: not an http(s) URL"),
    ],
)
def test_a_bad_option_is_one_line_and_exit_2_before_any_work(
    tmp_path: Path, no_index: None, capsys: pytest.CaptureFixture[str], options: list[str], said: str
) -> None:
    assert main(["history", *options]) == ExitCode.USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warnonce-guard: error: ") and said in err[0], err
    assert list(tmp_path.iterdir()) == []


def test_spaces_around_only_items_are_fine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, ...]] = []
    monkeypatch.setattr(sweep, "run_history", lambda options, console: seen.append(options.only) or 1 / 0)
    monkeypatch.chdir(tmp_path)
    main(["history", "--only", " 0.29.0 , 0.30.0"])
    assert seen == [("0.29.0", "0.30.0")]
