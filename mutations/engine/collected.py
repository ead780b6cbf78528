"""The guards collected once, in the session's process, when mutmut's runner starts: each worker mutmut forks for a
mutant, and each confirmation re-run (`engine.confirm`), runs its guards in that collected session rather than
starting pytest again. pytest's start (options, plugins, the guards' conftest and collection) was two thirds of a
worker's CPU; the guards themselves take 1 to 12 ms.

A worker runs its tests as `pytest.main` would in a session of its own, from the same pre-test state: the hooks that
end a collection see its selection (`pytest_collection_modifyitems`: the guards order it and, in a mutant's session,
learn the mutated function's sites), pytest's test loop runs it (stopping where `-x` and the guards' own stop say),
`pytest_sessionfinish` ends it (the guards write their records), and its exit status is pytest's. When the guards
cannot be collected here (pytest's internals moved, a collection error), each worker starts pytest as mutmut's do,
which says why. Only the guards: a suite's tests keep a pytest session per run (`engine.pristine`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

# pytest's exit statuses (pytest.ExitCode), as its sessions end
OK, TESTS_FAILED, INTERRUPTED, INTERNAL_ERROR, NO_TESTS_COLLECTED = 0, 1, 2, 3, 5
PYTEST_VERSION = "PYTEST_VERSION"  # pytest.main's variable, set while it runs


class Guards:
    """The guards' pytest session in this process, collected, no test run yet (None until `collect` succeeds)."""

    def __init__(self) -> None:
        self.session: Any = None
        self.folder = ""  # where the session was collected: every run of it runs there
        self.why_not = ""  # why the last `collect` left none
        self._nowhere: Any = None  # the null device, where the session's reporter writes

    def collect(self, args: list[str], folder: str) -> None:
        """Configure and collect a pytest session of `args` in `folder`, running no test; its output (pytest's
        reporter, its global capture's) goes nowhere, as a worker's does. Any session collected before is closed."""
        self.close()
        try:
            from _pytest.config import _prepareconfig
            from _pytest.main import Session
        except ImportError as err:
            self.why_not = f"pytest's internals moved ({err})"
            return
        previous, folder = os.getcwd(), os.path.abspath(folder)
        self._nowhere = open(os.devnull, "w")  # noqa: SIM115 - the session's reporter keeps it, closed by `close`
        # its reporter, its capture's original streams and faulthandler's file are the null device, as in a worker
        # (whose streams mutmut points there), never the session's log
        with contextlib.redirect_stdout(self._nowhere), contextlib.redirect_stderr(self._nowhere), _pytest_version():
            os.chdir(folder)
            config = None
            try:
                config = _prepareconfig(list(args), None)
                config._do_configure()
                session = Session.from_config(config)
                config.hook.pytest_sessionstart(session=session)
                config.hook.pytest_collection(session=session)
            except (Exception, SystemExit) as err:  # a usage error, a conftest that fails: pytest.main says which
                self.why_not = f"{type(err).__name__}: {err}".splitlines()[0]
                _unconfigure(config)
                return
            finally:
                os.chdir(previous)
        if session.testsfailed:
            self.why_not = f"{session.testsfailed} error(s) during collection"
            _unconfigure(config)
            return
        self.session, self.folder, self.why_not = session, folder, ""

    def run(self, tests: Sequence[str]) -> int | None:
        """Run `tests` (node ids, in the session's order) in the collected session, as a pytest session of their
        own would, in this process, which must be a forked child: pytest's exit status; None when there is no
        collected session or a test is not among its items."""
        session = self.session
        if session is None:
            return None
        by_id = {item.nodeid: item for item in session.items}
        if not tests or any(test not in by_id for test in tests):
            return None
        items = [by_id[test] for test in dict.fromkeys(tests)]
        config = session.config
        os.environ[PYTEST_VERSION] = pytest.__version__  # as pytest.main sets it
        os.chdir(self.folder)
        capture = config.pluginmanager.get_plugin("capturemanager")
        if capture is not None:  # capture into files of this process's own, not the ones every worker inherited
            capture.stop_global_capturing()
            capture.start_global_capturing()
            capture.suspend_global_capture()
        try:
            config.hook.pytest_collection_modifyitems(session=session, config=config, items=items)
            session.items, session.testscollected = items, len(items)
            session.exitstatus = _loop(session)
        except BaseException:  # as pytest.main: an internal error, and the session still ends
            session.exitstatus = INTERNAL_ERROR
        try:
            config.hook.pytest_sessionfinish(session=session, exitstatus=session.exitstatus)
        except pytest.exit.Exception as stop:  # as pytest.main: its code, if it gives one
            if stop.returncode is not None:
                session.exitstatus = stop.returncode
        except BaseException:  # never back into the caller's code: this process is a worker, its status is all
            return INTERNAL_ERROR
        return int(session.exitstatus)

    def close(self) -> None:
        """Unconfigure the collected session (its plugins' `pytest_unconfigure`, pytest's cleanups), if any."""
        session, self.session = self.session, None
        if session is not None:
            _unconfigure(session.config)
        if self._nowhere is not None:
            self._nowhere.close()
            self._nowhere = None


@contextlib.contextmanager
def _pytest_version() -> Iterator[None]:
    """`PYTEST_VERSION` set within the block, as `pytest.main` sets it while it runs (a conftest may read it)."""
    before = os.environ.get(PYTEST_VERSION)
    os.environ[PYTEST_VERSION] = pytest.__version__
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(PYTEST_VERSION, None)
        else:
            os.environ[PYTEST_VERSION] = before


def _loop(session: Any) -> int:
    """pytest's test loop over `session.items` and the exit status `pytest.main` gives it (`_pytest.main`'s
    `wrap_session` and `_main`)."""
    config = session.config
    try:
        config.hook.pytest_runtestloop(session=session)
    except session.Failed:
        return TESTS_FAILED
    except (KeyboardInterrupt, pytest.exit.Exception) as stop:  # session.Interrupted, pytest.exit
        code = getattr(stop, "returncode", None)
        return int(code) if code is not None else INTERRUPTED
    except Exception:
        return INTERNAL_ERROR
    return TESTS_FAILED if session.testsfailed else OK if session.testscollected else NO_TESTS_COLLECTED


def _unconfigure(config: Any) -> None:
    """End `config` (pytest's `_ensure_unconfigure`), keeping this process's standard streams: pytest's capture puts
    back the ones it found when it started, the null device of `Guards.collect`."""
    if config is not None:
        streams = sys.stdin, sys.stdout, sys.stderr
        with contextlib.suppress(Exception):
            config._ensure_unconfigure()
        sys.stdin, sys.stdout, sys.stderr = streams


def fork_runner(guards: Guards) -> Callable[[int], Any]:
    """mutmut's `get_mutant_runner(max_workers)` whose runner collects the guards into `guards` as it starts (after
    mutmut's stats, clean and forced-fail sessions) and whose workers run their mutant's guards there."""
    from mutmut.configuration import config
    from mutmut.runners.harness import PytestRunner
    from mutmut.workers.isolation import ForkRunner
    from warnonce_guard.mutations.engine import workers

    class CollectedPytestRunner(PytestRunner):  # type: ignore[misc, valid-type]
        def run_tests(self, *, mutant_name: str | None, tests: Any) -> int:
            """A mutant's tests in the collected session (mutmut runs them only in the worker it forked for it);
            anything else, or what that session cannot run, as mutmut runs it."""
            code = guards.run(list(tests)) if mutant_name else None
            return code if code is not None else int(super().run_tests(mutant_name=mutant_name, tests=tests))

        def collection_args(self) -> list[str]:
            """The arguments of mutmut's sessions of every test (`execute_pytest` of `_pytest_args_regular_run`), but
            no traceback: the session's output goes nowhere (unless mutmut debugs), and formatting each failing
            guard's (each killed mutant's) was a fifth of a worker's time."""
            debug = config().debug
            tb = "--tb=native" if debug else "--tb=no"
            args = ["--rootdir=.", tb, *self._pytest_args_regular_run([]), *self._pytest_add_cli_args]
            return ["-vv", *args] if debug else args

    class CollectedForkRunner(ForkRunner):  # type: ignore[misc, valid-type]
        def submit(self, *args: Any, **kwargs: Any) -> None:
            workers.contained(functools.partial(super().submit, *args, **kwargs))

        def startup(self) -> None:
            guards.collect(self.test_runner.collection_args(), "mutants")
            if guards.why_not:
                print(f"the guards were not collected once ({guards.why_not}); each worker starts pytest", flush=True)
            super().startup()

    def get_mutant_runner(max_workers: int = 1) -> Any:
        runner = CollectedPytestRunner()
        runner.prepare_main_test_run()
        return CollectedForkRunner(max_workers=max_workers, test_runner=runner, debug=config().debug)

    return get_mutant_runner
