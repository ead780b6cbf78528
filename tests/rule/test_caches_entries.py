"""A configured cache entry (`[[tool.warnonce-guard.cache]]`, `rule.caches.user_cache`) becomes the row it says, every
key taken; a wrong one is refused in a line naming the entry, the key and the value; the model's lookups (which
logger row a package's module makes, vLLM's row once its logger renders first) pick the right row."""

from __future__ import annotations

import pytest
from warnonce_guard.caches.model import BY_KEY, DEFAULT_MODEL, BadCacheEntry, Cache, Signature, user_caches

WHERE = "pyproject.toml [tool.warnonce-guard]"
ENTRY = {"name": "x.f_once", "kind": "function", "signature": "(msg)"}


def test_a_logger_entry_with_every_key_is_the_row_it_says() -> None:
    entry = {
        "name": "my_plugin.log.PluginLogger.notice_once",
        "kind": "logger",
        "signature": "(message, *args)",
        "maxsize": 1,  # the smallest size there is
        "held": ["message"],
        "uncached": ["args"],
        "renders-first": True,
        "loggers": ["my_plugin.log.get_logger"],
        "methods": ["notice_once", "note_once"],
    }
    (row,) = user_caches([entry], WHERE)
    assert row == Cache(
        "user:my_plugin.log.PluginLogger.notice_once",
        "my_plugin.log.PluginLogger.notice_once's cache",
        "configured",
        "logger",
        ("my_plugin.log.get_logger", "my_plugin.log.PluginLogger"),
        Signature.parse("(message, *args)"),
        "(message, *args)",
        1,
        f"{WHERE} cache 'my_plugin.log.PluginLogger.notice_once'",
        methods=("notice_once", "note_once"),
        message="message",
        percent=True,  # a logger's method with *args formats `message % args`
        held=frozenset({"message"}),
        uncached=frozenset({"args"}),
        renders_first=True,
        runtime=("my_plugin.log.PluginLogger.notice_once",),
    )


@pytest.mark.parametrize(
    ("kind", "signature", "message", "percent"),
    [
        ("function", "(logger, msg, *args)", "msg", False),  # a function is not known to format
        ("logger", "(msg)", "msg", False),  # no *args: nothing to format with
        ("logger", "(text, *args)", None, True),  # no parameter named msg or message
    ],
)
def test_the_message_is_the_parameter_named_msg_or_message_and_a_logger_with_args_formats(
    kind: str, signature: str, message: str | None, percent: bool
) -> None:
    (row,) = user_caches([{"name": "x.Log.f_once", "kind": kind, "signature": signature}], WHERE)
    assert (row.message, row.percent, row.renders_first, row.keys_on) == (message, percent, False, signature)


@pytest.mark.parametrize(
    ("changed", "says"),
    [
        ({"kind": "method"}, "here cache 'x.f_once': kind must be one of 'logger', 'function', not 'method'"),
        (
            {"size": 3},
            "here: unknown key 'size' in a cache entry (known: name, kind, signature, maxsize, held, uncached, "
            "renders-first, loggers, methods)",
        ),
        ({"held": "msg"}, "here cache 'x.f_once': held must be a list of non-empty strings, not 'msg'"),
        ({"held": [3]}, "here cache 'x.f_once': held must be a list of non-empty strings, not [3]"),
        ({"uncached": [""]}, "here cache 'x.f_once': uncached must be a list of non-empty strings, not ['']"),
        ({"methods": "m"}, "here cache 'x.f_once': methods must be a list of non-empty strings, not 'm'"),
        ({"loggers": "x.get"}, "here cache 'x.f_once': loggers must be a list of non-empty strings, not 'x.get'"),
        ({"name": 3}, "here: name must be a dotted name such as 'my_plugin.log.warn_once', not 3"),
        ({"name": "a.b-c"}, "here: name must be a dotted name such as 'my_plugin.log.warn_once', not 'a.b-c'"),
        (
            {"kind": "logger", "loggers": ["get"]},
            "here cache 'x.f_once': loggers must be a dotted name such as 'my_plugin.log.warn_once', not 'get'",
        ),
        (
            {"maxsize": True},
            "here cache 'x.f_once': maxsize must be a positive integer (leave it out: unbounded), not True",
        ),
        ({"renders-first": "yes"}, "here cache 'x.f_once': renders-first must be true or false, not 'yes'"),
    ],
)
def test_a_wrong_entry_is_refused_in_one_line_naming_it_the_key_and_the_value(
    changed: dict[str, object], says: str
) -> None:
    with pytest.raises(BadCacheEntry) as raised:
        user_caches([{**ENTRY, **changed}], "here")
    assert str(raised.value) == says


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
