"""Fault injection: killed-by after a resumed run, on a tree of four sites, two in each import_kernels (so both
guards of a function run against each of its mutants, and either could kill it).

mutmut runs a mutant's guards fastest first, by the durations it measured; a run resumed on a machine that
measured otherwise (here: the measured durations swapped before the resume) ran them in another order and
credited mutants to another site's guard. The guards now run in one fixed order and the killer is one fixed
rule: the guard of the mutant's own site. The resumed run must report exactly what a clean run does.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from warnonce_guard.rule.site_row import Site

from tests.faults import (
    CleanRun,
    RunDirs,
    TreeShape,
    cli_args,
    fresh_dirs,
    read_verdicts,
    rerun_of,
    start,
    survivors,
    wait_until,
)

pytestmark = pytest.mark.slow

ATTEMPTS = 3


@pytest.fixture(scope="module")
def fault_shape() -> TreeShape:
    return TreeShape(guard_sleep_s=0.3, kernels=("_C", "_moe_C"), platforms=("cpu",))


def own_guards(work: Path) -> dict[str, str]:
    """Each mutant's own site, as its guard's parameter id in a node id (`[interface-Platform...-0]`)."""
    (ws,) = [p for p in work.iterdir() if p.is_dir()]
    sites = {s["id"]: Site.from_json(s) for s in json.loads((ws / "sites.json").read_text(encoding="utf-8"))}
    named = json.loads((ws / "identities.json").read_text(encoding="utf-8"))
    return {m["mutant_id"]: f"[{sites[m['site_id']].test_id}]" for m in named}


def swap_measured_durations(dirs: RunDirs) -> None:
    """What mutmut measured, reversed: the guards it ran fastest first now run last."""
    for stats in dirs.glob("mutants/mutmut-stats.json"):
        data = json.loads(stats.read_text(encoding="utf-8"))
        tests = sorted(data["duration_by_test"], key=data["duration_by_test"].get)
        durations = sorted(data["duration_by_test"].values(), reverse=True)
        data["duration_by_test"] = dict(zip(tests, durations, strict=True))
        stats.write_text(json.dumps(data), encoding="utf-8")


def test_every_mutant_of_a_clean_run_is_killed_by_its_own_sites_guard(clean_run: CleanRun) -> None:
    own = own_guards(clean_run.work)
    assert len(own) == 12
    for mutant, (status, _, killed_by) in clean_run.verdicts.mutants.items():
        assert status == "Killed" and len(killed_by) == 1 and killed_by[0].endswith(own[mutant]), (mutant, killed_by)


def test_a_resumed_run_credits_every_mutant_to_the_same_guard_as_a_clean_run(
    untouched_user_tree: Path,
    small_viewer: Path,
    clean_run: CleanRun,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    misses = []
    for dirs in fresh_dirs(tmp_path, untouched_user_tree, "resumed"):
        started = start(cli_args(dirs.tree, dirs.out, dirs.work, small_viewer), tmp_path, dirs.work.parent / "logs")
        if wait_until(lambda dirs=dirs: dirs.finished_mutants() > 0, started.proc, timeout=120):
            started.proc.send_signal(signal.SIGINT)
        code = started.wait(timeout=120)
        assert survivors(dirs.work) == []
        finished = dirs.finished_mutants()
        if code == 130 and 0 < finished < 12:
            break
        misses.append(f"exit {code} with {finished} mutant(s) finished")
        if len(misses) == ATTEMPTS:
            pytest.skip(f"could not interrupt the mutants phase: {'; '.join(misses)}")

    swap_measured_durations(dirs)
    resumed = rerun_of(dirs, small_viewer, cwd=tmp_path)

    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert read_verdicts(dirs.out) == clean_run.verdicts  # status, operator and killed-by of every mutant
    record_property("outcome", f"interrupted with {finished} of 12 mutants finished; resumed exit {resumed.returncode}")
