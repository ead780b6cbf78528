"""A keyword that makes a `*_once` call raise is a finding, and the call's other arguments are judged as if it were
dropped; a keyword given by position too is one only when the positions are known (no `*` unpacking before it)."""

from __future__ import annotations

import pytest
from warnonce_guard.audit.scan import findings_in_source

SOURCE = """\
from vllm.logger import init_logger

logger = init_logger(__name__)


def f(parts):
    try:
        pass
    except Exception as e:
        {call}
"""


@pytest.mark.parametrize(
    ("call", "found"),
    [
        ('logger.warning_once("m %s", e, stacklevel=2)', [("e", "exception"), ("stacklevel=2", "keyword")]),
        ('logger.warning_once("m", msg="x")', [("msg='x'", "keyword")]),  # the message twice: TypeError
        ('logger.warning_once(*parts, msg="x")', [("*parts", "starred")]),  # parts may be empty: it may not raise
    ],
)
def test_a_keyword_the_call_refuses_is_found_beside_what_the_call_would_keep_without_it(
    call: str, found: list[tuple[str, str]]
) -> None:
    findings = findings_in_source(SOURCE.format(call=call), "m.py", "m")
    assert [(f.argument, f.kind) for f in findings] == found
