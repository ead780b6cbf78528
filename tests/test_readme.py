"""README.md states what the code does: its operator table and its two commands."""

from __future__ import annotations

from pathlib import Path

from guards.liveness import EXAMPLES
from mutations.operators import describe_operators

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
CI = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text(encoding="utf-8")


def test_readme_operator_table_lists_every_operator_with_its_example() -> None:
    table = README.split("<!-- operators:start")[1].split("<!-- operators:end -->")[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert rows == [f"| `{name}` | {text} | `{example}` |" for name, text, example in describe_operators()]


def test_ci_runs_the_readme_test_command_and_the_main_job() -> None:
    assert "python3 -m nox -s tests" in README and "python3 -m nox -s tests" in CI
    assert "python3 -m nox -s mutation" in README and "python3 -m nox -s mutation" in CI


def test_readme_liveness_table_is_the_policys_examples() -> None:
    table = README.split("<!-- liveness:start")[1].split("<!-- liveness:end -->")[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert rows == [f"| `{e.argument}` | {e.kind or 'safe: no finding'} |" for e in EXAMPLES]
