"""Strict mode with transformers installed: a live exception given to its patched `Logger.warning_once` (an
unbounded lru_cache on every logger of the process) fails the test under `--warnonce-strict` and passes without.

transformers 5.25.0 is installed --no-deps into a folder of its own, with what its logging module needs
(requirements/strict-transformers.txt); the inner sessions find it first on PYTHONPATH.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import layout
from tests.strict.strict_support import INNER_ADDOPTS, line_of, literal

pytest_plugins = ["pytester"]
pytestmark = [pytest.mark.slow, pytest.mark.network]  # pip reads the index (about 5 s)

REQUIREMENTS = layout.ROOT / "requirements" / "strict-transformers.txt"

SUITE = """
from transformers.utils import logging

logger = logging.get_logger("transformers.strict_probe")


def test_live_exception():
    try:
        raise ValueError("v")
    except ValueError as e:
        logger.warning_once("failed: %s", e)  # CALL


def test_exc_info():
    try:
        raise KeyError("k")
    except KeyError as e:
        logger.warning_once("failed", exc_info=e)  # EXC_INFO


def test_formatted_first():
    logger.warning_once("failed: %s", repr(ValueError("v")), stacklevel=2)
"""


@pytest.fixture(scope="module")
def transformers_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("transformers")
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--no-deps", "--target", str(folder)]
    env = {**os.environ, **layout.QUICK_PIP}
    subprocess.run([*pip, "-r", str(REQUIREMENTS)], check=True, capture_output=True, env=env)
    return folder


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, transformers_folder: Path) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(transformers_folder))
    monkeypatch.setenv("PYTEST_ADDOPTS", INNER_ADDOPTS)
    pytester.makepyfile(test_transformers=SUITE)
    return pytester


def test_a_live_exception_into_transformers_warning_once_fails_under_strict_mode(suite: pytest.Pytester) -> None:
    result = suite.runpytest_subprocess("--warnonce-strict")
    result.assert_outcomes(passed=1, failed=2)
    call, exc_info = line_of(SUITE), line_of(SUITE, "# EXC_INFO")
    result.stdout.fnmatch_lines(
        [
            "warnonce-strict: on, checking the *_once caches of vllm.logger, transformers.utils.logging, *",
            literal(f"  test_transformers.py:{call}: logger.warning_once(...) argument 2 (args) is ValueError: ") + "*",
            literal(f"  test_transformers.py:{exc_info}: logger.warning_once(...) argument 'exc_info' is KeyError: ")
            + "*",
            "warnonce-strict: checked transformers.utils.logging",
        ]
    )


def test_the_same_suite_passes_without_strict_mode(suite: pytest.Pytester) -> None:
    suite.runpytest_subprocess().assert_outcomes(passed=3)
