"""Strict mode on each kind of cache of caches/caches.toml (issue 42), in stand-in modules shaped as the packages write
them: a function behind a front that makes a list a tuple (deepspeed's `log_dist_once`), a cached function stored on
a logger instance (deepspeed's `logger.warning_once`), a logger class whose `*_once` call a cached method (flashinfer's
JIT logger), a patch of `logging.Logger` (auto-round's), a set of keys (ray's `log_once`). Each refused value is
recorded at the right position and never kept by the cache; a configured entry found nowhere is said."""

from __future__ import annotations

import functools
import gc
import inspect
import logging
import sys
import textwrap
import types
import warnings
import weakref
from collections.abc import Callable, Iterator

import pytest
from warnonce_guard.caches.model import BY_KEY, DEFAULT_MODEL, Model, user_caches
from warnonce_guard.strict.calls import MARK, Violation
from warnonce_guard.strict.places import CHECKED, Places

pytest_plugins = ["pytester"]


class Boom(Exception):
    """An exception a weak reference can follow."""


def modules(monkeypatch: pytest.MonkeyPatch, dotted: str) -> types.ModuleType:
    """Stand-in modules for `dotted` and each package above it, in sys.modules for the test."""
    parts = dotted.split(".")
    for n in range(1, len(parts) + 1):
        monkeypatch.setitem(sys.modules, ".".join(parts[:n]), types.ModuleType(".".join(parts[:n])))
    return sys.modules[dotted]


@pytest.fixture
def strict() -> Iterator[tuple[Places, list[Violation]]]:
    recorded: list[Violation] = []
    places = Places(DEFAULT_MODEL, recorded.append)
    yield places, recorded
    places.undo()


def collected(make: Callable[[], Boom], use: Callable[[Boom], object]) -> bool:
    """Whether the exception `use` was given is gone once nothing else holds it."""
    exc = make()
    alive = weakref.ref(exc)
    use(exc)
    del exc
    gc.collect()
    return alive() is None


@pytest.mark.parametrize("row", ["deepspeed", "deepspeed-logger"])  # its function's row, or its logger's alone
def test_a_cached_function_stored_on_a_logger_instance_is_wrapped_there_without_a_phantom_self(
    monkeypatch: pytest.MonkeyPatch, row: str
) -> None:
    module = modules(monkeypatch, "deepspeed.utils.logging")
    logger = logging.Logger("DeepSpeed")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False

    @functools.lru_cache(None)
    def warning_once(*args: object, **kwargs: object) -> None:
        logger.warning(*args, **kwargs)  # type: ignore[arg-type]

    module.warning_once, module.logger = warning_once, logger  # type: ignore[attr-defined]
    logger.warning_once = warning_once  # type: ignore[attr-defined]  # deepspeed/utils/logging.py:76
    recorded: list[Violation] = []
    places = Places(Model((BY_KEY[row],)), recorded.append)
    places.patch()
    assert getattr(logger.warning_once, MARK)  # type: ignore[attr-defined]
    assert collected(lambda: Boom("b"), lambda e: logger.warning_once("failed: %s", e))  # type: ignore[attr-defined]
    assert [(v.position, v.offence) for v in recorded] == [("2 (args)", f"{__name__}.Boom")]
    assert warning_once.cache_info().currsize == 0
    places.undo()
    assert logger.warning_once is warning_once  # type: ignore[attr-defined]


def test_a_front_that_makes_a_list_a_tuple_takes_one_and_keeps_only_text_of_a_refused_message(
    monkeypatch: pytest.MonkeyPatch, strict: tuple[Places, list[Violation]]
) -> None:
    module = modules(monkeypatch, "deepspeed.utils.logging")
    seen: list[object] = []

    @functools.lru_cache(None)
    def _log_dist_once_cached(message: object, ranks_key: object, level: int) -> None:
        seen.append(message)

    def log_dist_once(message: object, ranks: list[int] | None = None, level: int = logging.INFO) -> None:
        _log_dist_once_cached(message, tuple(ranks) if ranks is not None else None, level)

    module.log_dist_once = log_dist_once  # type: ignore[attr-defined]
    places, recorded = strict
    places.patch()
    wrapped = module.log_dist_once  # type: ignore[attr-defined]
    wrapped("loaded", ranks=[0])
    assert recorded == [] and seen == ["loaded"]
    assert collected(lambda: Boom("b"), lambda e: wrapped(e, ranks=[0]))
    assert [(v.position, v.offence) for v in recorded] == [("1 (message)", f"{__name__}.Boom")]
    assert seen == ["loaded", "b"]  # logged once, as its text


def test_a_logger_class_whose_once_methods_call_a_cached_method_keeps_only_text(
    monkeypatch: pytest.MonkeyPatch, strict: tuple[Places, list[Violation]]
) -> None:
    module = modules(monkeypatch, "flashinfer.jit.core")
    source = textwrap.dedent(
        """\
        import functools, logging

        class FlashInferJITLogger(logging.Logger):
            def warning_once(self, msg, *args):
                self._print_once(self.warning, msg, *args)

            def info_once(self, msg, *args):
                self._print_once(self.info, msg, *args)

            def debug_once(self, msg, *args):
                self._print_once(self.debug, msg, *args)

            @functools.lru_cache(maxsize=None)
            def _print_once(self, log_method, msg, *args):
                log_method(msg, *args, stacklevel=3)

        logger = FlashInferJITLogger("flashinfer.jit")
        logger.propagate = False
        """
    )
    exec(compile(source, "flashinfer/jit/core.py", "exec"), module.__dict__)
    records: list[str] = []
    logger = module.logger  # type: ignore[attr-defined]
    logger.addHandler(type("H", (logging.Handler,), {"emit": lambda self, r: records.append(r.getMessage())})())
    places, recorded = strict
    places.patch()
    assert places.present["flashinfer"] == CHECKED
    for _ in range(2):
        assert collected(lambda: Boom("b"), lambda e: logger.warning_once("failed: %r", e))
    assert [(v.method, v.position) for v in recorded] == [("warning_once", "2 (args)")] * 2
    assert records == ["failed: Boom('b')"]  # once: the cache kept the rendered text
    logger.info_once("plain %s", "x")
    assert len(recorded) == 2 and records[-1] == "plain x"


def test_a_cache_patched_onto_logging_logger_is_checked_past_its_self(
    monkeypatch: pytest.MonkeyPatch, strict: tuple[Places, list[Violation]]
) -> None:
    @functools.cache
    def warning_once(self: logging.Logger, msg: object, *args: object) -> None:  # auto_round/logger.py:26-35
        self.warning(msg, *args)

    monkeypatch.setattr(logging.Logger, "warning_once", warning_once, raising=False)
    places, recorded = strict
    places.patch()
    logger = logging.Logger("auto_round.x")
    logger.addHandler(logging.NullHandler())
    assert collected(lambda: Boom("b"), lambda e: logger.warning_once("failed: %s", e))  # type: ignore[attr-defined]
    assert [v.position for v in recorded] == ["2 (args)"]
    assert warning_once.cache_info().currsize == 0


def test_a_set_of_keys_never_stores_a_refused_value(
    monkeypatch: pytest.MonkeyPatch, strict: tuple[Places, list[Violation]]
) -> None:
    module = modules(monkeypatch, "ray.util.debug")
    logged: set[object] = set()

    def log_once(key: object) -> bool:  # ray/util/debug.py:17-56
        if key not in logged:
            logged.add(key)
            return True
        return False

    module.log_once = log_once  # type: ignore[attr-defined]
    user = modules(monkeypatch, "ray.rllib.algorithm")
    user.log_once = log_once  # type: ignore[attr-defined]  # `from ray.util.debug import log_once`
    places, recorded = strict
    places.patch()
    assert user.log_once is module.log_once is not log_once  # type: ignore[attr-defined]
    first: list[object] = []
    assert collected(lambda: Boom("b"), lambda e: first.append(user.log_once(e)))  # type: ignore[attr-defined]
    assert first == [True] and logged == {"b"} and [v.position for v in recorded] == ["1 (key)"]
    assert user.log_once("b") is False  # type: ignore[attr-defined]  # the text stands for it: once still


def test_a_configured_logger_row_wraps_every_method_it_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    module = modules(monkeypatch, "my_plugin.log")

    class PluginLogger:
        @functools.lru_cache(None)  # noqa: B019 - the shape of the cache under test
        def notice_once(self, msg: object) -> None: ...

        @functools.lru_cache(None)  # noqa: B019
        def alert_once(self, msg: object) -> None: ...

    module.PluginLogger = PluginLogger  # type: ignore[attr-defined]
    (row,) = user_caches(
        [
            {
                "name": "my_plugin.log.PluginLogger.notice_once",
                "kind": "logger",
                "signature": "(msg)",
                "methods": ["notice_once", "alert_once"],
            }
        ],
        "pyproject.toml",
    )
    recorded: list[Violation] = []
    places = Places(DEFAULT_MODEL.with_rows([row]), recorded.append)
    places.patch()
    try:
        PluginLogger().alert_once(Boom("b"))
        assert [(v.method, v.position) for v in recorded] == [("alert_once", "1 (msg)")]
    finally:
        places.undo()


def test_a_configured_cache_found_nowhere_in_the_session_is_said(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(
        '[[tool.warnonce-guard.cache]]\nname = "my_plugin.log.never_once"\nkind = "function"\nsignature = "(msg)"\n'
    )
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("--warnonce-strict", "-p", "no:hypothesispytest", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "warnonce-strict: on, checking the *_once caches of my_plugin.log.never_once, *",
            "warnonce-strict: the configured cache my_plugin.log.never_once was found nowhere in this session "
            "(looked for my_plugin.log.never_once): nothing checked it; *",
        ]
    )


def test_a_set_of_messages_keeps_only_text_and_its_warnings_still_name_the_caller(
    monkeypatch: pytest.MonkeyPatch, strict: tuple[Places, list[Violation]]
) -> None:
    module = modules(monkeypatch, "lightning_utilities.core.rank_zero")

    class WarningCache(set):  # lightning_utilities/core/rank_zero.py:97-116, its warn 4 frames above warnings.warn
        def warn(self, message: object, stacklevel: int = 5, **kwargs: object) -> None:
            if message not in self:
                self.add(message)
                warnings.warn(str(message), stacklevel=stacklevel - 3)

    module.WarningCache = WarningCache  # type: ignore[attr-defined]
    places, recorded = strict
    places.patch()
    cache = WarningCache()
    exc = Boom("b")
    alive = weakref.ref(exc)
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        cache.warn(exc)
        line = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]
    del exc
    gc.collect()
    assert alive() is None and cache == {"b"} and [v.position for v in recorded] == ["1 (message)"]
    assert [(w.filename, w.lineno) for w in shown] == [(__file__, line)]
