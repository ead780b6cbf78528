"""The model of every once-cache: its table agrees with what discovery knows of vLLM's, signatures bind calls as
Python does, the settings' rows are checked, and a logger module that renders first is told from one that does not."""

from __future__ import annotations

import ast
import textwrap

import pytest
from warnonce_guard.caches.model import (
    BY_KEY,
    CACHES,
    DEFAULT_MODEL,
    BadCacheEntry,
    BadSignature,
    Cache,
    Signature,
    cached_function,
    decorator_maxsize,
    user_caches,
)
from warnonce_guard.caches.renders_first import renders_first
from warnonce_guard.rule import liveness

from tests.toy import LOGGER_SOURCE


def test_vllms_row_is_what_site_discovery_knows_of_vllms_logger() -> None:
    vllm = BY_KEY["vllm"]
    assert frozenset(vllm.methods) == liveness.ONCE_METHODS
    assert vllm.uncached == liveness.IGNORED_KEYWORDS
    keywords = {n for n in vllm.signature.names if vllm.signature.takes_keyword(n)} - {vllm.signature.varargs}
    assert keywords == liveness.ONCE_KEYWORDS
    assert (vllm.maxsize, vllm.renders_first, DEFAULT_MODEL.vllm) == (128, False, vllm)


def test_every_row_cites_the_version_it_was_read_from_and_has_a_place_strict_mode_wraps() -> None:
    assert len({c.key for c in CACHES}) == len(CACHES)
    for cache in CACHES:
        _, version, where = cache.source.split(" ", 2)
        assert version[0].isdigit() and ".py:" in where, cache.source
        assert cache.runtime and all(":" in place for place in cache.runtime)
        assert cache.kind == "logger" or not cache.methods


@pytest.mark.parametrize(
    ("text", "position", "keyword", "expected"),
    [
        ("(msg, *args, scope='local')", 5, None, "args"),
        ("(msg, *args, scope='local')", None, "scope", "scope"),
        ("(msg, *args, scope='local')", None, "stacklevel", None),
        ("(logger, msg)", 2, None, None),  # one too many: the call raises
        ("(logger, msg, level=20)", None, "level", "level"),
        ("(a, /, b)", None, "a", None),  # positional-only
        ("(msg, *args, **kwargs)", None, "anything", "kwargs"),
    ],
)
def test_a_signature_binds_arguments_as_python_does(
    text: str, position: int | None, keyword: str | None, expected: str | None
) -> None:
    signature = Signature.parse(text)
    bound = signature.parameter_at(position) if position is not None else signature.parameter_named(keyword or "")
    assert bound == expected


@pytest.mark.parametrize("text", ["msg, *args", "(msg, *args", "(1)", ""])
def test_a_signature_that_is_no_parameter_list_is_refused(text: str) -> None:
    with pytest.raises(BadSignature):
        Signature.parse(text)


@pytest.mark.parametrize(
    ("decorator", "maxsize"),
    [
        ("lru_cache", 128),
        ("functools.lru_cache", 128),
        ("lru_cache()", 128),
        ("lru_cache(None)", None),
        ("functools.lru_cache(maxsize=None)", None),
        ("lru_cache(maxsize=8)", 8),
        ("lru_cache(SIZE)", None),  # not a literal: the stricter reading
        ("lru_cache(maxsize='8')", None),  # nor a literal int: functools refuses it, read as unbounded
        ("lru_cache(8, True)", 8),  # (maxsize, typed)
        ("lru_cache(1)", 1),
        ("lru_cache(maxsize=-1)", None),  # no literal either (`-1` is an operation): the stricter reading
        ("cache", None),
        ("functools.cache", None),
    ],
)
def test_a_cache_decorator_and_its_size_are_read(decorator: str, maxsize: int | None) -> None:
    assert decorator_maxsize(ast.parse(decorator, mode="eval").body) == (True, maxsize)


@pytest.mark.parametrize("decorator", ["staticmethod", "cache_once", "functools.wraps(f)", "cached_property"])
def test_other_decorators_are_not_caches(decorator: str) -> None:
    assert decorator_maxsize(ast.parse(decorator, mode="eval").body)[0] is False


@pytest.mark.parametrize("decorator", ["lru_cache(0)", "functools.lru_cache(maxsize=0)"])
def test_an_lru_cache_of_size_zero_keeps_nothing_and_is_no_cache(decorator: str) -> None:
    assert decorator_maxsize(ast.parse(decorator, mode="eval").body)[0] is False


@pytest.mark.parametrize(
    ("source", "held"),
    [
        ("logger.warning_once('m %s', e)\n", True),
        ("from ray.util import log_once\n", True),  # a cached function's name
        ("@lru_cache\ndef note_once(msg):\n    pass\n", True),  # a cached *_once function of its own
        ("def schedule_once(job):\n    pass\n", False),  # `_once` in a name no row has
        ("logger.warning('m %s', e)\n", False),
    ],
)
def test_the_prefilter_keeps_a_file_that_may_call_a_row_and_drops_one_that_only_says_once(
    source: str, held: bool
) -> None:
    assert DEFAULT_MODEL.holds_call(source) is held


def test_an_lru_cached_once_function_is_a_row_of_its_own_and_its_logger_is_held() -> None:
    (function,) = ast.parse("@lru_cache(None)\ndef note_once(logger, msg, *args):\n    pass\n").body
    assert isinstance(function, ast.FunctionDef)
    row = cached_function(function, "my_plugin.log", 1)
    assert row is not None
    assert (row.kind, row.names, row.maxsize, row.held, row.message) == (
        "function",
        ("my_plugin.log.note_once",),
        None,
        frozenset({"logger"}),
        "msg",
    )
    (plain,) = ast.parse("@lru_cache\ndef lookup(key):\n    pass\n").body
    assert isinstance(plain, ast.FunctionDef) and cached_function(plain, None, 1) is None  # not named *_once


def test_a_cached_once_function_of_a_file_outside_any_package_is_a_row_named_by_the_file() -> None:
    (function,) = ast.parse(
        "@functools.lru_cache(maxsize=8)\ndef remember_once(logger, message, *args):\n    pass\n"
    ).body
    assert isinstance(function, ast.FunctionDef)
    assert cached_function(function, None, 7) == Cache(
        "local:remember_once",
        "remember_once's lru_cache",
        "this module",
        "function",
        ("remember_once",),
        Signature("(logger, message, *args)", ("logger", "message"), 0, "args", (), None),
        "(logger, message)",  # what the cache keys on: every positional parameter
        8,
        "line 7 of this file",
        message="message",
        percent=False,  # a function of the module is not known to format its message
        held=frozenset({"logger"}),
    )


def test_a_configured_row_takes_a_name_before_the_tables() -> None:
    (row,) = user_caches(
        [{"name": "my_plugin.log.warn_once", "kind": "function", "signature": "(logger, msg)", "held": ["logger"]}],
        "pyproject.toml",
    )
    model = DEFAULT_MODEL.with_rows([row])
    assert model.named("my_plugin.log.warn_once") is row and row.maxsize is None
    assert model.named("optimum.utils.logging.warn_once") is BY_KEY["optimum"]
    assert "warn_once" in model.function_names


def test_a_configured_logger_row_is_reached_through_its_loggers_and_its_class() -> None:
    (row,) = user_caches(
        [
            {
                "name": "my_plugin.log.PluginLogger.notice_once",
                "kind": "logger",
                "signature": "(msg, *args)",
                "loggers": ["my_plugin.log.get_logger"],
                "maxsize": 64,
            }
        ],
        "pyproject.toml",
    )
    model = DEFAULT_MODEL.with_rows([row])
    assert model.named("my_plugin.log.get_logger") is row and model.named("my_plugin.log.PluginLogger") is row
    assert row.methods == ("notice_once",) and "notice_once" in model.methods and row.bounded
    assert row.watched == ("my_plugin", "my_plugin.log", "my_plugin.log.PluginLogger")


@pytest.mark.parametrize(
    ("entries", "says"),
    [
        ({"name": "x.f_once"}, "must be an array of tables"),
        (["x.f_once"], "each cache entry must be a table"),
        ([{"name": "x.f_once", "kind": "function"}], "needs signature"),
        ([{"name": "f_once", "kind": "function", "signature": "(msg)"}], "must be a dotted name"),
        ([{"name": "x.f_once", "kind": "method", "signature": "(msg)"}], "kind must be one of"),
        ([{"name": "x.f_once", "kind": "function", "signature": "msg"}], "is not a parameter list"),
        ([{"name": "x.f_once", "kind": "function", "signature": "(msg)", "maxsize": 0}], "positive integer"),
        ([{"name": "x.f_once", "kind": "function", "signature": "(msg)", "held": ["logger"]}], "not a parameter"),
        ([{"name": "x.f_once", "kind": "function", "signature": "(msg)", "loggers": ["x.get"]}], "for kind 'logger'"),
        ([{"name": "x.f_once", "kind": "function", "signature": "(msg)", "size": 3}], "unknown key 'size'"),
        ([{"name": "x.f_once", "kind": "function", "signature": "(msg)"}] * 2, "given twice"),
    ],
)
def test_a_configured_row_that_cannot_be_one_is_refused_naming_what_is_wrong(entries: object, says: str) -> None:
    with pytest.raises(BadCacheEntry, match=says) as raised:
        user_caches(entries, "pyproject.toml [tool.warnonce-guard]")
    assert str(raised.value).startswith("pyproject.toml [tool.warnonce-guard]")


# ---- a logger module that renders first ----------------------------------------------------------------------------

STOCK = LOGGER_SOURCE  # shaped like vLLM 0.33.0's: `@lru_cache` on `_print_*_once(logger, msg, *args)`
_PRINTERS = STOCK[STOCK.index("@lru_cache\ndef _print_debug_once") : STOCK.index("def _debug_once")]

# Issue 35's patch, as its engineer describes it: render `msg % args` as logging would, then an lru_cache keyed on
# (logger, rendered text) only.
RENDER_THEN_CACHE = """\
def _render(msg, args):
    if not args:
        return str(msg)
    try:
        return str(msg) % args
    except (TypeError, ValueError):
        return " ".join(map(repr, (msg, *args)))


@lru_cache
def _print_once(logger, level, text):
    logger.log(level, text, stacklevel=4)


def _print_debug_once(logger, msg, *args):
    _print_once(logger, logging.DEBUG, _render(msg, args))


def _print_info_once(logger, msg, *args):
    _print_once(logger, logging.INFO, _render(msg, args))


def _print_warning_once(logger, msg, *args):
    _print_once(logger, logging.WARNING, _render(msg, args))


def _print_error_once(logger, msg, *args):
    _print_once(logger, logging.ERROR, _render(msg, args))


"""
# The same, rendered inline, one cached printer per level, and the levels sharing one function.
INLINE = """\
@lru_cache
def _warning_text_once(logger, text):
    logger.warning(text, stacklevel=4)


def _print_warning_once(logger, msg, *args):
    text = msg % args if args else msg
    _warning_text_once(logger, text)


_print_debug_once = _print_info_once = _print_error_once = _print_warning_once


"""
# sglang's multimodal style: a set of rendered text, no lru_cache at all.
TEXT_SET = """\
_logged_once = set()


def _print_warning_once(logger, msg, *args):
    text = msg % args if args else msg
    key = (logger.name, text)
    if key not in _logged_once:
        _logged_once.add(key)
        logger.warning(text, stacklevel=3)


_print_debug_once = _print_info_once = _print_error_once = _print_warning_once


"""
# Look fixed but are not: the raw arguments still reach a cache.
RAW_IN_THE_KEY = """\
@lru_cache
def _print_once(logger, level, text, args):
    logger.log(level, text, stacklevel=4)


def _print_warning_once(logger, msg, *args):
    _print_once(logger, logging.WARNING, msg % args, args)


_print_debug_once = _print_info_once = _print_error_once = _print_warning_once


"""
RAW_IN_A_SET = TEXT_SET.replace("key = (logger.name, text)", "key = (logger.name, msg, args)")
RENDERED_BUT_CACHED_BEFORE = """\
@lru_cache
def _print_warning_once(logger, msg, *args):
    logger.warning(msg % args, stacklevel=3)


_print_debug_once = _print_info_once = _print_error_once = _print_warning_once


"""
TO_ANOTHER_MODULE = INLINE.replace(
    "\n    _warning_text_once(logger, text)\n", "\n    other.cached(logger, msg, args)\n"
)


@pytest.mark.parametrize(
    ("printers", "fixed"),
    [
        (_PRINTERS, False),
        (RENDER_THEN_CACHE, True),
        (INLINE, True),
        (TEXT_SET, True),
        (RAW_IN_THE_KEY, False),
        (RAW_IN_A_SET, False),
        (RENDERED_BUT_CACHED_BEFORE, False),
        (TO_ANOTHER_MODULE, False),  # what it does with the arguments is not known: not taken as fixed
    ],
    ids=["stock", "render-then-cache", "inline", "text-set", "raw-in-key", "raw-in-set", "cached-first", "elsewhere"],
)
def test_a_logger_that_renders_first_is_told_from_one_that_caches_its_arguments(printers: str, fixed: bool) -> None:
    assert renders_first(STOCK.replace(_PRINTERS, printers)) is fixed


def test_the_once_methods_of_a_logger_class_are_followed_to_the_printers_they_call() -> None:
    methods = """\
class _Logger(logging.Logger):
    def warning_once(self, msg, *args, scope="local"):
        if not _should_log(scope):
            return
        _print_warning_once(self, msg, *args)


def _should_log(scope):
    return scope != "none"
"""
    assert renders_first(STOCK.replace(_PRINTERS, _PRINTERS + methods)) is False
    assert renders_first(STOCK.replace(_PRINTERS, INLINE + methods)) is True


@pytest.mark.parametrize("source", ["def f(:\n", "import logging\n", textwrap.dedent("def warning(msg):\n    pass\n")])
def test_a_module_without_once_methods_says_nothing(source: str) -> None:
    assert renders_first(source) is None
