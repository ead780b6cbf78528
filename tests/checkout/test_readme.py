"""README.md states what the code does: its generated tables (and the reference page's), its two commands, and every
other command it shows, each run by a test, by .ci/run or by the scheduled workflow."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import layout
from tests.readme_commands import RUN_BY, SANDBOXED, shown_commands
from tools import readme

ROOT = layout.ROOT
README = (ROOT / "README.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
WORKFLOW = (ROOT / ".github" / "workflows" / "mutation-guard.yml").read_text(encoding="utf-8")
DOCUMENTS = ((readme.README, readme.BLOCKS), (readme.REFERENCE, readme.REFERENCE_BLOCKS))


def test_every_generated_block_is_up_to_date() -> None:
    for path, blocks in DOCUMENTS:
        assert readme.stale_blocks(path.read_text(encoding="utf-8"), blocks) == [], (
            path
        )  # else `python -m tools.readme`


def test_every_generated_document_is_up_to_date_and_a_stale_one_is_reported(tmp_path: Path) -> None:
    assert readme.stale_documents() == []  # else run `python -m tools.readme`
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "rules.md").write_text((ROOT / "docs" / "rules.md").read_text(encoding="utf-8") + "x\n")
    assert readme.stale_documents(tmp_path) == ["docs/rules.md"]


@pytest.mark.parametrize(
    ("path", "name"), [(path, name) for path, blocks in DOCUMENTS for name in blocks], ids=lambda value: str(value)
)
def test_a_block_out_of_step_with_its_registry_is_reported(path: Path, name: str) -> None:
    text = path.read_text(encoding="utf-8")
    start = text.index(f"<!-- {name}:start")
    body = text.index("\n", start) + 1
    tampered = text[:body] + "| stale row |\n" + text[body:]
    assert readme.stale_blocks(tampered, dict(DOCUMENTS)[path]) == [name]


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


def test_a_newcomer_finds_the_two_commands_the_report_and_ci_in_the_first_screen() -> None:
    lines = README.splitlines()
    assert len(lines) <= 250
    first_screen = "\n".join(lines[:60])
    for heading in ("## Two commands", "## Reading the report", "## Run it in CI"):
        assert heading in first_screen, heading


def test_readme_tree_names_every_shipped_folder() -> None:
    tree = README.split("## The project")[1]
    for folder in layout.PACKAGE_FOLDERS.values():
        top = folder.split("/")[0]
        assert f"\n    {top}/ " in tree, top


def test_every_command_readme_shows_is_run_as_written() -> None:
    assert sorted(shown_commands(README)) == sorted([*RUN_BY, *SANDBOXED])  # a new command needs a runner here
    for command, (path, runs) in RUN_BY.items():
        assert runs in path.read_text(encoding="utf-8"), (command, path)
    assert (ROOT / "tests" / "checkout" / "test_readme_commands.py").is_file()  # it runs the SANDBOXED ones


def test_readme_and_mutate_help_agree_on_the_default_tests_root(capsys: pytest.CaptureFixture[str]) -> None:
    from warnonce_guard.cli.main import main

    with pytest.raises(SystemExit):
        main(["mutate", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    default = shown.rpartition("--tests-root DIR")[2].partition("(default: ")[2].partition(")")[0]
    assert default == "the paths' nearest common folder"
    assert f"default: {default})" in README
