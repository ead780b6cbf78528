"""Every pytest session of a suite's run starts from one state: the session's process before any test ran.

mutmut's `ForkRunner` runs its stats, clean and forced-fail sessions in the process that then forks a worker per
mutant, so a worker (and a confirmation re-run, forked after them: `engine.confirm`) would start where those sessions
left the process: vLLM's once-caches warm, module state changed. A test of once-semantics (a warning logged once over
two calls) then fails on the unmutated code when run a second time, and is called flaky. `fork_runner` is mutmut's
`get_mutant_runner` for a suite: those sessions run in forked children too, as mutmut's own fork-server runner runs
them, so every session (stats, clean run, each mutant, each re-run) starts from the same pre-test state: the suite
collected once in this process (its modules imported, as pytest imports them all before its first test; what a
mutated function does on import recorded for the stats), no test run; and what the target's logger imports when a
`*_once` method is first called (vLLM's scope check imports vllm.distributed: 0.16 s in every session otherwise, a
third of the exported test's `mutate --tests`). The guards keep mutmut's runner: they clear the once-caches they
use, and their sites' modules are imported once, by the stats.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import io
import sys
from pathlib import Path
from typing import Any

from warnonce_guard.common.errors import EngineFailed
from warnonce_guard.mutations.engine import running, workers
from warnonce_guard.mutations.engine.seam import FORKED, STATS_PHASE


class SessionCannotStart(Exception):
    """A suite's session on the unmutated code could not start (pytest's exit status 4)."""


def imported_when_called(module: str) -> list[str]:
    """The modules the `*_once` functions and methods of `module` (imported already) import when they run: the
    absolute `import`s written inside them and inside the functions they call (`f(...)`, `self.f(...)`), in source
    order; none when it is not imported or its source cannot be read. Not what another function imports (vLLM
    0.33.0's `_log_platform_warnings`: vllm.platforms), which a session's tests may never import."""
    try:
        tree = ast.parse(Path(sys.modules[module].__file__ or "").read_text(encoding="utf-8"))
    except (KeyError, OSError, SyntaxError, ValueError):
        return []
    functions = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    reached: set[ast.AST] = set()
    todo = [function for function in functions if function.name.endswith("_once")]
    while todo:
        function = todo.pop()
        reached.add(function)
        calls = [node.func for node in ast.walk(function) if isinstance(node, ast.Call)]
        called = {call.id if isinstance(call, ast.Name) else getattr(call, "attr", None) for call in calls}
        todo += [f for f in functions if f.name in called and f not in reached]
    found: list[str] = []
    for function in (f for f in functions if f in reached):
        for node in ast.walk(function):
            if isinstance(node, ast.Import):
                found += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.append(node.module)
    return list(dict.fromkeys(found))


def fork_runner(attribution: Path, logger: str) -> Any:
    """mutmut's `get_mutant_runner(max_workers)` whose runner runs every session on the unmutated code in a forked
    child, from a process where the suite is collected and what `logger`'s functions import is imported;
    `EngineFailed` naming the test that ended such a child (read from `attribution`: `engine.running`)."""
    from mutmut.configuration import config
    from mutmut.mutation.trampoline import get_mutant_under_test, set_mutant_under_test
    from mutmut.runners.harness import BadTestExecutionCommandsException, PytestRunner
    from mutmut.utils.file_utils import change_cwd
    from mutmut.workers.isolation import ForkRunner, ForkServerRunner, run_in_fork_with_result

    class PristineForkRunner(ForkRunner):  # type: ignore[misc, valid-type]
        collected = False

        def submit(self, *args: Any, **kwargs: Any) -> None:
            workers.contained(functools.partial(super().submit, *args, **kwargs))

        def _collect_once(self) -> None:
            """Collect the suite here, once, running no test (mutmut's fork-server warm-up), then import what the
            logger's functions import, under mutmut's stats phase: a mutated function that runs on import is a hit no
            test is credited with (`suite_plugin`). A collection (or an import) that fails fails again in the stats'
            child, which says why."""
            if self.collected:
                return
            self.collected = True
            previous = get_mutant_under_test()
            set_mutant_under_test(STATS_PHASE)
            selection = self.test_runner._pytest_add_cli_args_test_selection
            try:
                quiet = contextlib.redirect_stdout(io.StringIO())
                with contextlib.suppress(Exception, SystemExit), quiet, change_cwd("mutants"):
                    self.test_runner.execute_pytest(["--collect-only", "-qqq", *selection])
                for name in imported_when_called(logger):
                    with contextlib.suppress(Exception, SystemExit):
                        importlib.import_module(name)
            finally:
                set_mutant_under_test(previous)

        def startup(self) -> None:
            self._collect_once()
            super().startup()

        def _run_in_child(self, operation: Any) -> Any:
            """`operation(test_runner)` in a forked child: its value, or what it raised that mutmut's own session
            would have seen (pytest's exit status 4, a SystemExit, which is raised again here)."""
            self._collect_once()

            def child() -> dict[str, Any]:
                try:
                    return {"value": operation(self.test_runner)}
                except BadTestExecutionCommandsException as err:
                    return {"cannot start": str(err)}
                except SystemExit as stop:  # the child must not go on running this process's code
                    return {"exit": stop.code}
                except BaseException as err:  # nor when interrupted: mutmut's child catches only Exception
                    return {"raised": f"{type(err).__name__}: {err}"}

            try:
                result = run_in_fork_with_result(child)
            except ChildProcessError as err:
                raise EngineFailed(_ended(attribution, err)) from None
            if "cannot start" in result:
                raise SessionCannotStart(result["cannot start"])
            if "exit" in result:
                raise SystemExit(result["exit"])
            if "raised" in result:
                raise EngineFailed(f"the suite's session on the unmutated code raised {result['raised']}")
            return result["value"]

        def _exit_code_from_child(self, operation: Any) -> int:
            return int(self._run_in_child(operation))

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
