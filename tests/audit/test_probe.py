"""The audit on every call form of issue 36's Why (`probe_once_forms.py`): each live line fails with its code, each
valid line does not, and a live exception given to a cache that renders first is noted without failing."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest
from warnonce_guard.audit.scan import findings_in_source
from warnonce_guard.cli.main import main
from warnonce_guard.common.errors import ExitCode

PROBE = Path(__file__).with_name("probe_once_forms.py")
_MARK = re.compile(r"#\s*(LIVE|VALID|NOTED)\b\s*(WOG\d{3})?")


def marked() -> dict[int, tuple[str, str | None]]:
    """Each marked line of the probe: (what it is, the code it must have)."""
    lines = PROBE.read_text(encoding="utf-8").splitlines()
    return {n: (m[1], m[2]) for n, line in enumerate(lines, 1) if (m := _MARK.search(line))}


@pytest.fixture(scope="module")
def findings() -> list[dict[str, object]]:
    """The probe's findings as the JSON writer gives them (every one, `fails` saying which fail by default)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["audit", str(PROBE), "--format", "json"])
    assert code == ExitCode.CHECK_FAILED
    return json.loads(out.getvalue())["findings"]


def test_the_probe_marks_every_form_of_the_issue() -> None:
    kinds = [kind for kind, _ in marked().values()]
    assert kinds.count("LIVE") == 10 and kinds.count("VALID") == 9 and kinds.count("NOTED") == 1


def test_each_live_line_fails_with_its_code_and_names_its_cache(findings: list[dict[str, object]]) -> None:
    for line, (kind, code) in marked().items():
        here = [f for f in findings if f["line"] == line]
        if kind == "LIVE":
            assert [(f["code"], f["fails"]) for f in here] == [(code, True)], line
            assert here[0]["cache"], line


def test_no_valid_line_fails_and_a_rendered_one_is_only_noted(findings: list[dict[str, object]]) -> None:
    for line, (kind, code) in marked().items():
        here = [f for f in findings if f["line"] == line]
        if kind == "VALID":
            assert [f for f in here if f["fails"]] == [], line
        elif kind == "NOTED":
            assert [(f["code"], f["fails"]) for f in here] == [(code, False)], line


def test_nothing_else_of_the_probe_fails(findings: list[dict[str, object]]) -> None:
    assert {f["line"] for f in findings if f["fails"]} == {n for n, (kind, _) in marked().items() if kind == "LIVE"}


def test_each_message_names_the_cache_the_call_reaches(findings: list[dict[str, object]]) -> None:
    by_argument = {(f["line"], f["argument"]): str(f["cache"]) for f in findings}
    expected = {
        "exc_info=e": "transformers' patched Logger.warning_once/info_once lru_cache",
        "self": "transformers' patched Logger.warning_once/info_once lru_cache (transformers.utils.logging, unbounded)",
    }
    for (_, argument), cache in by_argument.items():
        if argument in expected:
            assert cache.startswith(expected[argument])
    (exc_info,) = [f for f in findings_in_source(PROBE.read_text(), "probe.py") if f.argument == "exc_info=e"]
    assert exc_info.fix is None  # nothing --fix can format: the hint says what to pass instead
    assert exc_info.message.endswith(
        "(for exc_info: pass exc_info=True inside the handler, logging finds the exception, the cache keeps True)"
    )
    caches = set(by_argument.values())
    for label in ("optimum's warn_once", "torchtune's log_once", "sglang's print_warning_once", "_report_once's"):
        assert any(cache.startswith(label) for cache in caches), label
