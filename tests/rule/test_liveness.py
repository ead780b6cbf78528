"""One liveness policy: its table of examples holds, and discovery and the audit agree on every row."""

from __future__ import annotations

import textwrap

import pytest
from warnonce_guard.audit.scan import findings_in_source
from warnonce_guard.rule.liveness import EXAMPLES, EXCEPTION, LivenessExample, argument_kind_of_source
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


@pytest.mark.parametrize("example", [e for e in EXAMPLES if "e" in e.argument], ids=lambda e: e.argument)
def test_discovery_and_the_audit_agree_on_what_is_live(example: LivenessExample) -> None:
    source = kernel_site(example.argument)
    (site,) = sites_in_source(source, "vllm/platforms/x.py", "vllm.platforms.x")
    audited = {f.kind for f in findings_in_source(source, "vllm/platforms/x.py")}

    assert (site.form == "live") == (EXCEPTION in audited) == (example.kind == EXCEPTION)


def test_a_name_that_is_not_the_exception_is_never_live() -> None:
    assert argument_kind_of_source("e", {"err"}) == "name"
    assert argument_kind_of_source("repr(x)", {"e"}) is None
