"""Fixtures shared by the test modules (helpers that build toy sources live in tests/toy.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def mutmut_settings(directory: Path) -> Iterator[None]:
    """A throwaway mutmut config in `directory`, current for the block: mutmut's generator reads one."""
    from mutmut import configuration

    (directory / "setup.cfg").write_text("[mutmut]\nsource_paths = src\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(directory)
        patch.setattr(configuration, "_config", None)
        yield


@pytest.fixture
def mutmut_config(tmp_path: Path) -> Iterator[Path]:
    with mutmut_settings(tmp_path):
        yield tmp_path


@pytest.fixture(scope="module")
def module_mutmut_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("mutmut")
    with mutmut_settings(folder):
        yield folder
