"""The mutmut run itself, in a process of its own inside the work directory.

    python -m mutations.session WORK_DIR RUN_ID

mutmut reads setup.cfg from the current directory, changes sys.path, forks workers and calls exit(),
so it gets a process to itself. There, with our operators swapped in (mutations.seam), mutmut
generates the mutants, collects which guard covers which function, runs the clean guards (our
baseline) and then every mutant in forked workers: vLLM is imported once. Meanwhile the parent
names every mutant (mutations.identify) on the other core.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from guards.errors import GuardError
from mutations.seam import our_operators


def _environment(ws: Path, run_id: str) -> None:
    os.environ.update(
        WARNONCE_GUARD_SITES=str(ws / "sites.json"),
        WARNONCE_GUARD_ATTRIBUTION=str(ws / "attribution"),
        WARNONCE_GUARD_EXPECT_VLLM=str(ws / "mutants" / "vllm"),
        WARNONCE_GUARD_RUN_ID=run_id,
        WARNONCE_GUARD_EVIDENCE="0",  # verdicts and detectors only: no referrer chains (see guards.drive)
    )
    os.environ.pop("WARNONCE_GUARD_VLLM_SRC", None)


def staged_packages(ws: Path) -> list[str]:
    return json.loads((ws / "packages.json").read_text(encoding="utf-8"))


def run_mutmut(packages: list[str]) -> int:
    """mutmut's `run` with our operators; its exit code (mutmut exits 1 when the clean guards fail)."""
    from mutmut.__main__ import _run

    with our_operators(packages):
        try:
            _run([], max_children=None)
        except SystemExit as stop:
            return stop.code if isinstance(stop.code, int) else 1
    return 0


def complete_baseline(ws: Path) -> int:
    """Run every guard once on the unmutated code, without stopping at the first failure.

    mutmut stops at the first failing guard when the target itself leaks (its stats and clean runs
    use `-x`), which would leave the other sites unjudged. vLLM is already imported in this process,
    so this costs only the guards themselves.
    """
    import pytest
    from mutmut.mutation.trampoline import set_mutant_under_test

    set_mutant_under_test("")
    os.chdir(ws / "mutants")
    try:
        return int(pytest.main(["guard_tests", "-q", "-p", "no:cacheprovider", "--rootdir=.", "--tb=no"]))
    finally:
        os.chdir(ws)


def main(argv: list[str]) -> int:
    ws, run_id = Path(argv[0]).resolve(), argv[1]
    os.chdir(ws)
    _environment(ws, run_id)
    try:
        code = run_mutmut(staged_packages(ws))
    except GuardError as err:  # e.g. the operator seam moved in a new mutmut
        print(f"warnonce-guard: error: {err}", file=sys.stderr)
        return err.exit_code
    if code != 0:
        complete_baseline(ws)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
