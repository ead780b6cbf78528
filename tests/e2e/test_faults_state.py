"""Fault injection: each state file of a finished run truncated, deleted, or replaced by JSON of another shape,
then a rerun in the same work directory must end with the clean run's verdicts.

Truncation is what a SIGKILL leaves in a file written in place (mutmut's mutants file and its stats are;
our own files are written atomically, so for them it stands for a damaged disk or a careless hand);
"foreign" is a file that parses but is not what the run wrote. Each case starts from a copy of the
clean run's complete work directory, so all that differs is the one damaged file.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.faults import CleanRun, cli_args, read_verdicts, run

pytestmark = [pytest.mark.slow, pytest.mark.long]

MUTANT = "vllm.platforms.interface.xǁPlatformǁimport_kernels__mutmut_2"
STATE_FILES = {  # in the workspace
    ".meta": "mutants/vllm/platforms/interface.py.meta",
    "sites.json": "sites.json",
    "identities.json": "identities.json",
    "generation.json": "generation.json",
    "staged.json": "staged.json",
    "mutmut-stats.json": "mutants/mutmut-stats.json",
    "guard-session": f"attribution/mutants/{MUTANT}.json",
    "mutants-file": "mutants/vllm/platforms/interface.py",  # mutmut's, holding the mutants
    "staged-file": "vllm/platforms/interface.py",  # the staged copy of the site file, which mutmut mutates
    "result.json": "result.json",  # the complete run's verdicts, reused while nothing changed
}
FOREIGN = {  # JSON that parses, of another shape
    ".meta": "[]",
    "sites.json": "[]",
    "identities.json": "[]",
    "generation.json": "[]",
    "staged.json": "[]",
    "mutmut-stats.json": "{}",
    "guard-session": "{}",
    "result.json": "{}",
}
CASES = [(name, how) for name in STATE_FILES for how in ("truncated", "deleted")] + [(n, "foreign") for n in FOREIGN]


def damage(path: Path, name: str, how: str) -> None:
    assert path.is_file(), f"the clean run left no {path}"
    if how == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif how == "deleted":
        path.unlink()
    else:
        path.write_text(FOREIGN[name], encoding="utf-8")


@pytest.mark.parametrize(("name", "how"), CASES, ids=[f"{name}-{how}" for name, how in CASES])
def test_damaged_state_then_rerun(
    name: str,
    how: str,
    untouched_user_tree: Path,
    small_viewer: Path,
    clean_run: CleanRun,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    work = tmp_path / "work"
    subprocess.run(["cp", "-a", str(clean_run.work), str(work)], check=True)  # hard links kept
    (ws,) = [path for path in work.iterdir() if path.is_dir()]
    damage(ws / STATE_FILES[name], name, how)
    if name != "result.json":  # else the rerun would reuse the stored verdicts and never read the damaged file
        (ws / "result.json").unlink()

    rerun = run(cli_args(untouched_user_tree, tmp_path / "report", work, small_viewer), cwd=tmp_path)

    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "Traceback" not in rerun.stdout + rerun.stderr
    assert read_verdicts(tmp_path / "report") == clean_run.verdicts
    said = [line for line in rerun.stdout.splitlines() if line.startswith("warnonce-guard: ")]
    record_property("outcome", f"rerun exit {rerun.returncode}; said {said}")
