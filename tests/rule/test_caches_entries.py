"""A configured cache entry (`[[tool.warnonce-guard.cache]]`, `caches.model.user_caches`) becomes the row it says,
every key taken; a wrong one is refused in a line naming the entry, the key and the value; the model's lookups (which
logger row a package's module makes, vLLM's row once its logger renders first) pick the right row."""

from __future__ import annotations

import pytest
from warnonce_guard.caches.model import BY_KEY, DEFAULT_MODEL, BadCacheEntry, Cache, Signature, user_caches

WHERE = "pyproject.toml [tool.warnonce-guard]"
ENTRY = {"name": "x.f_once", "kind": "function", "signature": "(msg)"}
LOGGER = "my_plugin.log.PluginLogger.notice_once"


def test_a_logger_entry_with_every_key_is_the_row_it_says() -> None:
    entry = {
        "name": LOGGER,
        "kind": "logger",
        "signature": '(msg, level, *args, scope="local", stacklevel=1, **kwargs)',  # kept as written
        "maxsize": 1,  # the smallest size there is
        "held": ["level"],
        "uncached": ["scope", "stacklevel"],
        "tupled": ["kwargs"],
        "renders-first": True,
        "loggers": ["my_plugin.log.get_logger", "my_plugin.log.logger"],
        "methods": ["notice_once", "note_once"],
        "packages": ["my_plugin", "my_plugin_extras"],
        "places": ["my_plugin.log:PluginLogger.notice_once", "my_plugin.log:PluginLogger.note_once"],
        "home": "my_plugin.log",
        "keys-on": "(logger, msg, *args)",
        "caller-stacklevel": 2,
    }
    (row,) = user_caches([entry], WHERE)
    assert row == Cache(
        f"user:{LOGGER}",
        f"{LOGGER}'s cache",
        "my_plugin.log",
        "logger",
        ("my_plugin.log.get_logger", "my_plugin.log.logger", "my_plugin.log.PluginLogger"),
        Signature(
            '(msg, level, *args, scope="local", stacklevel=1, **kwargs)',
            ("msg", "level"),
            0,
            "args",
            ("scope", "stacklevel"),
            "kwargs",
            (("scope", "local"), ("stacklevel", 1)),
        ),
        "(logger, msg, *args)",
        1,
        f"{WHERE} cache {LOGGER!r}",
        methods=("notice_once", "note_once"),
        packages=("my_plugin", "my_plugin_extras"),
        message="msg",
        percent=True,  # a logger's method with *args after msg formats `msg % args`
        held=frozenset({"level"}),
        uncached=frozenset({"scope", "stacklevel"}),
        tupled=frozenset({"kwargs"}),
        renders_first=True,
        runtime=("my_plugin.log:PluginLogger.notice_once", "my_plugin.log:PluginLogger.note_once"),
        caller_stacklevel=2,
        name=LOGGER,
    )


def test_a_function_entry_with_every_key_is_the_row_it_says() -> None:
    entry = {
        "name": "my_plugin.log.note_once",
        "kind": "function",
        "signature": "(logger, message, level=20, *, scope='local')",
        "also": ["my_plugin.note_once", "my_plugin.utils.note_once"],
        "held": ["logger"],
        "replace": False,
    }
    (row,) = user_caches([entry], "here")
    assert row == Cache(
        "user:my_plugin.log.note_once",
        "my_plugin.log.note_once's cache",
        "configured",
        "function",
        ("my_plugin.log.note_once", "my_plugin.note_once", "my_plugin.utils.note_once"),
        Signature(
            "(logger, message, level=20, *, scope='local')",
            ("logger", "message", "level"),
            0,
            None,
            ("scope",),
            None,
            (("level", 20), ("scope", "local")),
        ),
        "(logger, message, level=20, *, scope='local')",  # keys-on: the signature, unless said
        None,  # no maxsize: unbounded, the stricter reading
        "here cache 'my_plugin.log.note_once'",
        message="message",
        percent=False,  # no *args: nothing formats the message
        held=frozenset({"logger"}),
        runtime=("my_plugin.log.note_once", "my_plugin.note_once", "my_plugin.utils.note_once"),
        name="my_plugin.log.note_once",
    )


def test_a_logger_entry_with_the_required_keys_only_takes_its_method_and_its_class_from_its_name() -> None:
    (row,) = user_caches([{"name": "my_plugin.log.Log.warn_once", "kind": "logger", "signature": "(msg)"}], "here")
    assert (row.methods, row.names, row.runtime) == (
        ("warn_once",),
        ("my_plugin.log.Log",),
        ("my_plugin.log.Log.warn_once",),
    )
    assert (row.home, row.keys_on, row.maxsize, row.caller_stacklevel, row.renders_first) == (
        "configured",
        "(msg)",
        None,
        None,
        False,
    )


@pytest.mark.parametrize(
    ("kind", "signature", "message", "percent"),
    [
        ("function", "(logger, msg, *args)", "msg", False),  # the message is not first: `msg % args` is not its form
        ("logger", "(msg, level, *args)", "msg", True),
        ("logger", "(msg)", "msg", False),  # no *args: nothing to format with
        ("logger", "(msg, **kwargs)", "msg", False),
        ("logger", "(message, *args)", "message", False),  # formats only a parameter named msg, as vLLM's does
        ("logger", "(text, *args)", None, False),  # no parameter named msg or message
    ],
)
def test_the_message_is_the_parameter_named_msg_or_message_and_a_msg_followed_by_args_is_formatted(
    kind: str, signature: str, message: str | None, percent: bool
) -> None:
    (row,) = user_caches([{"name": "x.Log.f_once", "kind": kind, "signature": signature}], WHERE)
    assert (row.message, row.percent) == (message, percent)


KNOWN = (
    "name, kind, signature, maxsize, held, uncached, tupled, renders-first, loggers, methods, also, packages, places, "
    "home, keys-on, caller-stacklevel, replace"
)
WRONG = "here cache 'x.f_once'"
DOTTED = "must be a dotted name such as 'my_plugin.log.warn_once'"


@pytest.mark.parametrize(
    ("changed", "says"),
    [
        ({"size": 3}, f"here: unknown key 'size' in a cache entry (known: {KNOWN})"),
        ({"key": "mine"}, f"here: unknown key 'key' in a cache entry (known: {KNOWN})"),  # the table's own keys
        ({"signature": None}, "here: a cache entry needs signature (name, kind, signature)"),
        ({"name": 3}, f"here: name {DOTTED}, not 3"),
        ({"name": "f_once"}, f"here: name {DOTTED}, not 'f_once'"),
        ({"name": "a.b-c"}, f"here: name {DOTTED}, not 'a.b-c'"),
        ({"kind": "method"}, f"{WRONG}: kind must be one of 'logger', 'function', not 'method'"),
        ({"signature": 3}, f"{WRONG}: signature must be a string such as '(msg, *args)', not 3"),
        ({"maxsize": 0}, f"{WRONG}: maxsize must be a positive integer (leave it out: unbounded), not 0"),
        ({"maxsize": True}, f"{WRONG}: maxsize must be a positive integer (leave it out: unbounded), not True"),
        ({"maxsize": "8"}, f"{WRONG}: maxsize must be a positive integer (leave it out: unbounded), not '8'"),
        (
            {"caller-stacklevel": 0},
            f"{WRONG}: caller-stacklevel must be a positive integer (the stacklevel that names the caller), not 0",
        ),
        ({"held": "msg"}, f"{WRONG}: held must be a list of non-empty strings, not 'msg'"),
        ({"held": [3]}, f"{WRONG}: held must be a list of non-empty strings, not [3]"),
        ({"uncached": [""]}, f"{WRONG}: uncached must be a list of non-empty strings, not ['']"),
        ({"tupled": "msg"}, f"{WRONG}: tupled must be a list of non-empty strings, not 'msg'"),
        ({"held": ["logger"]}, f"{WRONG}: 'logger' is not a parameter of (msg)"),
        ({"loggers": "x.get"}, f"{WRONG}: loggers must be a list of non-empty strings, not 'x.get'"),
        ({"kind": "logger", "loggers": ["get"]}, f"{WRONG}: loggers {DOTTED}, not 'get'"),
        ({"methods": "m"}, f"{WRONG}: methods must be a list of non-empty strings, not 'm'"),
        ({"packages": "x"}, f"{WRONG}: packages must be a list of non-empty strings, not 'x'"),
        ({"places": "x:f"}, f"{WRONG}: places must be a list of non-empty strings, not 'x:f'"),
        ({"also": "x.g_once"}, f"{WRONG}: also must be a list of non-empty strings, not 'x.g_once'"),
        ({"also": ["g_once"]}, f"{WRONG}: also {DOTTED}, not 'g_once'"),
        ({"methods": ["f_once"]}, f"{WRONG}: loggers, methods and packages are for kind 'logger', not 'function'"),
        ({"packages": ["x"]}, f"{WRONG}: loggers, methods and packages are for kind 'logger', not 'function'"),
        (
            {"kind": "logger", "also": ["x.g_once"]},
            f"{WRONG}: also is for kind 'function' (a logger's are its loggers)",
        ),
        ({"home": ""}, f"{WRONG}: home must be a non-empty string, not ''"),
        ({"home": 3}, f"{WRONG}: home must be a non-empty string, not 3"),
        ({"keys-on": " "}, f"{WRONG}: keys-on must be a non-empty string, not ' '"),
        ({"renders-first": "yes"}, f"{WRONG}: renders-first must be true or false, not 'yes'"),
        ({"replace": 1}, f"{WRONG}: replace must be true or false, not 1"),
    ],
)
def test_a_wrong_entry_is_refused_in_one_line_naming_it_the_key_and_the_value(
    changed: dict[str, object], says: str
) -> None:
    entry = {key: value for key, value in {**ENTRY, **changed}.items() if value is not None}
    with pytest.raises(BadCacheEntry) as raised:
        user_caches([entry], "here")
    assert str(raised.value) == says


def test_a_maxsize_of_one_is_a_cache_of_one_entry() -> None:
    (row,) = user_caches([{**ENTRY, "maxsize": 1}], "here")
    assert (row.maxsize, row.size) == (1, "1 entries")


def test_an_entry_naming_a_place_several_built_in_rows_patch_names_them_all() -> None:
    entry = {"name": "logging.Logger.warning_once", "kind": "logger", "signature": "(msg, *args)"}
    with pytest.raises(BadCacheEntry) as raised:
        user_caches([entry], "here")
    assert str(raised.value) == (
        "here cache 'logging.Logger.warning_once': it names the built-in cache 'transformers', 'auto-round'; say "
        "replace = true to use this entry instead, or drop it"
    )
    (row,) = user_caches([{**entry, "replace": True}], "here")
    assert row.replaces == ("transformers", "auto-round")


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
