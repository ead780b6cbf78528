"""The survey's count of live once-calls (`history`'s *live once-calls* column): the audit's WOG001 over the whole
release tree, by vLLM's cache as the tree's logger is written."""

from __future__ import annotations

from pathlib import Path

from warnonce_guard.caches.cache_fix import patched
from warnonce_guard.history.survey import live_once_calls, survey

from tests.history_support import vllm_tree
from tests.toy import LOGGER_SOURCE, write

LIVE = 'logger.warning_once("Failed to import from PKG._C: %r", e)'
ELSEWHERE = """
from vllm.logger import init_logger

logger = init_logger(__name__)


def load(path):
    try:
        return open(path).read()
    except OSError as err:
        logger.info_once("cannot read %s: %s", path, err)
        logger.info_once("cannot read %s: %s", path, repr(err))
"""


def test_every_live_once_call_of_the_tree_is_counted_the_site_among_them(tmp_path: Path) -> None:
    tree = vllm_tree(tmp_path, LIVE)
    write(tree, "vllm/model_executor/loader.py", ELSEWHERE)

    assert live_once_calls(tree) == 2  # the site's `e`, and `err` in the loader; `repr(err)` is text
    assert survey(tree).live_calls == 2


def test_a_tree_whose_logger_has_the_fix_counts_none(tmp_path: Path) -> None:
    tree = vllm_tree(tmp_path, LIVE)
    write(tree, "vllm/model_executor/loader.py", ELSEWHERE)
    (tree / "vllm" / "logger.py").write_text(patched(LOGGER_SOURCE), encoding="utf-8")

    assert live_once_calls(tree) == 0
