"""Strict mode inside a host's test suite: xdist, skip/xfail, threads, fixtures that swap the printers, pytest's
own options (no cache, importlib mode, no plugin autoloading), and what it says (header, summary)."""

from __future__ import annotations

import textwrap

import pytest

from tests.strict.strict_support import EAGER, FAKE_CONFTEST, INNER_ADDOPTS, LEAK, line_of, literal

pytest_plugins = ["pytester"]

HEADER = "warnonce-strict: on, checking the *_once caches of vllm.logger, transformers.utils.logging, *"


def refused(path: str, line: int, what: str = "ValueError") -> str:
    """The pattern of one violation line as the failure and the summary show it."""
    return literal(f"  {path}:{line}: logger.warning_once(...) argument 2 (args[0]) is {what}: ") + "*"


# --- pytest-xdist ---------------------------------------------------------------------------------


@pytest.mark.slow  # two workers start: 3-5 s on this machine
def test_under_xdist_a_violation_fails_its_test_and_the_run_and_the_controller_lists_it(
    inner: pytest.Pytester,
) -> None:
    inner.makepyfile(test_leak=LEAK, test_eager=EAGER)
    result = inner.runpytest_subprocess("--warnonce-strict", "-n", "2")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*= warnonce strict: 1 refused *_once argument(s) =*",
            "test_leak.py::test_leak (call):",
            refused("test_leak.py", line_of(LEAK)),
        ]
    )


IMPORT_LEAK = """
from vllm.logger import init_logger

init_logger("vllm.inner").warning_once("x: %r", ValueError("at import"))  # CALL


def test_nothing():
    pass
"""


@pytest.mark.slow  # two workers start: 3-5 s on this machine
def test_under_xdist_a_violation_at_import_in_the_workers_fails_the_run_listed_once(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_module_level=IMPORT_LEAK, test_eager=EAGER)
    result = inner.runpytest_subprocess("--warnonce-strict", "-n", "2")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*= warnonce strict: 1 refused *_once argument(s) =*", "outside any test:"])
    assert result.stdout.str().count("test_module_level.py:3: logger.warning_once") == 1  # both workers import it


# --- skip and xfail after a violation --------------------------------------------------------------

AFTER_A_VIOLATION = """
import pytest
from vllm.logger import init_logger

logger = init_logger("vllm.inner")


def test_skips():
    logger.warning_once("x: %r", ValueError("v"))  # CALL
    pytest.skip("not on this platform")


@pytest.mark.xfail(reason="known bug")
def test_xfails():
    logger.warning_once("x: %r", ValueError("v"))
    raise AssertionError("the known bug")


@pytest.mark.xfail(reason="known bug")
def test_xpasses():
    logger.warning_once("x: %r", ValueError("v"))


@pytest.fixture
def skipping():
    logger.warning_once("x: %r", ValueError("v"))
    pytest.skip("no device")


def test_skipped_in_setup(skipping):
    pass
"""


def test_a_skip_or_xfail_after_a_violation_is_reported_not_swallowed(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_after=AFTER_A_VIOLATION)
    result = inner.runpytest_subprocess("--warnonce-strict", "-rA")
    result.assert_outcomes(failed=3, errors=1)
    result.stdout.fnmatch_lines_random(
        [
            refused("test_after.py", line_of(AFTER_A_VIOLATION)),
            "*the test then skipped: Skipped: not on this platform*",
            "*the test is marked xfail (known bug)*",
            "FAILED test_after.py::test_skips*",
            "FAILED test_after.py::test_xfails*",
            "FAILED test_after.py::test_xpasses*",
            "ERROR test_after.py::test_skipped_in_setup*",
        ]
    )


# --- threads --------------------------------------------------------------------------------------

THREADS = """
import threading

from vllm.logger import init_logger

logger = init_logger("vllm.inner")
go = threading.Event()
late = []


def leak():
    logger.warning_once("x: %r", ValueError("v"))  # CALL


def leak_when_told():
    go.wait(30)
    leak()


def test_joins_its_thread():
    thread = threading.Thread(target=leak, name="joined")
    thread.start()
    thread.join()


def test_leaves_a_thread_behind():
    thread = threading.Thread(target=leak_when_told, name="late")
    thread.start()
    late.append(thread)


def test_innocent():
    go.set()  # the late thread's call happens now, while this test runs
    late[0].join(30)
"""


def test_a_thread_is_charged_to_the_test_that_started_it_or_reported_at_the_end_never_to_a_later_test(
    inner: pytest.Pytester,
) -> None:
    inner.makepyfile(test_threads=THREADS)
    result = inner.runpytest_subprocess("--warnonce-strict", "-v")
    result.assert_outcomes(passed=2, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    line = line_of(THREADS)
    result.stdout.fnmatch_lines_random(
        [
            "*::test_joins_its_thread FAILED*",
            "*::test_leaves_a_thread_behind PASSED*",
            "*::test_innocent PASSED*",
            "outside any test:",
            refused("test_threads.py", line)[:-1]
            + "*(in thread 'late', started by test_threads.py::test_leaves_a_thread_behind, after it ended)",
        ]
    )


# --- fixtures that replace the printers: vLLM's disable_log_dedup ---------------------------------

# Copied from vLLM 0.33.0, tests/conftest.py, lines 1879-1899 (the sdist vllm-0.33.0.tar.gz, sha256
# f4c33c2503d52bb411146afa9618a4f48bed68912f617e6803ac8d76e4c74112), unchanged.
DISABLE_LOG_DEDUP = '''
@pytest.fixture(scope="function")
def disable_log_dedup(monkeypatch):
    """
    Disable log deduplication such that warning_once and info_once always print.
    """

    # Patch logger._print_warning_once to remove the lru_cache decorator
    from vllm import logger

    original_print_warning_once = logger._print_warning_once
    original_print_info_once = logger._print_info_once
    original_print_debug_once = logger._print_debug_once

    logger._print_warning_once = original_print_warning_once.__wrapped__
    logger._print_info_once = original_print_info_once.__wrapped__
    logger._print_debug_once = original_print_debug_once.__wrapped__

    yield
    logger._print_warning_once = original_print_warning_once
    logger._print_info_once = original_print_info_once
    logger._print_debug_once = original_print_debug_once
'''

DEDUP_TESTS = """
import logging

from vllm.logger import init_logger

logger = init_logger("vllm.inner")
KW = {}


class Count(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = 0

    def emit(self, record):
        self.records += 1


def printed(method, text):
    count = Count()
    logger.addHandler(count)
    logger.setLevel(logging.DEBUG)
    try:
        for _ in range(2):
            getattr(logger, method)(text, method, **KW)
    finally:
        logger.removeHandler(count)
    return count.records


def test_deduplicated_before():
    assert [printed(m, "before %s") for m in ("warning_once", "info_once", "debug_once")] == [1, 1, 1]


def test_every_call_prints_inside_the_fixture(disable_log_dedup):
    assert [printed(m, "inside %s") for m in ("warning_once", "info_once", "debug_once")] == [2, 2, 2]


def test_strict_checking_stays_on_inside_the_fixture(disable_log_dedup):
    logger.warning_once("x: %r", ValueError("v"), **KW)  # CALL


def test_deduplicated_again_after():
    assert [printed(m, "after %s") for m in ("warning_once", "info_once", "debug_once")] == [1, 1, 1]
"""


def dedup_suite(pytester: pytest.Pytester, conftest_head: str, kw: str = "{}") -> None:
    """The four tests above, with vLLM's fixture in the conftest; `kw` is what each `*_once` call adds."""
    pytester.makeconftest(conftest_head + "import pytest\n\n" + textwrap.dedent(DISABLE_LOG_DEDUP))
    pytester.makepyfile(test_dedup=DEDUP_TESTS.replace("KW = {}", f"KW = {kw}"))


def test_vllms_disable_log_dedup_switches_the_cache_off_and_strict_checking_stays_on(inner: pytest.Pytester) -> None:
    dedup_suite(inner, FAKE_CONFTEST)
    result = inner.runpytest_subprocess("--warnonce-strict", "-v")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines_random(
        ["*::test_strict_checking_stays_on_inside_the_fixture FAILED*", refused("test_dedup.py", line_of(DEDUP_TESTS))]
    )


def test_without_strict_mode_the_same_suite_passes(inner: pytest.Pytester) -> None:
    dedup_suite(inner, FAKE_CONFTEST)  # the same outcomes but one: the leak, which only strict mode fails
    inner.runpytest_subprocess("-v").assert_outcomes(passed=4)


@pytest.mark.slow  # imports the real vLLM (and torch): 10+ s
def test_vllms_disable_log_dedup_on_the_real_vllm_logger(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("vllm.logger")  # the guard environment installs vLLM 0.33.0 with --no-deps
    monkeypatch.setenv("PYTEST_ADDOPTS", INNER_ADDOPTS)
    # The default scope asks vllm.distributed, whose dependencies a --no-deps install lacks: log per process.
    dedup_suite(pytester, "", kw='{"scope": "process"}')
    result = pytester.runpytest_subprocess("--warnonce-strict", "-v")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines_random(
        ["*::test_strict_checking_stays_on_inside_the_fixture FAILED*", refused("test_dedup.py", line_of(DEDUP_TESTS))]
    )


# --- pytest's own options -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["-p", "no:cacheprovider"], {}),
        (["--import-mode=importlib"], {}),
        (["-p", "warnonce_guard.strict.plugin"], {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}),
    ],
    ids=["no-cacheprovider", "importlib", "autoload-off"],
)
def test_it_works_without_the_cache_in_importlib_mode_and_with_autoloading_off(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str], env: dict[str, str]
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    inner.makepyfile(test_leak=LEAK, test_eager=EAGER)
    result = inner.runpytest_subprocess("--warnonce-strict", *args)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([HEADER, refused("test_leak.py", line_of(LEAK))])


def test_without_autoloading_or_the_plugin_the_option_is_unknown(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # the autoload test above loads it by -p alone
    inner.makepyfile(test_leak=LEAK)
    assert inner.runpytest_subprocess("--warnonce-strict").ret == pytest.ExitCode.USAGE_ERROR


# --- what it says ---------------------------------------------------------------------------------


def test_the_header_says_strict_mode_is_on(inner: pytest.Pytester) -> None:
    # Off, it says nothing: test_strict.py's test_plugin_is_off_unless_asked_for.
    inner.makepyfile(test_eager=EAGER)
    inner.runpytest_subprocess("--warnonce-strict").stdout.fnmatch_lines([HEADER])


def test_a_session_that_imports_no_cache_says_nothing_was_checked_and_what_it_looked_for(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", INNER_ADDOPTS)
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest_subprocess("--warnonce-strict")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "warnonce-strict: none of the caches it checks was imported in this session: no *_once call was checked "
            "(it looked for vllm.logger, transformers.utils.logging, accelerate.logging, *, torchtune.utils._logging, "
            "sglang.srt.utils.common, deepspeed.utils.logging, flashinfer.jit.core, *, "
            "lightning_utilities.core.rank_zero)"
        ]
    )
    assert "nox" not in result.stdout.str() and "pip install" not in result.stdout.str()


def test_a_session_with_a_cache_says_which_it_checked_and_not_that_nothing_was(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_eager=EAGER)
    result = inner.runpytest_subprocess("--warnonce-strict")
    result.stdout.fnmatch_lines(["warnonce-strict: checked vllm.logger"])
    assert "no *_once call was checked" not in result.stdout.str()
