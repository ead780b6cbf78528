"""A configured cache entry (`[[tool.warnonce-guard.cache]]`, `rule.caches.user_cache`) becomes the row it says, every
key taken; a wrong one is refused in a line naming the entry, the key and the value; the model's lookups (which
logger row a package's module makes, vLLM's row once its logger renders first) pick the right row."""

from __future__ import annotations

import pytest
from warnonce_guard.caches.model import BY_KEY, DEFAULT_MODEL, BadCacheEntry, Signature, user_caches

WHERE = "pyproject.toml [tool.warnonce-guard]"
ENTRY = {"name": "x.f_once", "kind": "function", "signature": "(msg)"}


def test_an_entry_given_twice_is_refused_by_its_name() -> None:
    with pytest.raises(BadCacheEntry) as raised:
        user_caches([ENTRY, ENTRY], "here")
    assert str(raised.value) == "here: cache 'x.f_once' is given twice"


def test_a_keyword_binds_a_parameter_past_the_positional_only_ones_or_lands_in_kwargs() -> None:
    plain, open_ended = Signature.parse("(msg, /, level)"), Signature.parse("(msg, **kwargs)")
    assert (plain.takes_keyword("level"), plain.takes_keyword("msg"), plain.takes_keyword("x")) == (True, False, False)
    assert open_ended.takes_keyword("x")


@pytest.mark.parametrize(
    ("module", "key"),
    [
        ("vllm", "vllm"),
        ("vllm.platforms.cpu", "vllm"),
        ("sglang.srt.utils", "transformers"),  # transformers' patched Logger: sglang's own loggers are ones
        ("sglang.multimodal_gen.runtime", "sglang-multimodal"),  # the longer package that matches wins
        ("sglang", "transformers"),
        ("sglangx", None),  # a package is matched whole, never as a prefix of a name
        ("my_plugin", None),
    ],
)
def test_a_modules_logger_row_is_that_of_the_longest_package_it_is_in(module: str, key: str | None) -> None:
    row = DEFAULT_MODEL.of_package(module)
    assert (row.key if row else None) == key


def test_vllms_row_is_replaced_alone_once_its_logger_renders_first() -> None:
    fixed = DEFAULT_MODEL.with_vllm(True, "vllm 9.9 vllm/logger.py:1-9")
    assert fixed.vllm.renders_first and fixed.vllm.source == "vllm 9.9 vllm/logger.py:1-9"
    assert fixed.vllm.keys_on == "(logger, rendered text): the patched `_print_*_once` renders `msg % args` first"
    assert [c for c in fixed.caches if c.key != "vllm"] == [c for c in DEFAULT_MODEL.caches if c.key != "vllm"]
    assert DEFAULT_MODEL.with_vllm(False, "unused") is DEFAULT_MODEL and not BY_KEY["vllm"].renders_first
