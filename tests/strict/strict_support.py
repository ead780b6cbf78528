"""Helpers for strict mode's tests: a pytester directory with a stand-in vLLM, and source snippets.

The stand-in `vllm` package is shaped like the real vllm/logger.py (lru_cached `_print_*_once` called by
global name, `warning_once` patched onto a `logging.Logger`), so an inner session imports no real vLLM.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.toy import LOGGER_SOURCE

# The inner conftest proves the fake is the vllm in use (importing the package does not import vllm.logger).
FAKE_CONFTEST = "import vllm\n\nassert vllm.FAKE\n"

# Inner sessions skip hypothesis's plugin: importing it is most of a session's start-up (about 2 of 3 s here),
# and strict mode has nothing to do with it; nor do they shuffle their tests (pytest-randomly). Every other installed
# plugin (xdist among them) still loads.
INNER_ADDOPTS = "-p no:hypothesispytest -p no:randomly"

LEAK = """
from vllm.logger import init_logger

logger = init_logger("vllm.inner")


def test_leak():
    logger.warning_once("x: %r", ValueError("v"))  # CALL
"""

EAGER = """
from vllm.logger import init_logger

logger = init_logger("vllm.inner")


def test_eager():
    exc = ValueError("v")
    logger.warning_once("x: %s", repr(exc))
"""


def make_inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """`pytester`'s directory with the stand-in `vllm` package and a conftest that checks it is the one found."""
    pytester.mkpydir("vllm").joinpath("__init__.py").write_text("FAKE = True\n")
    pytester.path.joinpath("vllm", "logger.py").write_text(LOGGER_SOURCE)
    pytester.makeconftest(FAKE_CONFTEST)
    monkeypatch.setenv("PYTEST_ADDOPTS", INNER_ADDOPTS)  # after pytester cleared it
    return pytester


def literal(text: str) -> str:
    """`text` as an fnmatch pattern matching itself (brackets are character classes there)."""
    return text.replace("[", "[[]")


def line_of(source: str, marker: str = "# CALL") -> int:
    """1-based line of `marker` in the file pytester writes for `source` (dedented, as makepyfile does)."""
    lines = textwrap.dedent(source).strip().splitlines()  # makepyfile strips leading blank lines
    return next(number for number, line in enumerate(lines, 1) if marker in line)
