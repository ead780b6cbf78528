"""Every file is a result: one that does not parse is one finding (WOG000) at its error, newer syntax than the running
Python's is read (through libcst), big files are parsed in pieces, and deep expressions are findings, not tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from warnonce_guard.audit import grammar
from warnonce_guard.audit.scan import findings_in_source

HANDLER = "try:\n    pass\nexcept Exception as e:\n"


def found(source: str) -> list[tuple[str, int, int, str]]:
    return [(f.code, f.line, f.column, f.argument) for f in findings_in_source(textwrap.dedent(source), "x.py")]


def test_a_file_that_does_not_parse_is_one_finding_at_the_error() -> None:
    source = 'logger.info_once("%s", x)\n\nlogger.info_once("%s", (y\n'
    ((code, line, column, why),) = found(source)
    assert (code, line, column) == ("WOG000", 3, 24) and why.startswith("does not parse ('(' was never closed")


def test_null_bytes_are_a_finding_too() -> None:
    ((code, _, _, why),) = found('logger.info_once("%s", x)\0\n')
    assert code == "WOG000" and "null bytes" in why


NEWER = """\
type Alias[T] = list[T] | None


def first[T: (int, str)](xs: list[T]) -> T:
    try:
        return xs[0]
    except IndexError as e:
        logger.warning_once(f"{xs["key"]} failed: {'\\n'.join(xs)}", e)
        logger.warning_once(f"{
            xs!r
        }", e)


class Box[T]:
    def get(self) -> None:
        logger.info_once("%s", self)
"""


def test_python_3_12_syntax_is_read_with_the_positions_python_3_12_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "libcst", None)  # the standard library alone reads it
    assert found(NEWER) == [  # (line, column) as Python 3.12's ast puts them
        ("WOG001", 8, 69, "e"),
        ("WOG001", 11, 13, "e"),
        ("WOG002", 16, 32, "self"),
    ]


def test_newer_syntax_after_text_that_is_not_ascii_is_read_too() -> None:
    # A string or comment with é before it once shifted where the rewrite looked (UTF-8 widths taken for positions).
    assert found('# é\nx = "ééé"\n' + NEWER) == [
        ("WOG001", 10, 69, "e"),
        ("WOG001", 13, 13, "e"),
        ("WOG002", 18, 32, "self"),
    ]


def test_an_error_outside_the_newer_syntax_is_still_the_files_finding() -> None:
    source = NEWER + "\nlogger.info_once('%s', (x\n"
    ((code, line, _, why),) = found(source)
    assert (code, line) == ("WOG000", 18) and "was never closed" in why
    ((code, _, _, _),) = found("x = f'{y!}'\n" + NEWER)  # a broken f-string is not taken for newer syntax
    assert code == "WOG000"


# Col-0 lines that do not start a statement (in a docstring, a bracket, after a decorator), `else:` and a
# handler binding at module level: a cut there must not change a finding.
TRICKY = '''\
"""A docstring
with lines at column 0
logger.info_once("%s", not_a_call)
"""
try:
    import kernels
except ImportError as err:
    failure = err
else:
    pass
DATA = [
1, 2,
]
@decorator
def f():
    logger.warning_once("%s", failure)
'''


@pytest.mark.parametrize("chunk", [1, 7, 40, 100])
def test_a_big_source_parsed_in_pieces_has_the_findings_of_a_whole_parse(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    source = TRICKY * 4 + 'logger.info_once("%s", (broken\n' + TRICKY
    whole = findings_in_source(TRICKY * 4, "x.py"), findings_in_source(source, "x.py")
    monkeypatch.setattr(grammar, "CHUNK", chunk)
    pieces = findings_in_source(TRICKY * 4, "x.py"), findings_in_source(source, "x.py")
    assert pieces == whole
    assert [f.code for f in whole[0]] == ["WOG001"] * 4 and [f.code for f in whole[1]] == ["WOG000"]


def test_pieces_end_only_where_a_statement_starts_outside_strings_and_brackets() -> None:
    starts = [TRICKY.index(line) for line in ("try:", "DATA", "@decorator")]
    assert grammar.cuts(TRICKY) == [*starts, len(TRICKY)]


@pytest.mark.parametrize("terms", [400, 2500])
def test_a_deep_expression_is_a_finding(terms: int) -> None:
    deep = "+".join(["a"] * (terms - 1) + ["e"])
    ((code, line, column, argument),) = found(f'{HANDLER}    logger.warning_once("%s", {deep})\n')
    assert (code, line, column, argument) == ("WOG001", 4, 31, " + ".join(deep.split("+")))
    assert sys.getrecursionlimit() == 1000 or terms == 400  # the limit is put back


def test_an_expression_too_deep_for_the_parser_is_a_finding_not_a_traceback() -> None:
    deep = "+".join(["a"] * 5000)
    ((code, _, _, why),) = found(f'{HANDLER}    logger.warning_once("%s", {deep})\n')
    assert code == "WOG000" and "nested too deeply" in why


UNIT = '''

class Platform{n}:
    """A platform.

with a docstring line at column 0
"""

    @classmethod
    def import_kernels(cls, x):
        try:
            import vllm._C  # noqa: F401
        except ImportError as e:
            logger.warning_once("Failed to import kernels %d: %r", {n}, e)
        data = [
1, 2, 3,
        ]
        return data
'''


@pytest.mark.slow
def test_a_file_of_megabytes_is_audited_in_pieces_with_every_finding(tmp_path: Path) -> None:
    """Its memory (a 50 MB file under 1 GiB) is bench/audit_size.py's to measure; here, that it is read whole."""
    count = 3_000_000 // len(UNIT) + 1
    (tmp_path / "big.py").write_text("".join(UNIT.replace("{n}", str(n)) for n in range(count)))
    command = [sys.executable, "-m", "warnonce_guard.cli", "audit", "big.py", "--format", "json"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    lines = sorted(finding["line"] for finding in report["findings"])
    assert lines == [14 + n * UNIT.count("\n") for n in range(count)]
    assert report["counts"]["files_parsed"] == 1
