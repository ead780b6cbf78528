"""The one fingerprint: this tool's code, every package of it, and the parts its caller names."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest
from warnonce_guard.common import fingerprint
from warnonce_guard.common.fingerprint import distributions, tool_fingerprint

from tests import layout


@pytest.fixture
def tool(tmp_path: Path) -> tuple[Path, ...]:
    folders = (tmp_path / "guards", tmp_path / "mutations")
    for folder in folders:
        folder.mkdir()
        (folder / "code.py").write_text("x = 1\n", encoding="utf-8")
    return folders


def test_the_fingerprint_covers_every_package_the_project_installs() -> None:
    config = configparser.ConfigParser()
    config.read(layout.ROOT / "setup.cfg")
    installed = {line.split("=")[0].strip() for line in config["options"]["package_dir"].split("\n") if line.strip()}
    assert {f"warnonce_guard.{name}" for name in fingerprint.TOOL_PACKAGES} == installed


def test_the_fingerprint_covers_the_installed_tool_code() -> None:
    assert [folder.name for folder in fingerprint.TOOL_DIRS] == list(fingerprint.TOOL_PACKAGES)
    assert all((folder / "__init__.py").is_file() for folder in fingerprint.TOOL_DIRS)


def test_the_fingerprint_is_16_hex_digits_and_stable(tool: tuple[Path, ...]) -> None:
    first = tool_fingerprint(["a"], tool)
    assert tool_fingerprint(["a"], tool) == first
    assert len(first) == 16 and set(first) <= set("0123456789abcdef")  # a directory's name


def test_the_fingerprint_changes_with_the_tool_code(tool: tuple[Path, ...]) -> None:
    before = tool_fingerprint([], tool)
    (tool[0] / "code.py").write_text("x = 2\n", encoding="utf-8")
    assert tool_fingerprint([], tool) != before
    (tool[0] / "code.py").rename(tool[0] / "moved.py")  # a file's path counts, not only its contents
    assert tool_fingerprint([], tool) != before


def test_the_fingerprint_changes_with_its_parts(tool: tuple[Path, ...]) -> None:
    parts = {tool_fingerprint(p, tool) for p in ([], ["python==3.11.7"], ["python==3.11.7", "cloudpickle==3.1.2"])}
    assert len(parts) == 3
    assert tool_fingerprint(["ab", "c"], tool) != tool_fingerprint(["a", "bc"], tool)  # parts are kept apart


def test_distributions_name_the_installed_ones_or_only_those_asked_for() -> None:
    everything = distributions()
    assert any(line.startswith("pytest==") for line in everything) and everything == sorted(everything, key=str.lower)
    assert [line.split("==")[0] for line in distributions(["pytest", "not-a-distribution"])] == ["pytest"]
