"""What a suite's sessions start from: the modules a logger's functions import when first called
(`engine.pristine.imported_when_called`), imported once before the first session."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from warnonce_guard.mutations.engine.pristine import imported_when_called

LOGGER = """\
import os
from json import dumps


def _should_log_with_scope(scope):
    if scope == "global":
        from vllm.distributed.parallel_state import is_global_first_rank

        return is_global_first_rank()
    if scope == "local":
        from vllm.distributed.parallel_state import is_local_first_rank

        return is_local_first_rank()
    return True


def _log_platform_warnings():
    from vllm.platforms import current_platform


class Logger:
    def warning_once(self, msg, *args, scope="local"):
        if not _should_log_with_scope(scope):
            return
        self.relative()

    def relative(self):
        from . import sibling
        self.flush()

    async def flush(self):
        import vllm.envs, csv
"""


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    path = tmp_path / "toy_logger.py"
    path.write_text(LOGGER)
    loaded = types.ModuleType("toy_logger")
    loaded.__file__ = str(path)
    monkeypatch.setitem(sys.modules, "toy_logger", loaded)
    return "toy_logger"


def test_the_absolute_imports_of_what_a_once_method_calls_in_source_order_each_once(module: str) -> None:
    """Not what a function no `*_once` method calls imports (vLLM 0.33.0's `_log_platform_warnings`: vllm.platforms),
    which a session's tests may never import."""
    assert imported_when_called(module) == ["vllm.distributed.parallel_state", "vllm.envs", "csv"]


def test_a_module_not_imported_or_whose_source_is_gone_or_broken_imports_nothing(
    module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert imported_when_called("not_imported_anywhere") == []
    path = Path(sys.modules[module].__file__ or "")
    path.write_text("def broken(:\n")
    assert imported_when_called(module) == []
    path.unlink()
    assert imported_when_called(module) == []
    monkeypatch.setattr(sys.modules[module], "__file__", None)
    assert imported_when_called(module) == []


# A suite's session on the unmutated code, in mutmut's forked child, interrupted there (mutmut's child catches only
# Exception): the child ends, and the session says why, once.
INTERRUPTED_CLEAN_RUN = """
import json
from mutmut.runners.harness import PytestRunner
from warnonce_guard.common.errors import EngineFailed
from warnonce_guard.mutations.engine import pristine

def interrupted(self, *args, **kwargs):
    raise KeyboardInterrupt

PytestRunner.run_tests = interrupted
runner = pristine.fork_runner("attribution", "no_such_logger")(1)
try:
    runner.run_clean_tests(tests=[])
    said = "returned"
except EngineFailed as err:
    said = str(err)
print(json.dumps({"said": said}))
"""


def test_a_suites_session_interrupted_in_its_forked_child_ends_there_and_fails_the_engine(tmp_path: Path) -> None:
    from tests.mutations.test_engine_collected import _project, run_driver

    _project(tmp_path)
    result = run_driver(tmp_path, INTERRUPTED_CLEAN_RUN)
    assert result["said"] == "the suite's session on the unmutated code raised KeyboardInterrupt: "
    assert result["stdout"].count('"said"') == 1  # the child printed nothing of this script's
