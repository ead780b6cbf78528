"""Fixtures of strict mode's tests (the helpers are in strict_support.py)."""

from __future__ import annotations

import pytest

from tests.strict.strict_support import make_inner


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester directory where `import vllm` finds the stand-in package (tests/strict/strict_support.py)."""
    return make_inner(pytester, monkeypatch)
