"""mutmut's settings for a run, written as the `[mutmut]` section of the workspace's setup.cfg.

mutmut reads its settings from the current directory's setup.cfg; these keys are mutmut 3.8.1's
(`mutmut.configuration`). `SETTINGS` are this project's, fixed; `write` adds what depends on the run:
the site files to mutate and the tests to run: the guards (copied into the workspace, settings of their own), or a
suite's paths (`mutate --tests`), run where they lie with their own settings and our recording plugin.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from warnonce_guard.common.files import write_atomic
from warnonce_guard.guards.isolation import isolated

if TYPE_CHECKING:  # an unchanged rerun keys its workspace with `section` and reads no suite
    from warnonce_guard.mutations.suite import Suite

# pytest's own plugins the guards' sessions do without: each hooks every session's start and most of every test's
# steps (the stats, clean and forced-fail sessions and the 18 mutants' took 40-60 ms less in all, paired on this
# machine). pytest's logging plugin hands its handler to every logger that does not propagate, three times a test
# (torch's and vLLM's: 43 of them, a tenth of a mutant's worker); the guards read the records themselves
# (`guards.observe`) and vLLM's own handler still writes to the captured output. Kept: what the guards or their
# diagnostics use (fixtures, capture, warnings, faulthandler).
UNUSED = (
    *("logging", "pastebin", "junitxml", "doctest", "legacypath"),
    *("setuponly", "setupplan", "stepwise", "unittest", "subtests"),
)

# The options of the guards' pytest sessions (mutmut's, and `session.complete_baseline`'s). pytest's
# unraisable-exception plugin runs a full gc.collect() at the end of every session, and mutmut starts a session per
# mutant: with torch imported that is about 0.3 s each; the guards collect for themselves, scanning only the objects
# a site created. mutmut runs pytest in the workspace's mutants/, which may lie in a vLLM checkout (`--work-dir`):
# none of the settings or conftest.py files above it apply. Nor do pytest's plugins the guards never use (`UNUSED`).
GUARD_ARGS = [
    *("-p", "no:cacheprovider", "-p", "no:unraisableexception"),
    *(option for plugin in UNUSED for option in ("-p", f"no:{plugin}")),
    *isolated("."),
]

SETTINGS: dict[str, str | list[str]] = {
    "process_isolation": "fork",  # one worker per mutant, forked from a session that imported vLLM once
    "timeout_multiplier": "15.0",
    "timeout_constant": "5.0",
    # The workspace's fingerprint decides whether verdicts stand (mutations.stage). mutmut's own change detection
    # would fork git twice from the process that imported vLLM, on the run's critical path, and in a checkout list
    # and hash every non-Python file git knows under the workspace.
    "use_git_change_detection": "false",
    "pytest_add_cli_args": GUARD_ARGS,
}


def _value(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(f"\n    {item}" for item in value)


# A suite's sessions: no cache written in its folder, and the plugin that records them (mutations.engine.suite_plugin)
SUITE_ARGS = ["-p", "no:cacheprovider", "-p", "warnonce_guard.mutations.engine.suite_plugin"]


def timeout_args(seconds: float | None) -> list[str]:
    """pytest's arguments for `mutate --timeout`: pytest-timeout loaded (no plugin loads by itself in the run's
    sessions), stopping each test past `seconds` by its signal method, which fails the test (`Timeout >Ns`)."""
    if seconds is None:
        return []
    return ["-p", "timeout", f"--timeout={seconds:g}", "--timeout-method=signal"]


def section(
    files: Iterable[str] = (), tests: str = "", suite: Suite | None = None, timeout: float | None = None
) -> str:
    """The `[mutmut]` section: the fixed settings, then the files to mutate and the tests: the guard tests' folder
    `tests`, or the paths of `suite`, each stopped past `timeout` seconds if given."""
    files = sorted(set(files))
    settings: dict[str, str | list[str]] = dict(SETTINGS)
    if files:
        settings |= {"source_paths": files, "only_mutate": files}
        if suite is None:
            settings |= {"also_copy": [f"{tests}/"], "pytest_add_cli_args_test_selection": [f"{tests}/"]}
        else:
            settings |= {"pytest_add_cli_args": SUITE_ARGS, "pytest_add_cli_args_test_selection": list(suite.paths)}
        settings["pytest_add_cli_args"] = [*settings["pytest_add_cli_args"], *timeout_args(timeout)]
    return "[mutmut]\n" + "".join(f"{key} = {_value(value)}\n" for key, value in settings.items())


def write(
    path: Path, files: Iterable[str], tests: str, suite: Suite | None = None, timeout: float | None = None
) -> None:
    """setup.cfg for one run (atomically): mutate `files`, run the guard tests in folder `tests` (or `suite`), each
    test stopped past `timeout` seconds if given."""
    header = "# Written by warnonce-guard for one mutation run (mutations/engine/config.py).\n"
    write_atomic(path, header + section(files, tests, suite, timeout))
