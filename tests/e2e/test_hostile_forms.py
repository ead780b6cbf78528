"""The guarded import is the site (issue 40), on vLLM 0.33.0 itself: a leak written in any form at a site, whatever
discovery reads of its handler, fails the site's guard naming it and its detectors, and the mutation run reports the
site exposed. Six forms a tree (vLLM has six guarded sites; the ARM-branch site of cpu.py takes the first)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from rich.console import Console
from warnonce_guard.common.errors import ExitCode
from warnonce_guard.guards.detectors import EXCEPTION_RETAINED, OWNER_PINNED, WARNING_REPEATED
from warnonce_guard.mutations.run import mutate

from tests.hostile_forms import FORMS, hostile_tree
from tests.toy import CLI, INTERFACE, make_tree

pytestmark = pytest.mark.slow

ALL = sorted(FORMS)
SETS = [ALL[:6], ALL[6:]]


@pytest.mark.parametrize("forms", SETS, ids=["first-six", "last-six"])
def test_a_leak_in_any_form_fails_its_guard_naming_the_site_and_its_detectors(tmp_path: Path, forms: list[str]) -> None:
    tree, chosen = hostile_tree(tmp_path / "tree", forms)
    guards = [*CLI, "guards", "-q", "-p", "no:randomly", "--vllm-src", str(tree)]
    done = subprocess.run(guards, capture_output=True, text=True, timeout=900, check=False)

    assert done.returncode == ExitCode.CHECK_FAILED, done.stderr
    assert f"{len(chosen)} failed" in done.stdout.splitlines()[-1]
    for site_id, form in chosen.items():
        head = next(line for line in done.stdout.splitlines() if line.startswith("E") and f": {site_id} (line " in line)
        said = done.stdout[done.stdout.index(head) :].split("\n\n", 1)[0]
        for detector in (EXCEPTION_RETAINED, OWNER_PINNED, WARNING_REPEATED):
            assert f"- {detector}: " in said, (form, said)


def test_the_mutation_run_reports_every_hostile_site_exposed(tmp_path: Path) -> None:
    tree, chosen = hostile_tree(tmp_path / "tree", SETS[0])
    out = tmp_path / "report"

    code = mutate(str(tree), out, tmp_path / "work", 100.0, None, Console(width=200))

    assert code == ExitCode.CHECK_FAILED
    summary = (out / "summary.md").read_text(encoding="utf-8")
    for site_id, form in chosen.items():
        (row,) = [line for line in summary.splitlines() if line.startswith(f"| `{site_id}` |")]
        assert "| **exposed** | exception retained, owner pinned, warning repeated" in row, (form, row)
    assert "6 sites: 0 guarded, 6 exposed, 0 unreached." in summary


def test_a_site_an_except_star_guards_is_guarded_and_each_mutant_of_it_killed(tmp_path: Path) -> None:
    """`except* ImportError as e` guards a kernel import as `except ImportError` does (its `e` a group holding the
    failure): it was walked past, no site, no mutant, a silent pass."""
    starred = INTERFACE.replace("except ImportError as e:", "except* ImportError as e:")
    assert starred != INTERFACE
    tree = make_tree(tmp_path / "tree", starred)
    out = tmp_path / "report"

    code = mutate(str(tree), out, tmp_path / "work", 100.0, None, Console(width=200))

    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert code == ExitCode.OK, summary
    assert "**Mutation score:** 100.00% (3 killed of 3 reached)" in summary
    assert "1 sites: 1 guarded, 0 exposed, 0 unreached." in summary
