"""A configured cache is audited as vLLM's is: a call of a configured logger's own `*_once` method, and a call of a
configured cached function, each shown as written."""

from __future__ import annotations

from warnonce_guard.audit.scan import findings_in_source
from warnonce_guard.caches.model import DEFAULT_MODEL, user_caches

ROWS = user_caches(
    [
        {"name": "my_plugin.log.warn_once", "kind": "function", "signature": "(msg, *args)"},
        {
            "name": "my_plugin.log.PluginLogger.notice_once",
            "kind": "logger",
            "signature": "(msg, *args)",
            "loggers": ["my_plugin.log.get_logger"],
        },
    ],
    "here",
)
SOURCE = """\
from my_plugin.log import get_logger, warn_once

logger = get_logger(__name__)


def f():
    try:
        pass
    except Exception as e:
        logger.notice_once("m %s", e)
        warn_once("m %s", e)
"""


def test_calls_of_a_configured_loggers_method_and_of_a_configured_function_are_findings_shown_as_written() -> None:
    found = findings_in_source(SOURCE, "m.py", "m", DEFAULT_MODEL.with_rows(list(ROWS)))
    assert [(f.argument, f.kind, f.call) for f in found] == [
        ("e", "exception", "logger.notice_once(...)"),
        ("e", "exception", "warn_once(...)"),
    ]


def test_a_partial_of_a_configured_loggers_method_is_a_finding_as_its_call_is() -> None:
    source = SOURCE.replace("import get_logger, warn_once", "import get_logger\nimport functools").replace(
        '        warn_once("m %s", e)\n', '        functools.partial(logger.notice_once, "m %s", e)()\n'
    )
    found = findings_in_source(source, "m.py", "m", DEFAULT_MODEL.with_rows(list(ROWS)))
    assert [(f.line, f.argument, f.call) for f in found] == [
        (11, "e", "logger.notice_once(...)"),
        (12, "e", "functools.partial(logger.notice_once, ...)"),
    ]
