"""A keyword that makes a `*_once` call raise is a finding, and the call's other arguments are judged as if it were
dropped; a keyword given by position too is one only when the positions are known (no `*` unpacking before it)."""

from __future__ import annotations

import pytest
from warnonce_guard.audit.scan import findings_in_source
from warnonce_guard.caches.model import DEFAULT_MODEL, user_caches

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


def refusal(call: str, logger: str = "logger = init_logger(__name__)") -> str:
    """What the one finding of `call` says refuses its keyword (the finding's `cache`, in its message)."""
    source = SOURCE.replace("logger = init_logger(__name__)", logger).format(call=call)
    (finding,) = [f for f in findings_in_source(source, "m.py", "m") if f.kind == "keyword"]
    assert finding.cache is not None and finding.cache in finding.message
    return finding.cache


VLLMS = "vllm.logger's: (msg, *args, scope='local')"
TRANSFORMERS = "transformers.utils.logging's: (msg, *args, exc_info=None, extra=None, stack_info=False, stacklevel=1)"
EITHER = (
    "from transformers.utils.logging import get_logger\nlogger = init_logger(__name__) if x else get_logger(__name__)"
)


def test_a_refused_keyword_names_the_one_known_call_or_every_call_it_may_be_with_their_signatures() -> None:
    assert refusal('logger.warning_once("m", colour="red")') == (
        "vllm.logger's warning_once does not take (it takes (msg, *args, scope='local'))"
    )
    # a logger followed to either of two: none of those calls takes it, each signature shown
    assert refusal('logger.warning_once("m", colour="red")', EITHER) == (
        f"none of the calls it may be takes it ({VLLMS}; {TRANSFORMERS})"
    )
    # not followed: every logger with the method, even when only one (vLLM's) has it
    assert refusal('somebody.error_once("m", colour="red")') == (
        f"no logger's call it may be (the logger is not known here) takes it ({VLLMS})"
    )
    assert refusal('somebody.warning_once("m", colour="red")').startswith(
        f"no logger's call it may be (the logger is not known here) takes it ({VLLMS}; {TRANSFORMERS}; accelerate"
    )


def test_a_keyword_one_call_gets_twice_is_kept_by_the_calls_that_take_it_once() -> None:
    """Neither call takes both keywords: `level` is reported as raising, and `msg=e` (given twice to the first call,
    a keyword of its own to the second) is kept by the second alone."""
    first, second = user_caches(
        [
            {
                "name": "p.a.A.note_once",
                "kind": "logger",
                "signature": "(msg, *args, level=0)",
                "loggers": ["p.a.get"],
                "home": "p.a",
            },
            {
                "name": "p.b.B.note_once",
                "kind": "logger",
                "signature": "(text, *args, msg=None)",
                "loggers": ["p.b.get"],
                "home": "p.b",
            },
        ],
        "here",
    )
    model = DEFAULT_MODEL.with_rows([first, second])
    source = SOURCE.format(call='logger.note_once("m", level=e, msg=e)').replace(
        "from vllm.logger import init_logger\n\nlogger = init_logger(__name__)",
        "from p.a import get as a\nfrom p.b import get as b\n\nlogger = a(__name__) if x else b(__name__)",
    )
    found = findings_in_source(source, "m.py", "m", model)
    assert [(f.argument, f.code, f.cache) for f in found] == [
        ("level=e", "WOG011", "none of the calls it may be takes it with the call's other keywords "
         "(p.a's: (msg, *args, level=0); p.b's: (text, *args, msg=None))"),
        ("msg=e", "WOG001", second.describe()),
    ]  # fmt: skip
