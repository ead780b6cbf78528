"""An alias of a `*_once` method is found for the methods the audit is told of (a configured cache's own
`notice_once`, as an attribute or through getattr), not only for vLLM's."""

from __future__ import annotations

import ast

from warnonce_guard.audit.calls import aliases_in
from warnonce_guard.audit.scan import findings_in_source


def test_an_alias_of_a_configured_once_method_is_followed_and_of_no_method_told_of_is_not() -> None:
    tree = ast.parse("note = logger.notice_once\ngot = getattr(logger, 'notice_once')\nwarn = logger.warning_once\n")
    found = aliases_in(tree, None, frozenset({"notice_once"}))
    assert {name: reference.level for name, reference in found.items()} == {"note": "notice_once", "got": "notice_once"}
    assert {name: reference.level for name, reference in aliases_in(tree).items()} == {"warn": "warning_once"}
    partial = ast.parse("import functools\nnote = functools.partial(logger.notice_once, 'm: %s')\n")
    (reference,) = aliases_in(partial, None, frozenset({"notice_once"})).values()
    assert (reference.level, reference.bound) == ("notice_once", 1)  # the message bound by the partial


def test_a_method_taken_with_getattr_reaches_the_cache_of_the_logger_it_is_taken_from() -> None:
    source = """\
from vllm.logger import init_logger

logger = init_logger(__name__)
warn = getattr(logger, "warning_once")


def f():
    try:
        pass
    except Exception as e:
        warn("m %s", e)
        getattr(logger, "info_once")("m %s", e)
"""
    vllms = "vLLM's logger *_once lru_cache (vllm.logger, 128 entries)"
    assert [(f.argument, f.call, f.cache) for f in findings_in_source(source, "m.py", "m")] == [
        ("e", "warn(...) (warning_once)", vllms),
        ("e", "getattr(logger, 'info_once')(...) (info_once)", vllms),
    ]


def test_a_partial_bound_to_a_name_reaches_the_cache_of_the_logger_whose_method_it_binds() -> None:
    source = """\
import functools
from vllm.logger import init_logger

logger = init_logger(__name__)
warn = functools.partial(logger.warning_once, "m %s")


def f():
    try:
        pass
    except Exception as e:
        warn(e)
"""
    ((argument, call, cache),) = [(f.argument, f.call, f.cache) for f in findings_in_source(source, "m.py", "m")]
    assert (argument, call) == ("e", "warn(...) (warning_once)")
    assert cache == "vLLM's logger *_once lru_cache (vllm.logger, 128 entries)"  # not "whichever logger it is"


def test_a_partial_and_a_cached_function_are_followed_in_the_function_they_are_made_in() -> None:
    source = """\
import functools
from vllm.logger import init_logger


def f(log):
    own = init_logger(__name__)
    try:
        pass
    except Exception as e:
        functools.partial(own.warning_once, "m %s", e)()
        functools.partial(log.warning_once, "m %s", e)()


def g():
    from sglang.srt.utils import print_warning_once

    try:
        pass
    except Exception as e:
        print_warning_once(e)
"""
    assert [(f.line, f.call, f.cache) for f in findings_in_source(source, "m.py", "m")] == [
        (10, "functools.partial(own.warning_once, ...)", "vLLM's logger *_once lru_cache (vllm.logger, 128 entries)"),
        (
            11,
            "functools.partial(log.warning_once, ...)",
            "the cache of whichever logger it is (its logger is not followed from this file to a known one)",
        ),
        (
            20,
            "print_warning_once(...)",
            "sglang's print_warning_once/print_info_once lru_cache (sglang.srt.utils.common, unbounded)",
        ),
    ]
