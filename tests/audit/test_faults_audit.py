"""Fault cases of the audit (issue 24): no false pass, no lost file, one line for each refusal.

Each case runs `warnonce-guard audit` in process in a folder of the user's and checks the exit code, the one line
it prints, and that every file of the user's is as it was (symlinks still symlinks), or, for `--fix`, that the fix
went through the links to the file they name and kept its inode.
"""

from __future__ import annotations

import codecs
import json
import os
from pathlib import Path

import pytest
from warnonce_guard.cli.main import main
from warnonce_guard.common.errors import ExitCode

from tests.faults import ERROR_PREFIX, hash_tree, one_line_error

LEAK = 'try:\n    import my_plugin._C\nexcept ImportError as e:\n    logger.warning_once("Failed: %s", e)\n'
FIXED = LEAK.replace(", e)", ", str(e))")


def audit(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`warnonce-guard audit ARGV`: exit code, stdout, stderr (a usage error's SystemExit included)."""
    try:
        code = main(["audit", *argv])
    except SystemExit as stop:
        code = int(stop.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def area(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's folder, the current directory: a package with a leak, a link to it and a baseline of theirs."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "leak.py").write_text(LEAK)
    (tmp_path / "notes.json").write_text('{"mine": true}\n')
    os.symlink("pkg/leak.py", tmp_path / "link.py")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--select", ""], "argument --select: an empty value (is a variable unset?)"),
        (["--select", ",,,"], "argument --select: ',,,' has an empty item"),
        (["--select", "WOG001,"], "argument --select: 'WOG001,' has an empty item"),
        (["--extend-select", " "], "argument --extend-select: a blank value ' ' (is a variable unset?)"),
        (["--ignore", ""], "argument --ignore: an empty value (is a variable unset?)"),
        (["--exclude", ""], "argument --exclude: an empty value (is a variable unset?)"),
        (["--extend-exclude", ","], "argument --extend-exclude: ',' has an empty item"),
        (["--baseline", ""], "argument --baseline: an empty value (is a variable unset?)"),
        (["--write-baseline", " "], "argument --write-baseline: a blank value ' ' (is a variable unset?)"),
        ([""], "argument PATH: an empty value (is a variable unset?)"),
    ],
    ids=lambda value: " ".join(map(repr, value)) if isinstance(value, list) else "",
)
def test_an_empty_option_value_is_a_usage_error_never_not_given(
    area: Path, capsys: pytest.CaptureFixture[str], argv: list[str], line: str
) -> None:
    """An unset variable (`--select "$CODES"`) selected nothing and passed over a live exception (issue 24, 2)."""
    before = hash_tree(area)
    code, out, err = audit(capsys, *argv, "pkg")
    assert code == ExitCode.USAGE
    assert one_line_error(err).startswith(f"{ERROR_PREFIX}{line}")
    assert out == ""
    assert hash_tree(area) == before


@pytest.mark.parametrize(
    ("name", "data", "line"),
    [
        ("latin.py", b'x = "\xe9"\n', "latin.py:1:6: WOG000 not checked: not utf-8 text (invalid continuation byte"),
        ("codec.py", b"# coding: nonsense\n", "codec.py:1:1: WOG000 not checked: unknown encoding: nonsense"),
    ],
    ids=["not UTF-8", "unknown coding"],  # one that decodes but does not parse and names no cache: not read (issue 42)
)
def test_every_python_file_is_a_result_whether_or_not_it_mentions_once(
    area: Path, capsys: pytest.CaptureFixture[str], name: str, data: bytes, line: str
) -> None:
    """A file without `_once` that does not parse or decode was skipped, 0 findings, exit 0 (issue 24, 3)."""
    (area / name).write_bytes(data)
    before = hash_tree(area)
    code, out, _ = audit(capsys, name)
    assert code == ExitCode.CHECK_FAILED
    assert out.splitlines()[0].startswith(line)
    assert len(out.splitlines()) == 2  # the finding, the summary
    assert hash_tree(area) == before


def test_a_text_file_with_a_coding_line_is_read_as_python_reads_it(
    area: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (area / "coded.py").write_bytes(
        b"# -*- coding: latin-1 -*-\n" + LEAK.replace("Failed", "\xe9chec").encode("latin-1")
    )
    code, out, _ = audit(capsys, "coded.py")
    assert code == ExitCode.CHECK_FAILED
    assert out.splitlines()[0].startswith("coded.py:5:39: WOG001 logger.warning_once(...) passes `e`")


def test_write_baseline_refuses_a_file_that_is_no_baseline(area: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--write-baseline DIR/leak.py` wrote JSON over the source file (issue 24, 5)."""
    before = hash_tree(area)
    for target in ("pkg/leak.py", "notes.json", "link.py", "pkg"):
        code, out, err = audit(capsys, "pkg", "--write-baseline", target)
        assert code == ExitCode.BAD_INPUT, target
        assert one_line_error(err).startswith(f"{ERROR_PREFIX}--write-baseline {target}: "), target
        assert out == ""
    assert hash_tree(area) == before


def test_write_baseline_writes_a_new_file_an_empty_one_or_over_its_own(
    area: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (area / "empty.json").write_text("")
    os.symlink("empty.json", area / "linked.json")
    for target in ("new.json", "new.json", "linked.json"):
        assert audit(capsys, "pkg", "--write-baseline", target)[0] == ExitCode.OK
        assert json.loads((area / target).read_text())["findings"][0]["code"] == "WOG001"
    assert (area / "linked.json").is_symlink()  # written through the link, to the file it names


def test_fix_through_a_symlink_fixes_the_file_it_names(area: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--fix link.py` replaced the link with a fixed copy and left the file it named unfixed (issue 24, 6)."""
    inode = (area / "pkg" / "leak.py").stat().st_ino
    code, _, err = audit(capsys, "link.py", "--fix")
    assert (code, err.strip()) == (ExitCode.OK, "fixed 1 finding(s) in 1 file(s)")
    assert (area / "link.py").is_symlink() and os.readlink(area / "link.py") == "pkg/leak.py"
    assert (area / "pkg" / "leak.py").read_text() == FIXED
    assert (area / "pkg" / "leak.py").stat().st_ino == inode


def test_fix_of_a_hard_link_keeps_the_inode_so_every_name_is_fixed(
    area: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.link(area / "pkg" / "leak.py", area / "other.py")
    mode = 0o640
    os.chmod(area / "other.py", mode)
    code, _, _ = audit(capsys, "other.py", "--fix")
    assert code == ExitCode.OK
    assert (area / "other.py").stat().st_ino == (area / "pkg" / "leak.py").stat().st_ino
    assert (area / "pkg" / "leak.py").read_text() == FIXED
    assert (area / "other.py").stat().st_mode & 0o777 == mode


def test_a_file_with_a_bom_is_read_as_python_reads_it_and_fix_keeps_the_bom(
    area: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A BOM (which compile() accepts) was WOG000 "invalid non-printable character U+FEFF" (issue 24, 8)."""
    (area / "bom.py").write_bytes(codecs.BOM_UTF8 + LEAK.encode())
    code, out, _ = audit(capsys, "bom.py")
    assert code == ExitCode.CHECK_FAILED
    assert out.splitlines()[0].startswith("bom.py:4:39: WOG001 logger.warning_once(...) passes `e`")
    assert audit(capsys, "bom.py", "--fix")[0] == ExitCode.OK
    assert (area / "bom.py").read_bytes() == codecs.BOM_UTF8 + FIXED.encode()


def test_a_corrupt_baseline_says_the_whole_reason_and_where(area: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The reason was cut short: `(Invalid control character at)` (issue 24, 12)."""
    (area / "bad.json").write_text('{\n  "findings": ["a\tb"]\n}\n')
    before = hash_tree(area)
    code, _, err = audit(capsys, "pkg", "--baseline", "bad.json")
    assert code == ExitCode.BAD_INPUT
    expected = "--baseline bad.json:2:18: not valid JSON (Invalid control character at line 2, column 18)"
    assert one_line_error(err) == f"{ERROR_PREFIX}{expected}"
    assert hash_tree(area) == before


def test_pragma_findings_show_the_pragma_in_single_backticks(area: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (area / "pragma.py").write_text("x = 1  # warnonce: ok\ny = 2  # noqa: WOG001\n")
    _, out, _ = audit(capsys, "pragma.py", "--select", "ALL")
    first, second = out.splitlines()[:2]
    assert first == (
        "pragma.py:1:8: WOG100 `# warnonce: ok` has no reason, so it accepts nothing; say why the call is fine after "
        "it (`# warnonce: ok[WOG001] re-raised below`), or remove it"
    )
    assert second == (
        "pragma.py:2:8: WOG101 WOG001 of `# noqa: WOG001` accepts no finding; remove it (or the codes it names that "
        "match nothing)"
    )


def test_a_file_name_with_a_newline_is_one_line_per_finding(area: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (area / "two\nlines.py").write_text(LEAK)
    code, out, _ = audit(capsys, "two\nlines.py")
    assert code == ExitCode.CHECK_FAILED
    assert out.splitlines()[0].startswith("two\\nlines.py:4:39: WOG001 ")
    assert len(out.splitlines()) == 2
