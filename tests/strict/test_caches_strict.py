"""Strict mode in every cache of the model, not only vLLM's: transformers' patched `Logger.warning_once` shaped
stand-ins in this process, cached functions and their re-exports, the configured caches, a vLLM logger that renders
first, and what the header and the summary say."""

from __future__ import annotations

import functools
import gc
import inspect
import logging
import sys
import textwrap
import types
import weakref
from collections.abc import Iterator

import pytest
from warnonce_guard.caches.model import BY_KEY, DEFAULT_MODEL, user_caches
from warnonce_guard.strict.calls import MARK, Violation, wrap_cache
from warnonce_guard.strict.places import CHECKED, RENDERS_FIRST, Places, resolve

from tests.rule.test_caches import _PRINTERS, INLINE
from tests.strict.strict_support import LEAK, line_of, literal
from tests.toy import LOGGER_SOURCE

pytest_plugins = ["pytester"]


class Boom(Exception):
    """An exception a weak reference can follow (a built-in one takes none)."""


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def patched_logger_class() -> Iterator[tuple[type[logging.Logger], list[Violation]]]:
    """A logging.Logger subclass given transformers' `warning_once` (an lru_cache'd function assigned to the class),
    wrapped as strict mode wraps transformers' own."""

    class PatchedLogger(logging.Logger):
        pass

    @functools.lru_cache(None)
    def warning_once(self: logging.Logger, *args: object, **kwargs: object) -> None:
        self.warning(*args, **kwargs)  # type: ignore[arg-type]

    recorded: list[Violation] = []
    PatchedLogger.warning_once = wrap_cache(  # type: ignore[attr-defined]
        warning_once, BY_KEY["transformers"], "warning_once", recorded.append
    )
    yield PatchedLogger, recorded
    warning_once.cache_clear()


def a_logger(cls: type[logging.Logger], name: str) -> tuple[logging.Logger, Records]:
    logger = cls(name)
    capture = Records()
    logger.addHandler(capture)
    logger.propagate = False
    return logger, capture


def test_a_refused_argument_is_recorded_logged_once_by_the_uncached_function_and_kept_nowhere(
    patched_logger_class: tuple[type[logging.Logger], list[Violation]],
) -> None:
    cls, recorded = patched_logger_class
    logger, capture = a_logger(cls, "strict.transformers")
    exc = Boom("v")
    alive = weakref.ref(exc)
    for _ in range(2):
        logger.warning_once("failed", exc_info=exc)  # type: ignore[attr-defined]
    line = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]
    assert len(capture.records) == 1 and capture.records[0].exc_info is not None  # still logs its traceback
    del exc
    capture.records.clear()  # the record itself holds the exception: the handler's, not the cache's
    gc.collect()
    assert alive() is None
    assert [(v.position, v.offence, v.lineno, v.call) for v in recorded] == [
        ("'exc_info'", f"{__name__}.Boom", line, "logger.warning_once(...)"),
    ] * 2


def test_an_accepted_call_reaches_the_cache_as_it_was_made(
    patched_logger_class: tuple[type[logging.Logger], list[Violation]],
) -> None:
    cls, recorded = patched_logger_class
    logger, capture = a_logger(cls, "strict.accepted")
    for _ in range(3):
        logger.warning_once("loaded %s in %d s", "model", 3, stacklevel=1)  # type: ignore[attr-defined]
    assert recorded == [] and [r.getMessage() for r in capture.records] == ["loaded model in 3 s"]
    assert cls.warning_once.cache_info().currsize == 1 and getattr(cls.warning_once, MARK)  # type: ignore[attr-defined]


def test_a_stacklevel_past_the_cache_still_names_the_caller(
    patched_logger_class: tuple[type[logging.Logger], list[Violation]],
) -> None:
    cls, _ = patched_logger_class
    logger, capture = a_logger(cls, "strict.stacklevel")

    def helper() -> int:
        logger.warning_once("named by the line that calls warning_once", stacklevel=2)  # type: ignore[attr-defined]
        return inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]

    line = helper()  # stacklevel=2 names the call, past transformers' warning_once (and the wrapper before it)
    (record,) = capture.records
    assert (record.pathname, record.lineno, record.funcName) == (__file__, line, "helper")


def test_a_cached_functions_held_logger_is_not_checked_and_its_message_is() -> None:
    @functools.lru_cache(None)
    def log_once(logger: logging.Logger, msg: str, level: int = logging.INFO) -> None:
        logger.log(level, msg)

    recorded: list[Violation] = []
    checked = wrap_cache(log_once, BY_KEY["torchtune"], "log_once", recorded.append)
    logger, capture = a_logger(logging.Logger, "strict.torchtune")
    checked(logger, "plain", logging.WARNING)
    checked(logger, KeyError("k"), level=logging.WARNING)
    assert [(v.position, v.offence, v.call) for v in recorded] == [("2 (msg)", "KeyError", "log_once(...)")]
    assert [r.getMessage() for r in capture.records] == ["plain", "'k'"]
    assert log_once.cache_info().currsize == 1  # the refused call never reached it


# ---- where strict mode finds the caches -----------------------------------------------------------------------------


@pytest.fixture
def fake_modules(monkeypatch: pytest.MonkeyPatch) -> dict[str, types.ModuleType]:
    """optimum's `warn_once` defined in a stand-in `optimum.utils.logging`, and held by another module by its name."""
    made: dict[str, types.ModuleType] = {}
    for name in ("optimum", "optimum.utils", "optimum.utils.logging", "a_user_module"):
        module = types.ModuleType(name)
        monkeypatch.setitem(sys.modules, name, module)
        made[name] = module

    @functools.lru_cache(None)
    def warn_once(logger: logging.Logger, msg: str) -> None:
        logger.warning(msg)

    made["optimum.utils.logging"].warn_once = warn_once  # type: ignore[attr-defined]
    made["a_user_module"].warn_once = warn_once  # type: ignore[attr-defined]  # `from optimum... import warn_once`
    made["a_user_module"].kept = warn_once  # type: ignore[attr-defined]  # under another name: a reference kept
    return made


def test_a_cached_function_is_wrapped_where_it_lives_and_where_it_was_imported_by_name(
    fake_modules: dict[str, types.ModuleType],
) -> None:
    original = fake_modules["optimum.utils.logging"].warn_once  # type: ignore[attr-defined]
    places = Places(DEFAULT_MODEL, lambda violation: None)
    places.patch()
    try:
        assert places.present == {"optimum": CHECKED}
        wrapped = fake_modules["optimum.utils.logging"].warn_once  # type: ignore[attr-defined]
        assert getattr(wrapped, MARK) and fake_modules["a_user_module"].warn_once is wrapped  # type: ignore[attr-defined]
        assert fake_modules["a_user_module"].kept is original  # type: ignore[attr-defined]
        places.patch()  # again (each test's setup): nothing wrapped twice
        assert fake_modules["optimum.utils.logging"].warn_once is wrapped  # type: ignore[attr-defined]
    finally:
        places.undo()
    assert fake_modules["optimum.utils.logging"].warn_once is original  # type: ignore[attr-defined]
    assert fake_modules["a_user_module"].warn_once is original  # type: ignore[attr-defined]


def test_the_search_for_a_cached_function_runs_no_code_of_what_modules_hold(
    fake_modules: dict[str, types.ModuleType],
) -> None:
    class Deprecated:  # torch.distributed.reduce_op: reading its __class__ warns (an error under -W error)
        @property
        def __class__(self) -> type:  # type: ignore[override]
            pytest.fail("the search read an object's __class__")

    fake_modules["a_user_module"].reduce_op = Deprecated()  # type: ignore[attr-defined]
    places = Places(DEFAULT_MODEL, lambda violation: None)
    places.patch()
    try:
        assert getattr(fake_modules["a_user_module"].warn_once, MARK)  # type: ignore[attr-defined]
    finally:
        places.undo()


def test_a_place_is_read_without_importing_or_running_a_modules_getattr(monkeypatch: pytest.MonkeyPatch) -> None:
    lazy = types.ModuleType("lazy_pkg")
    lazy.__getattr__ = lambda name: pytest.fail(f"__getattr__({name!r}) ran")  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "lazy_pkg", lazy)
    assert resolve("lazy_pkg:warn_once") is None
    assert resolve("not_imported_at_all.logging:warn_once") is None
    assert resolve("lazy_pkg.sub.warn_once") is None  # a dotted name: the longest imported prefix, then its namespace
    assert resolve("logging:Logger.warning_once") is None or "transformers" in sys.modules


def test_a_vllm_logger_that_renders_first_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("vllm.logger")
    source = LOGGER_SOURCE.replace(_PRINTERS, INLINE)
    exec(compile(source, "<patched vllm/logger.py>", "exec"), module.__dict__)
    monkeypatch.setitem(sys.modules, "vllm.logger", module)
    monkeypatch.setattr(inspect, "getsource", lambda obj: source if obj is module else inspect.getsource(obj))
    places = Places(DEFAULT_MODEL, lambda violation: None)
    places.patch()
    assert places.present == {"vllm": RENDERS_FIRST} and places.patches == []


# ---- in a session ---------------------------------------------------------------------------------------------------


def test_a_configured_cache_is_checked_where_it_is_imported_by_name(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml(
        textwrap.dedent(
            """\
            [[tool.warnonce-guard.cache]]
            name = "my_plugin.log.remember_once"
            kind = "function"
            signature = "(logger, msg)"
            held = ["logger"]
            """
        )
    )
    pytester.mkpydir("my_plugin").joinpath("log.py").write_text(
        "import functools\n\n\n@functools.lru_cache(None)\ndef remember_once(logger, msg):\n    logger.warning(msg)\n"
    )
    pytester.makeconftest("from my_plugin.log import remember_once  # imported before strict mode is on\n")
    source = """
        import logging

        from my_plugin.log import remember_once


        def test_leak():
            remember_once(logging.getLogger("x"), ValueError("v"))  # CALL
        """
    pytester.makepyfile(test_leak=source)
    result = pytester.runpytest_subprocess("--warnonce-strict", "-p", "no:hypothesispytest")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "warnonce-strict: on, checking the *_once caches of my_plugin.log.remember_once, vllm.logger, *",
            literal(f"  test_leak.py:{line_of(source)}: remember_once(...) argument 2 (msg) is ValueError: ") + "*",
            "warnonce-strict: checked my_plugin.log.remember_once",
        ]
    )


def test_a_bad_configured_cache_stops_the_session_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[[tool.warnonce-guard.cache]]\nname = "x.f_once"\nkind = "function"\n')
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("--warnonce-strict", "-p", "no:hypothesispytest")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "a cache entry needs signature" in result.stderr.str()


def test_with_a_vllm_logger_that_renders_first_a_live_exception_passes(inner: pytest.Pytester) -> None:
    inner.path.joinpath("vllm", "logger.py").write_text(LOGGER_SOURCE.replace(_PRINTERS, INLINE))
    inner.makepyfile(test_leak=LEAK)
    result = inner.runpytest_subprocess("--warnonce-strict")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"warnonce-strict: checked vllm.logger ({RENDERS_FIRST})"])


def test_a_configured_row_is_known_by_name_to_the_model() -> None:
    (row,) = user_caches([{"name": "a.b.c_once", "kind": "function", "signature": "(msg)"}], "here")
    assert DEFAULT_MODEL.with_rows([row]).named("a.b.c_once") is row
