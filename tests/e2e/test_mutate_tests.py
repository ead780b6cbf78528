"""`mutate --tests`: the mutants scored by a pytest suite of the user's, end to end on a small vLLM-shaped tree.

The tree has three sites, each met by the suite in its own way: one a test checks (its mutants are killed, by that
test), one a test runs without checking (they survive), one that runs only when a test module is imported (no test
reaches it). A fourth test fails on the unmutated code: it is listed, left out, never a kill.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from rich.console import Console
from warnonce_guard.common.errors import EngineFailed, ExitCode, NothingToCheck, PathUnusable, PlatformImportFailed
from warnonce_guard.mutations.run import mutate

from tests.toy import EAGER_CALL, PLATFORM_SOURCE, make_tree, write
from tools.toy_vllm import LOGGER_SOURCE

pytestmark = [pytest.mark.slow, pytest.mark.long]


def platform(name: str) -> str:
    return PLATFORM_SOURCE.replace("CALL", EAGER_CALL).replace("PKG", "vllm").replace("class Platform", f"class {name}")


CHECKED = """\
    import gc
    import logging
    import weakref

    from vllm.logger import _print_warning_once
    from vllm.platforms.interface import Platform


    class Owner:
        def __init__(self):
            Platform.import_kernels()
            Platform.import_kernels()


    def test_the_kernel_warning_is_logged_once_and_pins_nothing(caplog):
        _print_warning_once.cache_clear()  # another session of this process may have logged it
        caplog.set_level(logging.WARNING)
        owner = Owner()
        ref = weakref.ref(owner)
        del owner
        gc.collect()
        assert ref() is None, "the owner is pinned"
        logged = [r.getMessage() for r in caplog.records]
        assert logged == ["Failed to import from vllm._C: ModuleNotFoundError(\\"No module named 'vllm._C'\\")"]


    def test_broken_from_the_start():
        assert False, "this test fails on the unmutated code"
    """
UNCHECKED = """\
    from vllm.platforms.weak import Weak


    def test_runs_the_kernel_import_and_checks_nothing():
        Weak.import_kernels()
    """
AT_IMPORT = """\
    from vllm.platforms.imported import Imported

    Imported.import_kernels()  # on import, as vllm/_custom_ops.py calls it


    def test_something_else():
        assert Imported is not None
    """


def make_suite_tree(tmp_path: Path) -> tuple[Path, Path]:
    tree = make_tree(tmp_path / "tree")
    write(tree, "vllm/platforms/weak.py", platform("Weak"))
    write(tree, "vllm/platforms/imported.py", platform("Imported"))
    suite = tmp_path / "suite"
    sources = {"test_checked.py": CHECKED, "test_unchecked.py": UNCHECKED, "test_at_import.py": AT_IMPORT}
    for name, source in sources.items():
        write(suite, f"tests/{name}", textwrap.dedent(source))
    return tree, suite


def run(
    tree: Path,
    tmp_path: Path,
    *tests: str,
    root: Path | None = None,
    console: Console | None = None,
    timeout: float | None = None,
    confirm: int | None = None,
) -> int:
    return mutate(
        str(tree),
        tmp_path / "report",
        tmp_path / "work",
        100.0,
        None,
        console or Console(width=240, record=True),
        tests=list(tests),
        tests_root=str(root) if root else None,
        timeout=timeout,
        confirm=confirm,
    )


def verdicts(out: Path) -> dict[str, list[dict[str, object]]]:
    report = json.loads((out / "mutation.json").read_text())
    return {file: data["mutants"] for file, data in report["files"].items()}


def test_each_mutant_is_killed_by_the_test_that_checks_it_survives_one_that_does_not_or_is_not_reached(
    tmp_path: Path,
) -> None:
    tree, suite = make_suite_tree(tmp_path)
    console = Console(width=240, record=True)
    code = run(tree, tmp_path, str(suite / "tests"), root=suite, console=console)

    assert code == ExitCode.CHECK_FAILED  # 3 of 9 killed: below --fail-under 100
    found = verdicts(tmp_path / "report")
    checked, weak, imported = (found[f"vllm/platforms/{name}.py"] for name in ("interface", "weak", "imported"))
    assert len(checked) == len(weak) == len(imported) == 3
    killer = "tests/test_checked.py::test_the_kernel_warning_is_logged_once_and_pins_nothing"
    assert {(m["status"], tuple(m["killedBy"])) for m in checked} == {("Killed", (killer,))}
    assert {m["status"] for m in weak} == {"Survived"}
    unchecked = "tests/test_unchecked.py::test_runs_the_kernel_import_and_checks_nothing"
    assert {tuple(m["coveredBy"]) for m in weak} == {(unchecked,)}
    assert {m["status"] for m in imported} == {"NoCoverage"}
    assert all("runs only while the suite is collected" in m["statusReason"] for m in imported)

    report = json.loads((tmp_path / "report" / "mutation.json").read_text())
    broken = "tests/test_checked.py::test_broken_from_the_start"
    assert report["config"]["failingOnUnmutated"] == {broken: "AssertionError: this test fails on the unmutated code"}
    named = f"the tests tests (pytest in {suite})"
    assert report["config"]["scoredBy"] == named
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert named in summary.splitlines()[0] and "test_broken_from_the_start" in summary
    junit = (tmp_path / "report" / "junit.xml").read_text()
    assert f'name="scored_by" value="{named}"' in junit
    shown = console.export_text()
    assert f"Scored by {named}" in shown and "1 test(s) fail on the unmutated code, left out:" in shown
    assert "Mutation score: 33.33% (3 killed of 6 reached, 3 not reached)" in shown


# Fails the first time it meets each mutant, passes from then on: every kill it makes is one a re-run does not see.
FLAKY = """\
    import os
    from pathlib import Path

    from vllm.platforms.weak import Weak

    MET = Path(MET_FOLDER)


    def test_fails_the_first_time_it_meets_each_mutant():
        Weak.import_kernels()
        mutant = os.environ.get("MUTANT_UNDER_TEST", "")
        if "__mutmut_" in mutant and not (MET / mutant).exists():
            (MET / mutant).touch()
            raise AssertionError("a kill a re-run does not see")
    """


def test_a_flaky_tests_kills_are_never_counted_and_a_deterministic_tests_kills_stand(tmp_path: Path) -> None:
    tree, suite = make_suite_tree(tmp_path)
    (tmp_path / "met").mkdir()
    write(suite, "tests/test_flaky.py", textwrap.dedent(FLAKY).replace("MET_FOLDER", repr(str(tmp_path / "met"))))
    (suite / "tests" / "test_unchecked.py").unlink()
    console = Console(width=240, record=True)

    assert run(tree, tmp_path, str(suite / "tests"), root=suite, console=console) == ExitCode.CHECK_FAILED

    found = verdicts(tmp_path / "report")
    checked, weak = found["vllm/platforms/interface.py"], found["vllm/platforms/weak.py"]
    assert {m["status"] for m in checked} == {"Killed"}  # confirmed: twice on each mutant and the unmutated code
    flaky = "tests/test_flaky.py::test_fails_the_first_time_it_meets_each_mutant"
    assert {m["status"] for m in weak} == {"Survived"} and all(flaky in m["statusReason"] for m in weak)
    report = json.loads((tmp_path / "report" / "mutation.json").read_text())
    assert list(report["config"]["flakyTests"]) == [flaky] and report["config"]["confirmedBy"] == 2
    shown = console.export_text()
    assert f"gate: {flaky} is flaky: passed when re-run on vllm.platforms.weak." in shown
    assert "Mutation score: 33.33% (3 killed of 6 reached, 3 not reached, 3 killed only by flaky tests" in shown


# Waits for an acknowledgement that never comes once the kernel warning is logged twice: it hangs on a mutant.
HANGS_ON_A_MUTANT = """\
    import logging
    import threading

    from vllm.platforms.weak import Weak


    def test_the_kernel_warning_is_acknowledged_once():
        seen = []
        handler = logging.Handler()
        handler.emit = lambda record: seen.append(record.getMessage())
        logging.getLogger("vllm.platforms.weak").addHandler(handler)
        Weak.import_kernels()
        Weak.import_kernels()
        if len(seen) > 1:
            threading.Event().wait()
    """


def test_a_test_that_hangs_on_a_mutant_is_stopped_by_the_timeout_and_its_mutant_is_a_timeout_naming_it(
    tmp_path: Path,
) -> None:
    tree, suite = make_suite_tree(tmp_path)
    write(suite, "tests/test_unchecked.py", textwrap.dedent(HANGS_ON_A_MUTANT))

    assert (
        run(tree, tmp_path, str(suite / "tests" / "test_unchecked.py"), root=suite, timeout=1) == ExitCode.CHECK_FAILED
    )

    weak = verdicts(tmp_path / "report")["vllm/platforms/weak.py"]
    hanging = "tests/test_unchecked.py::test_the_kernel_warning_is_acknowledged_once"
    assert {(m["status"], m["statusReason"]) for m in weak} == {
        ("Timeout", f"{hanging} ran past --timeout (Failed: Timeout >1.0s)")
    }


def test_a_node_id_picks_one_test_and_the_others_reach_nothing(tmp_path: Path) -> None:
    tree, suite = make_suite_tree(tmp_path)
    node = str(suite / "tests" / "test_unchecked.py") + "::test_runs_the_kernel_import_and_checks_nothing"
    assert run(tree, tmp_path, node, root=suite) == ExitCode.CHECK_FAILED
    found = verdicts(tmp_path / "report")
    assert {m["status"] for m in found["vllm/platforms/weak.py"]} == {"Survived"}
    assert {m["status"] for m in found["vllm/platforms/interface.py"]} == {"NoCoverage"}


def test_a_changed_test_is_a_new_workspace_never_a_stale_verdict(tmp_path: Path) -> None:
    tree, suite = make_suite_tree(tmp_path)
    target = suite / "tests" / "test_unchecked.py"
    assert run(tree, tmp_path, str(target), root=suite) == ExitCode.CHECK_FAILED
    checking = textwrap.dedent(UNCHECKED).replace("Weak.import_kernels()", "Weak.import_kernels()\n    assert False")
    target.write_text(checking)  # a test that fails on the unmutated code now: left out, nothing reaches the site
    assert run(tree, tmp_path, str(target), root=suite) == ExitCode.CHECK_FAILED
    assert {m["status"] for m in verdicts(tmp_path / "report")["vllm/platforms/weak.py"]} == {"NoCoverage"}
    assert len([p for p in (tmp_path / "work").iterdir() if p.is_dir()]) == 2


def test_a_suite_that_collects_no_test_checked_nothing(tmp_path: Path) -> None:
    tree, suite = make_suite_tree(tmp_path)
    write(suite, "empty/test_nothing.py", "VALUE = 1\n")
    with pytest.raises(NothingToCheck, match="collected no test"):
        run(tree, tmp_path, str(suite / "empty"), root=suite)
    assert not (tmp_path / "report").exists()


def test_a_suite_that_cannot_be_collected_is_one_line_naming_it(tmp_path: Path) -> None:
    tree, suite = make_suite_tree(tmp_path)
    write(suite, "broken/conftest.py", "import a_module_nobody_installed  # noqa: F401\n")
    write(suite, "broken/test_x.py", "def test_x():\n    pass\n")
    path = list(sys.path)
    with pytest.raises(PlatformImportFailed, match="could not be run on the unmutated code") as raised:
        run(tree, tmp_path, str(suite / "broken"), root=suite)
    assert "\n" not in str(raised.value) and not (tmp_path / "report").exists()
    assert sys.path == path  # the tree is not left first on it: a later `import vllm` here finds the installed one


def test_tests_outside_the_root_are_refused_before_any_work(tmp_path: Path) -> None:
    tree, suite = make_suite_tree(tmp_path)
    with pytest.raises(PathUnusable, match="outside --tests-root"):
        run(tree, tmp_path, str(suite / "tests"), root=tmp_path / "tree")
    assert not (tmp_path / "work").exists()


def test_the_exported_test_kills_every_mutant_of_the_installed_vllm_each_by_its_own_sites_case(tmp_path: Path) -> None:
    from warnonce_guard.upstream.export import listed_cases

    from tests.exported_support import COMMITTED

    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / COMMITTED.name).write_bytes(COMMITTED.read_bytes())
    console = Console(width=240, record=True)
    code = mutate(
        None, tmp_path / "report", tmp_path / "work", 100.0, None, console, tests=[str(suite / COMMITTED.name)]
    )

    assert code == ExitCode.OK, console.export_text()
    cases = listed_cases(COMMITTED.read_text(encoding="utf-8"))
    assert cases is not None
    site_of = {case.id: case.site for case in cases}  # "vllm/platforms/cpu.py:670"
    killed = {
        (file, m["location"]["start"]["line"], m["status"], site_of[m["killedBy"][0].partition("[")[2].rstrip("]")])
        for file, mutants in verdicts(tmp_path / "report").items()
        for m in mutants
    }
    assert len([m for ms in verdicts(tmp_path / "report").values() for m in ms]) == 18
    assert {(file, line, status) for file, line, status, _ in killed} == {
        (case.site.partition(":")[0], int(case.site.partition(":")[2]), "Killed") for case in cases
    }
    assert all(site == f"{file}:{line}" for file, line, _, site in killed)  # each by the case of its own site


# The test a vLLM maintainer writes first (issue 43): deterministic, and it needs the once-cache as a process starts.
LOGGED_ONCE = """\
    import logging

    from vllm.platforms.interface import Platform


    def test_kernel_warning_is_logged_once(caplog):
        caplog.set_level(logging.WARNING)
        Platform.import_kernels()
        Platform.import_kernels()
        hits = [r for r in caplog.records if "Failed to import from vllm._C" in r.getMessage()]
        assert len(hits) == 1
    """
# The same check in vLLM's own style: its tests/conftest.py's `caplog_vllm` (vLLM's loggers do not propagate to the
# root logger, where caplog listens), a module docstring, SPDX header.
VLLM_CONFTEST = """\
    # SPDX-License-Identifier: Apache-2.0
    import logging

    import pytest


    @pytest.fixture
    def temporary_enable_log_propagate():
        logger = logging.getLogger("vllm")
        logger.propagate = True
        yield
        logger.propagate = False


    @pytest.fixture
    def caplog_vllm(temporary_enable_log_propagate, caplog):
        yield caplog
    """
VLLM_STYLE = """\
    # SPDX-License-Identifier: Apache-2.0
    \"\"\"Kernel import failures are warned about once per process.\"\"\"
    import logging

    from vllm.platforms.interface import Platform


    def test_failed_kernel_import_is_warned_once(caplog_vllm):
        logging.getLogger("vllm").propagate = False  # as vLLM's logging config leaves it
        with caplog_vllm.at_level(logging.WARNING, logger="vllm"):
            logging.getLogger("vllm").propagate = True
            Platform.import_kernels()
            Platform.import_kernels()
        assert caplog_vllm.text.count("Failed to import from vllm._C") == 1
    """


def one_site_suite(tmp_path: Path, sources: dict[str, str]) -> tuple[Path, Path]:
    """A vLLM-shaped tree with one site (Platform.import_kernels, eager) and a suite of `sources` (name -> text)."""
    tree = make_tree(tmp_path / "tree")
    suite = tmp_path / "suite"
    for name, source in sources.items():
        write(suite, f"tests/{name}", textwrap.dedent(source))
    return tree, suite


@pytest.mark.parametrize(
    "sources",
    [{"test_once.py": LOGGED_ONCE}, {"conftest.py": VLLM_CONFTEST, "test_vllm_style.py": VLLM_STYLE}],
    ids=["the-issues-test", "vllms-style"],
)
def test_a_print_once_test_kills_every_mutant_it_reaches_each_session_starting_where_the_first_did(
    tmp_path: Path, sources: dict[str, str]
) -> None:
    tree, suite = one_site_suite(tmp_path, sources)
    console = Console(width=240, record=True)

    assert run(tree, tmp_path, str(suite / "tests"), root=suite, console=console) == ExitCode.OK, console.export_text()

    mutants = verdicts(tmp_path / "report")["vllm/platforms/interface.py"]
    (test,) = [f"tests/{name}" for name in sources if name.startswith("test_")]
    assert len(mutants) == 3 and {(m["status"], m["killedBy"][0].partition("::")[0]) for m in mutants} == {
        ("Killed", test)
    }
    report = json.loads((tmp_path / "report" / "mutation.json").read_text())
    assert report["config"].get("flakyTests", {}) == report["config"].get("failingOnUnmutated", {}) == {}
    assert "Mutation score: 100.00% (3 killed of 3 reached)" in console.export_text()


# vLLM's `*_once` methods import vllm.distributed on their first call (the scope check): a module the logger's functions
# import is imported once, before the first session, not again in every session (each forked from that state).
LAZY_LOGGER = LOGGER_SOURCE.replace(
    "def _warning_once(self, msg, *args):\n",
    "def _warning_once(self, msg, *args):\n    from vllm.lazy_scope import first_rank  # noqa: F401\n\n",
)
LAZY_SCOPE = """\
import os
from pathlib import Path

with (Path(__file__).parents[2] / "imported-by.log").open("a") as log:  # beside the tree, not in it
    log.write(f"{os.getpid()}\\n")


def first_rank():
    return True
"""


def test_what_the_loggers_functions_import_is_imported_once_before_the_sessions(tmp_path: Path) -> None:
    tree, suite = one_site_suite(tmp_path, {"test_once.py": LOGGED_ONCE})
    write(tree, "vllm/logger.py", LAZY_LOGGER)
    write(tree, "vllm/lazy_scope.py", LAZY_SCOPE)
    console = Console(width=240, record=True)

    assert run(tree, tmp_path, str(suite / "tests"), root=suite, console=console) == ExitCode.OK, console.export_text()

    assert "Mutation score: 100.00% (3 killed of 3 reached)" in console.export_text()
    assert len((tmp_path / "imported-by.log").read_text().splitlines()) == 1


# vLLM 0.33.0's logger also imports inside functions no `*_once` method calls (`_log_platform_warnings`:
# vllm.platforms); a module imported there may log at import (here the site's warning): imported before the
# sessions, that warning would be in every session's once-cache before its first test, which then logs none.
PLATFORM_LOGGER = (
    LOGGER_SOURCE
    + """

def _log_platform_warnings():
    from vllm.platform_warnings import logged  # noqa: F401
"""
)
PLATFORM_WARNINGS = """\
from vllm.platforms.interface import Platform

Platform.import_kernels()
logged = True
"""


def test_what_a_function_no_once_method_calls_imports_is_not_imported_before_the_sessions(tmp_path: Path) -> None:
    tree, suite = one_site_suite(tmp_path, {"test_once.py": LOGGED_ONCE})
    write(tree, "vllm/logger.py", PLATFORM_LOGGER)
    write(tree, "vllm/platform_warnings.py", PLATFORM_WARNINGS)
    console = Console(width=240, record=True)

    assert run(tree, tmp_path, str(suite / "tests"), root=suite, console=console) == ExitCode.OK, console.export_text()

    assert "Mutation score: 100.00% (3 killed of 3 reached)" in console.export_text()


# Fails at random (one time in two), on any code: whatever it kills, a re-run from the same state can disagree. To
# have a kill counted it must pass twice on the unmutated code (mutmut's first session and clean run), then, for each
# of its K kills, fail N more times on the mutant, and pass N more times on the unmutated code: with --confirm 2 a
# run counts a kill about once in 130 runs (1/16 * sum over K), with --confirm 5 about once in 10,000.
RANDOM = """\
    import random

    from vllm.platforms.interface import Platform


    def test_fails_at_random():
        Platform.import_kernels()
        assert random.SystemRandom().random() < 0.5
    """


def test_a_test_that_fails_at_random_has_no_kill_counted_in_five_runs(tmp_path: Path) -> None:
    counted = []
    for attempt in range(5):
        tree, suite = one_site_suite(tmp_path / str(attempt), {"test_random.py": RANDOM})
        console = Console(width=240, record=True)
        code = run(tree, tmp_path / str(attempt), str(suite / "tests"), root=suite, console=console, confirm=5)
        assert code == ExitCode.CHECK_FAILED, console.export_text()
        mutants = verdicts(tmp_path / str(attempt) / "report")["vllm/platforms/interface.py"]
        counted += [m for m in mutants if m["status"] == "Killed"]
    assert counted == []


# Ends its own process when the warning is logged twice (on a mutant): no session record, no verdict to read back.
EXITS = """\
    import logging
    import os

    from vllm.platforms.interface import Platform


    def test_exits_when_warned_twice(caplog):
        caplog.set_level(logging.WARNING)
        Platform.import_kernels()
        Platform.import_kernels()
        if len(caplog.records) > 1:
            os._exit(0)
    """


def test_a_test_that_ends_its_process_on_a_mutant_makes_it_crashed_naming_the_test_in_that_run(
    tmp_path: Path,
) -> None:
    tree, suite = one_site_suite(tmp_path, {"test_exits.py": EXITS})
    for _ in range(2):  # and the next run keeps the verdict: nothing is left to test again
        console = Console(width=240, record=True)
        assert run(tree, tmp_path, str(suite / "tests"), root=suite, console=console) == ExitCode.CHECK_FAILED
        mutants = verdicts(tmp_path / "report")["vllm/platforms/interface.py"]
        test = "tests/test_exits.py::test_exits_when_warned_twice"
        assert {(m["status"], m["statusReason"]) for m in mutants} == {
            ("RuntimeError", f"{test} ended its test process (exit code 0) before the session finished")
        }, console.export_text()
        assert "no finished run" not in console.export_text()


@pytest.mark.parametrize("interrupts", ["raise KeyboardInterrupt", "pytest.exit('enough')"])
def test_a_test_that_interrupts_its_session_on_a_mutant_makes_it_crashed_naming_the_test_in_that_run(
    tmp_path: Path, interrupts: str
) -> None:
    """pytest's exit status 2 ("interrupted") read as a stop left the mutants with no finished run, tested again
    by every run: a stop of the run's stops the session, which registers nothing, so 2 is the tests' own doing
    (tested a second time in the same run, as a worker killed from outside, in case it was a fluke)."""
    source = EXITS.replace("import os\n", "import pytest\n").replace("os._exit(0)", interrupts)
    tree, suite = one_site_suite(tmp_path, {"test_interrupts.py": source})
    for _ in range(2):  # and the next run keeps the verdict
        console = Console(width=240, record=True)
        assert run(tree, tmp_path, str(suite / "tests"), root=suite, console=console) == ExitCode.CHECK_FAILED
        mutants = verdicts(tmp_path / "report")["vllm/platforms/interface.py"]
        test = "tests/test_interrupts.py::test_exits_when_warned_twice"
        assert {(m["status"], m["statusReason"]) for m in mutants} == {
            (
                "RuntimeError",
                f"{test} interrupted its session on 2 attempts in a row (exit code 2: KeyboardInterrupt or "
                "pytest.exit)",
            )
        }, console.export_text()
        assert "no finished run" not in console.export_text()


def test_a_test_that_ends_its_process_on_the_unmutated_code_is_one_line_naming_it_never_a_score(
    tmp_path: Path,
) -> None:
    tree, suite = one_site_suite(tmp_path, {"test_exits.py": EXITS.replace("if len(caplog.records) > 1:", "if True:")})
    with pytest.raises(EngineFailed) as raised:
        run(tree, tmp_path, str(suite / "tests"), root=suite)
    assert "tests/test_exits.py::test_exits_when_warned_twice ended the process of the suite's session" in str(
        raised.value
    )
    assert "clean run" not in str(raised.value)  # what the session said, not a guess
    assert "\n" not in str(raised.value) and not (tmp_path / "report").exists()
