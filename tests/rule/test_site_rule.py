"""The site rule's reading of a `try`: which handlers catch the kernel's ImportError, which imports name a kernel."""

from __future__ import annotations

import pytest
from warnonce_guard.rule.sites import sites_in_source

FILE, MODULE = "vllm/platforms/x.py", "vllm.platforms.x"


def kernels(body: str, caught: str = "ImportError") -> list[tuple[str, str]]:
    """(kernel module, exception name) of each site whose `try` runs `body` and whose handler catches `caught`."""
    source = f"try:\n    {body}\nexcept {caught} as e:\n    logger.warning_once('Failed: %r', e)\n"
    return [(site.kernel_module, site.exc_name) for site in sites_in_source(source, FILE, MODULE) if site.recognised]


@pytest.mark.parametrize(
    "caught", ["(ValueError, TypeError)", "builtins.ValueError", "a.b.ValueError", "(ValueError, builtins.KeyError)"]
)
def test_a_handler_catching_only_builtin_errors_that_are_no_import_error_is_no_site(caught: str) -> None:
    assert kernels("import vllm._C  # noqa: F401", caught) == []


def test_an_import_climbing_above_the_top_package_leaves_the_kernel_import_after_it_a_site() -> None:
    """`from ..... import x` in `vllm.platforms.x` names no module; the statement's next import is read still."""
    body = "if True:\n        from ..... import x  # noqa: F401\n        import vllm._C  # noqa: F401"
    assert kernels(body) == [("vllm._C", "e")]


@pytest.mark.parametrize("body", ["from .. import _C  # noqa: F401", "from .._C import ops  # noqa: F401"])
def test_a_relative_kernel_import_is_a_site_whose_handlers_call_is_recognised(body: str) -> None:
    """`..` in `vllm.platforms.x` is `vllm`: the row is the handler's call, not the bare guarded import's."""
    source = f"try:\n    {body}\nexcept ImportError as e:\n    logger.warning_once('Failed: %r', e)\n"
    found = [(s.kernel_module, s.recognised, s.log_method, s.exc_name) for s in sites_in_source(source, FILE, MODULE)]
    assert found == [("vllm._C", True, "warning_once", "e")]
