"""One liveness policy: its table of examples holds, and discovery and the audit agree on every row."""

from __future__ import annotations

import ast
import textwrap

import pytest
from warnonce_guard.audit.scan import findings_in_source
from warnonce_guard.rule.liveness import (
    EXAMPLES,
    EXCEPTION,
    UNHASHABLE,
    LivenessExample,
    argument_kind_of_source,
)
from warnonce_guard.rule.sites import sites_in_source


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.argument for e in EXAMPLES])
def test_the_policy_table(example: LivenessExample) -> None:
    assert argument_kind_of_source(example.argument, {"e"}) == example.kind


def kernel_site(argument: str) -> str:
    return textwrap.dedent(
        f"""\
        class Platform:
            @classmethod
            def import_kernels(cls):
                try:
                    import vllm._C
                except ImportError as e:
                    logger.warning_once("Failed: %s", {argument})
        """
    )


def logs_e(example: LivenessExample) -> bool:
    """The row's argument names `e` (a site logs its handler's name; `sys.exc_info()` names none)."""
    return any(isinstance(n, ast.Name) and n.id == "e" for n in ast.walk(ast.parse(example.argument)))


@pytest.mark.parametrize("example", [e for e in EXAMPLES if logs_e(e)], ids=lambda e: e.argument)
def test_discovery_and_the_audit_agree_on_what_is_live(example: LivenessExample) -> None:
    source = kernel_site(example.argument)
    (site,) = sites_in_source(source, "vllm/platforms/x.py", "vllm.platforms.x")
    audited = {f.kind for f in findings_in_source(source, "vllm/platforms/x.py")}

    assert (site.form == "live") == (EXCEPTION in audited) == (example.kind == EXCEPTION)


def test_a_name_that_is_not_the_exception_is_never_live() -> None:
    assert argument_kind_of_source("e", {"err"}) == "name"
    assert argument_kind_of_source("repr(x)", {"e"}) is None


@pytest.mark.parametrize("argument", ["sys.exc_info()[1]", "sys.exc_info()", "sys.exception()", "sys.last_value"])
def test_the_exception_being_handled_is_live_whatever_it_is_called(argument: str) -> None:
    assert argument_kind_of_source(argument, set()) == EXCEPTION
    assert argument_kind_of_source("sys.exc_info()[0]", set()) == "subscript"  # the class alone


@pytest.mark.parametrize("argument", ["[e]", "{'k': e}", "{e}", "[y for y in e.args]", "list(x)", "(1, sorted(x))"])
def test_what_cannot_be_hashed_raises_before_anything_is_cached(argument: str) -> None:
    assert argument_kind_of_source(argument, {"e"}) == UNHASHABLE


def test_formatting_a_list_is_a_str_not_a_list() -> None:
    assert argument_kind_of_source('"%s" % [x]', set()) is None
    assert argument_kind_of_source("fmt % [x]", set()) == "expression"
