"""An argument after a `*` unpacking has no known position: it may land on any parameter, so a parameter the cache
holds anyway (`held`) does not excuse it, where the same argument at its own position is excused."""

from __future__ import annotations

from warnonce_guard.audit.scan import findings_in_source
from warnonce_guard.caches.model import DEFAULT_MODEL, user_caches

(ROW,) = user_caches(
    [{"name": "my_plugin.log.warn_once", "kind": "function", "signature": "(msg, logger)", "held": ["logger"]}], "here"
)
MODEL = DEFAULT_MODEL.with_rows([ROW])
SOURCE = """\
from my_plugin.log import warn_once


def f(parts, logger):
    try:
        pass
    except Exception as e:
        warn_once({arguments})
"""


def _found(arguments: str) -> list[tuple[str, str]]:
    source = SOURCE.format(arguments=arguments)
    return [(f.argument, f.kind) for f in findings_in_source(source, "m.py", "m", MODEL) if f.argument != "msg"]


def test_an_argument_after_an_unpacking_may_land_anywhere_and_at_its_own_position_is_where_it_is() -> None:
    assert _found("'m', e") == []  # `e` is the logger: held anyway, for as long as the process lives
    assert ("e", "exception") in _found("*parts, e")  # `e` may be the message: kept
    assert ("e", "exception") in _found("*parts, 'm', e")
