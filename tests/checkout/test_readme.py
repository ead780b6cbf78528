"""README.md states what the code does: its generated tables and its two commands."""

from __future__ import annotations

from pathlib import Path

import layout
import pytest

from tools import readme

ROOT = layout.ROOT
README = (ROOT / "README.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_every_generated_block_is_up_to_date() -> None:
    assert readme.stale_blocks(README) == []  # else run `python -m tools.readme`


@pytest.mark.parametrize("name", list(readme.BLOCKS))
def test_a_block_out_of_step_with_its_registry_is_reported(name: str) -> None:
    start = README.index(f"<!-- {name}:start")
    body = README.index("\n", start) + 1
    tampered = README[:body] + "| stale row |\n" + README[body:]
    assert readme.stale_blocks(tampered) == [name]


def test_check_mode_exits_1_on_a_stale_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "README.md"
    copy.write_text(README.replace("| `once-dropped` |", "| `dropped` |"), encoding="utf-8")
    monkeypatch.setattr(readme, "README", copy)
    assert readme.main(["--check"]) == 1
    assert readme.main([]) == 0 and readme.main(["--check"]) == 0


def test_ci_runs_the_readme_test_command_and_the_main_job() -> None:
    setup = "python3 -m venv .venv && .venv/bin/pip install nox==2026.10.20"
    for session in ("tests", "mutation"):
        assert f"    {setup} && .venv/bin/nox -s {session}\n" in README
        assert f"\n.venv/bin/nox -s {session}\n" in CI
    assert "python3 -m venv .venv\n.venv/bin/python -m pip install -q nox==2026.10.20\n" in CI
