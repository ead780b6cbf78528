"""The guards' pytest plugin (guards/conftest.py) refuses an option given empty, as the command line does."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.toy import INTERFACE, make_tree


@pytest.mark.parametrize("option", ["vllm_src", "platform", "sites_file"])
@pytest.mark.parametrize("blank", ["", " "], ids=["empty", "blank"])
def test_an_option_given_empty_stops_the_session_as_a_usage_error_never_guarding_the_default(
    option: str, blank: str
) -> None:
    """`pytest guards/ --vllm-src="$UNSET"` would have guarded the installed vLLM (or every site) instead."""
    from warnonce_guard.guards.conftest import pytest_configure

    given = {option: blank}
    config = SimpleNamespace(getoption=given.get, stash={})
    with pytest.raises(pytest.UsageError) as refused:
        pytest_configure(config)  # type: ignore[arg-type]
    flag = f"--{option.replace('_', '-')}"
    assert str(refused.value) == (
        f"warnonce-guard: {flag}={blank}: an empty value (is a variable unset?); give one, or leave it out"
    )


def test_options_not_given_are_not_refused() -> None:
    from warnonce_guard.guards.conftest import refuse_blank

    refuse_blank({"vllm_src": "tree", "platform": None}.get)  # sites_file not given at all


def test_a_torch_importing_tree_under_a_path_that_is_not_utf8_stops_the_session_before_the_guards(
    tmp_path: Path,
) -> None:
    """`pytest guards/ --vllm-src=tree\\xff` had every guard fail on torch's TypeError; the session now stops."""
    from warnonce_guard.guards.conftest import pytest_configure

    tree = make_tree(Path(os.fsdecode(os.fsencode(tmp_path) + b"/tree\xff")), "import torch\n" + INTERFACE)
    config = SimpleNamespace(getoption={"vllm_src": str(tree)}.get, stash={})
    with pytest.raises(pytest.UsageError, match=r"^warnonce-guard: --vllm-src .*/tree\\xff: its path is not UTF-8"):
        pytest_configure(config)  # type: ignore[arg-type]
