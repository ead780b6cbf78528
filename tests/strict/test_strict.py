"""Strict mode (`pytest --warnonce-strict`): the `*_once` cache contract checked while the tests run.

Inner pytest sessions run in a subprocess against a fake `vllm` package shaped like the real
vllm/logger.py (tests/strict/strict_support.py), so the real vLLM is never imported here. The plugin in
other hosts' setups (xdist, threads, skips, vLLM's fixtures) is tests/strict/test_host.py; what passes is
tests/strict/test_contract.py.
"""

from __future__ import annotations

import functools
import gc
import importlib
import importlib.metadata
import inspect
import logging
import textwrap
import types
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest
from warnonce_guard.strict.calls import Violation, rendered, wrap
from warnonce_guard.strict.contract import offence

from tests.strict.strict_support import EAGER, FAKE_CONFTEST, LEAK, line_of, literal
from tests.toy import LOGGER_SOURCE, purge, unique_package, write

pytest_plugins = ["pytester"]


# --- the plugin in a session ----------------------------------------------------------------------


def test_live_exception_fails_the_test_naming_call_site_position_and_type(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_leak=LEAK)
    result = inner.runpytest_subprocess("--warnonce-strict")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*warnonce strict: 1 argument(s) to a *_once logger call would be kept alive by its lru_cache:",
            literal(f"  test_leak.py:{line_of(LEAK)}: logger.warning_once(...) argument 2 (args[0]) is ValueError: ")
            + "an exception keeps its traceback*",
            "Pass only str, int, float, bool, None, bytes (or tuples of them), enum members, module-level classes, "
            "functions and modules; format anything else first*",
            "FAILED test_leak.py::test_leak*",
        ]
    )


def test_eagerly_formatted_exception_passes(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_eager=EAGER)
    inner.runpytest_subprocess("--warnonce-strict").assert_outcomes(passed=1)


@pytest.mark.parametrize("args", [[], ["-p", "warnonce_guard.strict.plugin"]], ids=["entry-point", "dash-p"])
def test_plugin_is_off_unless_asked_for(inner: pytest.Pytester, args: list[str]) -> None:
    inner.makepyfile(test_leak=LEAK)
    result = inner.runpytest_subprocess(*args)
    result.assert_outcomes(passed=1)
    assert "warnonce-strict: on" not in result.stdout.str()  # the header line is there only when it is on


def test_ini_option_turns_it_on(inner: pytest.Pytester) -> None:
    inner.makeini("[pytest]\nwarnonce_strict = true\n")
    inner.makepyfile(test_leak=LEAK)
    inner.runpytest_subprocess().assert_outcomes(failed=1)


def test_what_lives_as_long_as_its_module_passes_what_can_carry_more_fails(inner: pytest.Pytester) -> None:
    source = """
        import enum
        import os

        import pytest
        from vllm.logger import init_logger

        logger = init_logger("vllm.inner")


        class CUDAGraphMode(enum.Enum):  # as vllm/config/compilation.py defines it, at module level
            NONE = 0
            FULL = 2


        class Config:
            def method(self):
                pass


        def helper():
            pass


        @pytest.mark.parametrize(
            "arg",
            [
                "s", 1, 2.5, True, None, b"b", ("t", (1, None)), frozenset({1, "f"}),
                CUDAGraphMode.FULL, CUDAGraphMode, helper, os, (CUDAGraphMode.NONE, Config),
            ],
            ids=[
                "str", "int", "float", "bool", "None", "bytes", "tuple", "frozenset",
                "enum-member", "class", "function", "module", "tuple-of-those",
            ],
        )
        def test_allowed(arg):
            logger.info_once("%s", arg)


        @pytest.mark.parametrize(
            "arg",
            [[1], {"k": 1}, object(), ("t", ValueError("v")), Config().method, ValueError("v")],
            ids=["list", "dict", "object", "tuple-holding-exception", "bound-method", "exception"],
        )
        def test_refused(arg):
            logger.error_once("%s", arg)  # CALL
        """
    inner.makepyfile(test_args=source)
    line = line_of(source)
    result = inner.runpytest_subprocess("--warnonce-strict", "-v")
    result.assert_outcomes(passed=13, failed=6)
    result.stdout.fnmatch_lines_random(
        [
            "*::test_allowed?tuple? PASSED*",
            "*::test_allowed?frozenset? PASSED*",
            "*::test_allowed?enum-member? PASSED*",
            *(
                literal(f"  test_args.py:{line}: logger.error_once(...) argument 2 (args[0]) is {what}: *")
                for what in ["list", "dict", "object", "tuple holding ValueError at [1]", "method", "ValueError"]
            ),
        ]
    )


def test_originals_are_restored_at_unconfigure(inner: pytest.Pytester) -> None:
    # vllm.logger is imported before configure (by the conftest); the cleanup runs after every unconfigure hook.
    inner.makeconftest(
        FAKE_CONFTEST
        + textwrap.dedent(
            """
            import pathlib

            import vllm.logger

            NAMES = ["_print_debug_once", "_print_info_once", "_print_warning_once", "_print_error_once"]
            ORIGINALS = {name: getattr(vllm.logger, name) for name in NAMES}


            def pytest_configure(config):
                def check():
                    restored = all(getattr(vllm.logger, name) is ORIGINALS[name] for name in NAMES)
                    pathlib.Path("restored.txt").write_text(str(restored))

                config.add_cleanup(check)
            """
        )
    )
    inner.makepyfile(
        test_wrapped="""
        import vllm.logger
        from conftest import NAMES, ORIGINALS


        def test_wrapped_during_the_session():
            assert all(getattr(vllm.logger, name) is not ORIGINALS[name] for name in NAMES)
        """
    )
    inner.runpytest_subprocess("--warnonce-strict").assert_outcomes(passed=1)
    assert inner.path.joinpath("restored.txt").read_text() == "True"


def test_vllm_imported_inside_a_test_is_checked_from_its_first_call(inner: pytest.Pytester) -> None:
    source = """
        def test_late_import():
            from vllm.logger import init_logger

            init_logger("vllm.inner").warning_once("x: %r", KeyError("k"))  # CALL
        """
    inner.makepyfile(test_late=source)
    result = inner.runpytest_subprocess("--warnonce-strict")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [literal(f"  test_late.py:{line_of(source)}: logger.warning_once(...) argument 2 (args[0]) is KeyError: *")]
    )


def test_cache_info_and_cache_clear_of_the_wrapper_are_the_real_cache(inner: pytest.Pytester) -> None:
    # The conftest keeps the real lru_cache (imported before configure); `__wrapped__` is the uncached function.
    inner.makeconftest(FAKE_CONFTEST + "import vllm.logger\n\nORIGINAL = vllm.logger._print_warning_once\n")
    inner.makepyfile(
        test_cache="""
        import vllm.logger
        from conftest import ORIGINAL
        from vllm.logger import init_logger


        def test_cache():
            printer = vllm.logger._print_warning_once
            assert printer.__warnonce_strict__
            printer.cache_clear()
            logger = init_logger("vllm.inner")
            logger.warning_once("same %s", "text")
            logger.warning_once("same %s", "text")
            assert printer.cache_info().hits == 1 and printer.cache_info().misses == 1
            assert printer is not ORIGINAL and printer.cache_info() == ORIGINAL.cache_info()
            printer.cache_clear()
            assert ORIGINAL.cache_info().currsize == 0
        """
    )
    inner.runpytest_subprocess("--warnonce-strict").assert_outcomes(passed=1)


def test_call_in_a_fixture_fails_its_setup(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_fixture="""
        import pytest
        from vllm.logger import init_logger


        @pytest.fixture
        def leaky():
            init_logger("vllm.inner").warning_once("x: %r", ValueError("v"))


        def test_uses_it(leaky):
            pass
        """
    )
    inner.runpytest_subprocess("--warnonce-strict").assert_outcomes(errors=1)


def test_call_outside_any_test_fails_the_session(inner: pytest.Pytester) -> None:
    inner.makeconftest(FAKE_CONFTEST + "import vllm.logger\n")
    inner.makepyfile(
        test_module_level="""
        from vllm.logger import init_logger

        init_logger("vllm.inner").warning_once("x: %r", ValueError("at collection"))


        def test_nothing():
            pass
        """
    )
    result = inner.runpytest_subprocess("--warnonce-strict")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*warnonce strict: 1 refused *_once argument(s)*",
            "outside any test:",
            "  test_module_level.py:3: logger.warning_once(...) argument 2 * is ValueError: *",
        ]
    )


# --- the pieces, in this process ------------------------------------------------------------------


def test_entry_point_registers_the_plugin_under_its_module_name() -> None:
    # Named after the module so that `-p warnonce_guard.strict.plugin` and the entry point register one plugin, not two.
    plugins = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="pytest11")}
    assert plugins.get("warnonce_guard.strict.plugin") == "warnonce_guard.strict.plugin"


def _stable_id(value: object) -> str:
    """repr, but a set's elements sorted: its order follows string hashing, which differs between xdist workers."""
    if isinstance(value, frozenset):
        return f"frozenset({sorted(map(repr, value))})"
    return repr(value)


@pytest.mark.parametrize(
    "value", ["s", 0, -1.5, False, None, b"", (), ("a", (1, (None,))), frozenset({"a", 2})], ids=_stable_id
)
def test_immutable_primitives_are_allowed(value: object) -> None:
    assert offence(value) is None


class Text(str):
    pass


class Boom(ValueError):
    """A Python subclass, so it takes weak references."""


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([], "list"),
        ({}, "dict"),
        (ValueError(), "ValueError"),
        (Text("subclass"), f"{__name__}.Text"),
        (("a", [1]), "tuple holding list at [1]"),
        (frozenset({("a", object())}), "frozenset holding tuple holding object at [1]"),
    ],
    ids=["list", "dict", "exception", "str-subclass", "tuple", "frozenset"],
)
def test_other_values_are_refused_with_their_type(value: object, expected: str) -> None:
    refusal = offence(value)
    assert refusal is not None and refusal.what == expected


def test_wrapper_records_the_violation_and_caches_the_repr_so_strict_mode_pins_nothing() -> None:
    @functools.lru_cache
    def _print_warning_once(logger: object, msg: str, *args: object) -> None:
        pass

    recorded: list[Violation] = []
    wrapped = wrap(_print_warning_once, recorded.append)
    exc = Boom("v")
    alive = weakref.ref(exc)
    wrapped("logger", "x: %r", exc)
    call_line = inspect.currentframe().f_lineno - 1
    del exc
    gc.collect()
    assert alive() is None
    assert wrapped.cache_info().currsize == 1
    [violation] = recorded
    assert (violation.method, violation.position, violation.offence) == (
        "warning_once",
        "2 (args[0])",
        f"{__name__}.Boom",
    )
    assert (violation.filename, violation.lineno) == (__file__, call_line)
    assert _print_warning_once.cache_info().currsize == 1  # the key holds the rendered message, a str


def test_wrapped_is_the_uncached_function_checked_too() -> None:
    calls: list[tuple[object, ...]] = []

    @functools.lru_cache
    def _print_info_once(logger: object, msg: str, *args: object) -> None:
        calls.append((msg, *args))

    recorded: list[Violation] = []
    wrapped = wrap(_print_info_once, recorded.append)
    uncached = wrapped.__wrapped__
    for _ in range(2):
        uncached("logger", "same %s", "text")
    uncached("logger", "x: %r", KeyError("k"))
    assert calls == [("same %s", "text"), ("same %s", "text"), ("x: KeyError('k')",)]
    assert _print_info_once.cache_info().currsize == 0  # the cache was not used
    assert [violation.offence for violation in recorded] == ["KeyError"]
    assert uncached.__wrapped__ is _print_info_once.__wrapped__  # inspect.unwrap ends where it did without strict


@pytest.fixture
def toy_logger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[types.ModuleType, list[Violation]]]:
    """A toy `vllm.logger` imported under a unique name, its printers wrapped as strict mode wraps them."""
    name = unique_package()
    write(tmp_path, f"{name}/__init__.py", "")
    write(tmp_path, f"{name}/logger.py", LOGGER_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(f"{name}.logger")
    recorded: list[Violation] = []
    for printer in ("_print_debug_once", "_print_info_once", "_print_warning_once", "_print_error_once"):
        monkeypatch.setattr(module, printer, wrap(getattr(module, printer), recorded.append))
    yield module, recorded
    purge(name)


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.mark.parametrize("method", ["debug_once", "info_once", "warning_once", "error_once"])
@pytest.mark.parametrize("arg", ["'text'", "ValueError('v')"], ids=["clean", "refused"])
def test_records_keep_the_callers_location_and_the_text_logging_would_have_shown(
    toy_logger: tuple[types.ModuleType, list[Violation]], method: str, arg: str
) -> None:
    module, recorded = toy_logger
    logger = module.init_logger(f"strict.{method}")
    logger.setLevel(logging.DEBUG)
    capture = Records()
    logger.addHandler(capture)
    value = eval(arg)
    getattr(logger, method)("x: %s, y: %r", value, value)
    line = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]

    (record,) = capture.records
    assert (record.pathname, record.lineno, record.funcName) == (__file__, line, inspect.stack()[0].function)
    assert record.getMessage() == f"x: {value!s}, y: {value!r}"  # %s renders str(), as without strict mode
    assert len(recorded) == (2 if arg != "'text'" else 0)


@pytest.mark.parametrize(
    "args",
    [
        ("plain",),
        ("x: %s, y: %r", ValueError("v"), ValueError("v")),
        ("x: %(error)s, y: %(error)r", {"error": ValueError("v")}),  # one mapping: the values by name
        ("a mapping shown whole: %s", {}),  # an empty one is a value
        ("%s and %s", ("a", "b")),  # a tuple is one value, as logging takes it
        ("too few %s %s", "a"),  # logging's own rendering would fail: every part stays visible
    ],
    ids=["no-values", "positional", "mapping", "empty-mapping", "one-tuple", "mismatch"],
)
def test_the_message_cached_in_place_of_refused_values_is_logging_s(args: tuple[object, ...]) -> None:
    record = logging.LogRecord("strict", logging.WARNING, __file__, 1, args[0], args[1:], None)
    try:
        expected = record.getMessage()
    except TypeError:
        expected = " ".join(repr(part) for part in args)
    assert rendered(args) == expected


def test_a_refused_call_is_still_logged_once_and_keeps_nothing_alive(
    toy_logger: tuple[types.ModuleType, list[Violation]],
) -> None:
    module, recorded = toy_logger
    logger = module.init_logger("strict.once")
    capture = Records()
    logger.addHandler(capture)
    exc = Boom("v")
    alive = weakref.ref(exc)
    for _ in range(2):
        logger.warning_once("failed: %r", exc)  # the same object twice: one key, one record
    del exc
    gc.collect()
    assert alive() is None and len(capture.records) == 1 and len(recorded) == 2
