"""Pragmas as ruff users expect them: `# noqa` read as ruff reads it, `# warnonce: ok[CODES] reason` per code, and a
pragma without a reason or accepting nothing is a finding itself."""

from __future__ import annotations

import pytest
from warnonce_guard.audit.scan import findings_in_source

HANDLER = "def f(x):\n    try:\n        pass\n    except Exception as e:\n"


def logged(call: str) -> str:
    return HANDLER + "".join(f"        {line}\n" for line in call.splitlines())


def codes(source: str) -> list[tuple[str, str | None]]:
    """(code, the reason of the pragma accepting it) of every finding."""
    return [(f.code, f.suppressed) for f in findings_in_source(source, "x.py")]


# What ruff does with each form on an F401 line (ruff check --select F401,RUF100, ruff 0.17): accepted or not.
@pytest.mark.parametrize(
    ("comment", "accepted"),
    [
        ("# noqa", True),
        ("# noqa: WOG001", True),
        ("# NOQA:WOG001", True),
        ("# noqa:WOG001,E501", True),
        ("# noqa: WOG001 E501", True),
        ("# noqa : WOG001", True),
        ("# noqa WOG002", True),  # no colon: a bare noqa
        ("# noqa - the reason", True),
        ("# type: ignore # noqa: WOG001 and words", True),
        ("# noqa: E501", False),
        ("# noqa: WOG00", False),  # codes are whole, not prefixes
        ("# noqa:", False),  # no code: ruff warns, and accepts nothing
        ("# noqa: wog001", False),
    ],
)
def test_noqa_is_read_as_ruff_reads_it(comment: str, accepted: bool) -> None:
    found = codes(logged(f'logger.warning_once("%s", e)  {comment}'))
    assert ("WOG001", None) not in found if accepted else ("WOG001", None) in found


def test_noqa_belongs_on_the_findings_line_and_the_pragma_on_any_line_of_the_call() -> None:
    spread = 'logger.warning_once(\n    "%s",\n    e,\n){}'
    assert codes(logged(spread.format("  # noqa: WOG001"))) == [("WOG001", None), ("WOG101", None)]
    assert codes(logged(spread.format("  # warnonce: ok re-raised"))) == [("WOG001", "re-raised")]


def test_the_pragma_accepts_the_codes_it_names_or_every_code() -> None:
    call = 'logger.warning_once("%s %s", e, x)  # warnonce: ok{} checked by hand'
    assert codes(logged(call.format("[WOG001]"))) == [("WOG001", "checked by hand"), ("WOG002", None)]
    both = [("WOG001", "checked by hand"), ("WOG002", "checked by hand")]
    assert codes(logged(call.format("[WOG001, WOG002]"))) == both
    assert codes(logged(call.format(""))) == both


def test_a_pragma_without_a_reason_accepts_nothing_and_is_a_finding() -> None:
    found = findings_in_source(logged('logger.warning_once("%s", e)  # warnonce: ok[WOG001]'), "x.py")
    assert [(f.code, f.line, f.column, f.argument) for f in found] == [
        ("WOG001", 5, 35, "e"),
        ("WOG100", 5, 39, "`# warnonce: ok[WOG001]`"),
    ]


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        ('logger.warning_once("%s", repr(e))  # warnonce: ok formatted', "`# warnonce: ok formatted`"),
        ('logger.warning_once("%s", e)  # warnonce: ok[WOG002] no', "`# warnonce: ok[WOG002] no`"),
        ('logger.warning_once("%s", e)  # noqa: WOG001, WOG002', "WOG002 of `# noqa: WOG001, WOG002`"),
        ('logger.info_once("%s", x)  # noqa: WOG002, WOG999', "WOG999 (an unknown code) of `# noqa: WOG002, WOG999`"),
        ("x = 1  # warnonce: ok not a call", "`# warnonce: ok not a call`"),
    ],
)
def test_a_pragma_that_accepts_nothing_is_a_finding(call: str, argument: str) -> None:
    unused = [f.argument for f in findings_in_source(logged(call), "x.py") if f.code == "WOG101"]
    assert unused == [argument]


def test_what_belongs_to_other_linters_is_never_reported() -> None:
    source = logged('logger.warning_once("%s", repr(e))  # noqa\nx = 1  # noqa: E501\ny = 2  # noqa: F401, WOG')
    assert codes(source) == []


def test_a_pragmas_text_inside_a_string_is_not_a_pragma() -> None:
    assert codes(logged('logger.warning_once("# noqa %s", e)')) == [("WOG001", None)]
    assert codes('"""Write `# warnonce: ok <reason>` on the call."""\n') == []  # a file without calls: tokenized
    assert codes("x = 1  # warnonce: ok stray\n") == [("WOG101", None)]


def test_a_pragma_on_an_earlier_line_does_not_accept_a_later_calls_finding() -> None:
    source = logged('x = 1  # warnonce: ok[WOG001] not this call\nlogger.warning_once("%s", e)  # noqa: WOG002')
    source += logged('y = 2  # noqa: WOG001\nlogger.warning_once("%s", e)')
    assert codes(source) == [("WOG101", None), ("WOG001", None), ("WOG101", None), ("WOG101", None), ("WOG001", None)]


@pytest.mark.parametrize("before", ["x = 1", 'x = "é"'], ids=["ascii", "non-ascii before it"])
def test_a_pragma_finding_spans_the_pragma_in_bytes_as_every_finding_does(before: str) -> None:
    (finding,) = findings_in_source(f"{before}  # warnonce: ok\n", "x.py")
    start = len(f"{before}  ".encode()) + 1
    assert (finding.line, finding.column, finding.end_line) == (1, start, 1)
    assert finding.end_column == start + len("# warnonce: ok")


@pytest.mark.parametrize("comment", ["", "  # a comment of its own"])
def test_a_pragma_on_the_line_after_a_call_does_not_accept_it(comment: str) -> None:
    source = logged(f'logger.warning_once("%s", e){comment}\nx = 1  # warnonce: ok[WOG001] not this call')
    assert codes(source) == [("WOG001", None), ("WOG101", None)]


def test_a_pragma_right_after_a_string_is_a_pragma() -> None:
    source = logged('logger.warning_once(\n    "%s"# warnonce: ok[WOG001] formatted below\n    , e)')
    assert codes(source) == [("WOG001", "formatted below")]


def test_a_pragma_finding_is_keyed_by_its_function_and_shows_the_pragma_stripped() -> None:
    source = logged('logger.warning_once("%s", e)  # warnonce: ok[WOG002] not this one   ')
    source += logged('logger.warning_once("%s", e)  # noqa: WOG001, WOG002')
    found = findings_in_source(source, "x.py")
    unused = [f for f in found if f.code == "WOG101"]
    assert [(f.key, f.level, f.end_column - f.column) for f in unused] == [
        ("x.py::f::::`# warnonce: ok[WOG002] not this one`#0", "", len("# warnonce: ok[WOG002] not this one")),
        ("x.py::f::::WOG002 of `# noqa: WOG001, WOG002`#0", "", len("# noqa: WOG001, WOG002")),
    ]
    accepted = [f.suppressed for f in found if f.code == "WOG001"]
    assert accepted == [None, "noqa: WOG001, WOG002"]
