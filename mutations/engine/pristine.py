"""Every pytest session of a suite's run starts from one state: the session's process before any test ran.

mutmut's `ForkRunner` runs its stats, clean and forced-fail sessions in the process that then forks a worker per
mutant, so a worker (and a confirmation re-run, forked after them: `engine.confirm`) would start where those sessions
left the process: vLLM's once-caches warm, module state changed. A test of once-semantics (a warning logged once over
two calls) then fails on the unmutated code when run a second time, and is called flaky. `fork_runner` is mutmut's
`get_mutant_runner` for a suite: those sessions run in forked children too, as mutmut's own fork-server runner runs
them, so every session (stats, clean run, each mutant, each re-run) starts from the same pre-test state. The guards
keep mutmut's runner: they clear the once-caches they use, and their sites' modules are imported once, by the stats.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from warnonce_guard.common.errors import EngineFailed
from warnonce_guard.mutations.engine import running


class SessionCannotStart(Exception):
    """A suite's session on the unmutated code could not start (pytest's exit status 4)."""


# The methods of mutmut's fork-server runner that run a session in a child, each through `_run_in_child` or
# `_exit_code_from_child` (engine.seam checks they still do).
FORKED = ("collect_stats", "run_clean_tests", "run_forced_fail", "list_all_tests")


def fork_runner(attribution: Path) -> Any:
    """mutmut's `get_mutant_runner(max_workers)` whose runner runs every session on the unmutated code in a forked
    child; `EngineFailed` naming the test that ended such a child (read from `attribution`: `engine.running`)."""
    from mutmut.configuration import config
    from mutmut.runners.harness import BadTestExecutionCommandsException, PytestRunner
    from mutmut.workers.isolation import ForkRunner, ForkServerRunner, run_in_fork, run_in_fork_with_result

    class PristineForkRunner(ForkRunner):  # type: ignore[misc, valid-type]
        def _run_in_child(self, operation: Any) -> Any:
            def child() -> dict[str, Any]:
                try:
                    return {"value": operation(self.test_runner)}
                except BadTestExecutionCommandsException as err:
                    return {"cannot start": str(err)}

            try:
                result = run_in_fork_with_result(child)
            except ChildProcessError as err:
                raise EngineFailed(_ended(attribution, err)) from None
            if "cannot start" in result:
                raise SessionCannotStart(result["cannot start"])
            return result["value"]

        def _exit_code_from_child(self, operation: Any) -> int:
            return int(run_in_fork(lambda: operation(self.test_runner)))

    for name in FORKED:
        setattr(PristineForkRunner, name, getattr(ForkServerRunner, name))

    def get_mutant_runner(max_workers: int = 1) -> Any:
        runner = PytestRunner()
        runner.prepare_main_test_run()
        return PristineForkRunner(max_workers=max_workers, test_runner=runner, debug=config().debug)

    return get_mutant_runner


def _ended(attribution: Path, err: ChildProcessError) -> str:
    """Why a session on the unmutated code ended without a result: the test it was running, when one was."""
    try:
        pid, test = running.last_tests(attribution)[running.UNMUTATED]
    except KeyError:
        return f"its process ended without a result ({str(err).splitlines()[0]})"
    return f"{test} ended the process of the suite's session on the unmutated code (pid {pid}) before it finished"
