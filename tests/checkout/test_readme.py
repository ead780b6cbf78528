"""README.md states what the code does: its generated tables and its two commands."""

from __future__ import annotations

import re
from pathlib import Path

import layout
import pytest

from tools import readme

ROOT = layout.ROOT
README = (ROOT / "README.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_every_generated_block_is_up_to_date() -> None:
    assert readme.stale_blocks(README) == []  # else run `python -m tools.readme`


def test_every_generated_document_is_up_to_date_and_a_stale_one_is_reported(tmp_path: Path) -> None:
    assert readme.stale_documents() == []  # else run `python -m tools.readme`
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "rules.md").write_text((ROOT / "docs" / "rules.md").read_text(encoding="utf-8") + "x\n")
    assert readme.stale_documents(tmp_path) == ["docs/rules.md"]


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


def test_the_architecture_module_map_is_up_to_date_and_lists_every_shipped_module() -> None:
    text = readme.ARCHITECTURE.read_text(encoding="utf-8")
    assert readme.stale_blocks(text, readme.ARCHITECTURE_BLOCKS) == []  # else run `python -m tools.readme`
    listed = set(re.findall(r"^\| \d \| `([^`]+)` \|", text.split("<!-- modules:start")[1], re.MULTILINE))
    shipped = {
        p.relative_to(ROOT).as_posix()
        for package in layout.PACKAGE_FOLDERS.values()
        for p in (ROOT / package).rglob("*.py")
    }
    assert listed == shipped


def test_the_module_map_follows_the_layers_contract_top_down_and_goes_stale_when_a_docstring_changes(
    tmp_path: Path,
) -> None:
    assert readme.layers()[0] == ["cli"] and readme.layers()[-1] == ["common"]
    assert ["mutations", "history", "upstream"] in readme.layers()
    (tmp_path / "setup.cfg").write_text(
        "[importlinter:contract:layers]\nlayers =\n    warnonce_guard.top\n    warnonce_guard.a | warnonce_guard.b\n",
        encoding="utf-8",
    )
    for package in ("top", "a", "b"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "m.py").write_text(f'"""{package} holds\n| this.\n\nNot this."""\n', encoding="utf-8")
    assert readme.modules_block(tmp_path).splitlines()[2:] == [
        "| 2 | `top/m.py` | top holds \\| this. |",
        "| 1 | `a/m.py` | a holds \\| this. |",
        "| 1 | `b/m.py` | b holds \\| this. |",
    ]


def test_check_mode_names_a_stale_architecture_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "ARCHITECTURE.md"
    copy.write_text(readme.ARCHITECTURE.read_text(encoding="utf-8").replace("| 1 | `common/", "| 9 | `common/"))
    monkeypatch.setattr(readme, "ARCHITECTURE", copy)
    assert readme.main(["--check"]) == 1
    assert "ARCHITECTURE.md: the modules block is out of date" in capsys.readouterr().err
    assert readme.main([]) == 0 and readme.main(["--check"]) == 0


def test_readme_tree_names_every_layer_folder_of_the_contract() -> None:
    tree = README.split("## How it works")[1].split("- **Site discovery**")[0]
    for package in (name for layer in readme.layers() for name in layer):
        assert f"\n    {package}/ " in tree, package
