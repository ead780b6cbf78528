"""The history's contract with the guards: their outcome per site, read back from a real run on toy trees.

These run `warnonce-guard guards` in a subprocess (under a second each, no torch import in a toy tree), so
they stay in the fast tier: when the guards' record format or command line changes, they fail here first.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from warnonce_guard.guards.sessions import RecordKind
from warnonce_guard.history.cache import VerdictCache
from warnonce_guard.history.guard_run import run_guards
from warnonce_guard.history.records import Verdict
from warnonce_guard.history.survey import survey
from warnonce_guard.history.verdict import release_verdict

from tests.history_support import INTERFACE_SITE, LEAKS, LIVE_CALL, META, PLAIN_CALL, release, vllm_tree
from tests.toy import EAGER_CALL


def test_a_leaking_site_comes_back_as_a_leak_with_its_detectors(tmp_path: Path) -> None:
    run = run_guards(vllm_tree(tmp_path / "tree", LIVE_CALL), tmp_path / "logs" / "live.log")
    assert run.error is None and run.exit_code != 0
    assert [(o.site_id, o.outcome, o.detectors) for o in run.outcomes] == [(INTERFACE_SITE, RecordKind.LEAK, LEAKS)]
    assert "3 detector(s) fired" in (tmp_path / "logs" / "live.log").read_text(encoding="utf-8")


def test_an_eager_site_comes_back_passed(tmp_path: Path) -> None:
    run = run_guards(vllm_tree(tmp_path / "tree", EAGER_CALL), tmp_path / "logs" / "eager.log")
    assert run.exit_code == 0 and run.error is None
    assert [(o.site_id, o.outcome) for o in run.outcomes] == [(INTERFACE_SITE, RecordKind.PASSED)]


def test_a_platform_module_that_cannot_import_names_the_missing_module(tmp_path: Path) -> None:
    tree = vllm_tree(tmp_path / "tree", LIVE_CALL)
    interface = tree / "vllm" / "platforms" / "interface.py"
    interface.write_text("import not_installed_anywhere\n" + interface.read_text(encoding="utf-8"), encoding="utf-8")
    (outcome,) = run_guards(tree, tmp_path / "logs" / "broken.log").outcomes
    assert outcome.outcome is RecordKind.ERROR and outcome.missing_module == "not_installed_anywhere"


def test_a_run_that_guards_nothing_fails_as_a_whole_with_its_one_line_reason(tmp_path: Path) -> None:
    at_import = "try:\n    import PKG._C\nexcept ImportError as e:\n    pass\n"  # no guarded site: import time
    run = run_guards(vllm_tree(tmp_path / "tree", None, {"interface": at_import}), tmp_path / "logs" / "none.log")
    assert run.outcomes == () and run.exit_code != 0
    assert run.error is not None and run.error.startswith("no guarded kernel import (a try importing a kernel")


def test_a_plain_warning_site_is_guarded_and_passes(tmp_path: Path) -> None:
    run = run_guards(vllm_tree(tmp_path / "tree", PLAIN_CALL), tmp_path / "logs" / "plain.log")
    assert [(o.site_id, o.outcome) for o in run.outcomes] == [(INTERFACE_SITE, RecordKind.PASSED)]


def test_the_guards_are_pointed_at_the_tree_whatever_the_caller_environment_says(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("WARNONCE_GUARD_VLLM_SRC", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("WARNONCE_GUARD_SITES", str(tmp_path / "stale-sites.json"))
    run = run_guards(vllm_tree(tmp_path / "tree", EAGER_CALL), tmp_path / "logs" / "eager.log")
    assert [o.outcome for o in run.outcomes] == [RecordKind.PASSED]


def test_the_users_pytest_options_and_terminal_do_not_reach_the_guards(tmp_path: Path, monkeypatch) -> None:
    # -k deselects every guard, --pdb would wait on stdin at the first leak: neither may change the outcome
    monkeypatch.setenv("PYTEST_ADDOPTS", "-k no_guard_has_this_name --pdb")
    run = run_guards(vllm_tree(tmp_path / "tree", LIVE_CALL), tmp_path / "logs" / "live.log", timeout=60)
    assert not run.timed_out and run.error is None
    assert [(o.site_id, o.outcome) for o in run.outcomes] == [(INTERFACE_SITE, RecordKind.LEAK)]


def test_discovery_reports_cached_and_plain_sites_with_their_form(tmp_path: Path) -> None:
    tree = vllm_tree(tmp_path / "tree", LIVE_CALL, {"rocm": PLATFORM_PLAIN})
    found = {(s.file, s.log_method, s.cached, s.form) for s in survey(tree).sites}
    assert found == {
        ("vllm/platforms/interface.py", "warning_once", True, "live"),
        ("vllm/platforms/rocm.py", "warning", False, "live"),
    }


PLATFORM_PLAIN = f"""
from PKG.logger import init_logger

logger = init_logger(__name__)

try:
    import PKG._C  # noqa: F401
except ImportError as e:
    {PLAIN_CALL}
"""


def _processes_with(*words: str) -> dict[int, str]:
    """pid -> state of every live process whose command line holds all `words`."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if entry.name.isdigit() and all(w.encode() in command for w in words) and state != "Z":
            found[int(entry.name)] = state
    return found


SWEEP = """
import sys
from pathlib import Path
from warnonce_guard.history.guard_run import run_guards
run_guards(Path(sys.argv[1]), Path(sys.argv[2]), 120)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_guard_run_dies_with_the_sweep_even_on_sigkill(tmp_path: Path) -> None:
    tree = vllm_tree(tmp_path / "tree", EAGER_CALL)
    interface = tree / "vllm" / "platforms" / "interface.py"
    interface.write_text("import time\ntime.sleep(60)\n" + interface.read_text(encoding="utf-8"), encoding="utf-8")
    sweep = subprocess.Popen([sys.executable, "-c", SWEEP, str(tree), str(tmp_path / "logs" / "slow.log")])
    try:
        deadline = time.monotonic() + 30
        while not (guards := _processes_with("--vllm-src", str(tree))) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert guards, "the guard run never started"
        time.sleep(0.5)  # past the child's start-up, into the guards
        os.kill(sweep.pid, signal.SIGKILL)
        sweep.wait()
        deadline = time.monotonic() + 10
        while _processes_with("--vllm-src", str(tree)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _processes_with("--vllm-src", str(tree)) == {}, "the guard run outlived the sweep"
    finally:
        for pid in _processes_with("--vllm-src", str(tree)):
            os.kill(pid, signal.SIGKILL)
        if sweep.poll() is None:
            sweep.kill()


@pytest.mark.parametrize(
    ("sig", "said", "kept"),
    [
        (signal.SIGKILL, "killed by SIGKILL", False),  # the OOM killer, a stray kill: a rerun may finish it
        (signal.SIGTERM, "exit 143", False),
        (signal.SIGSEGV, "crashed (SIGSEGV)", True),  # the release's or the environment's doing: it stays
    ],
)
def test_a_guard_run_stopped_from_outside_is_not_kept_and_a_crash_is(
    tmp_path: Path, sig: int, said: str, kept: bool
) -> None:
    tree = vllm_tree(tmp_path / "tree", EAGER_CALL)
    interface = tree / "vllm" / "platforms" / "interface.py"
    kill = f"import os\nos.kill(os.getpid(), {int(sig)})\n"  # as the OOM killer or a stray kill would
    interface.write_text(kill + interface.read_text(encoding="utf-8"), encoding="utf-8")
    run = run_guards(tree, tmp_path / "logs" / "killed.log")
    assert run.outcomes == () and run.error is not None and said in run.error, run.error
    verdict = release_verdict(META, survey(tree), run)
    assert verdict.verdict is Verdict.NOT_CHECKED and verdict.retry is not kept  # a rerun checks it again
    assert VerdictCache(tmp_path / "work", "fp").put(release("9.9.9"), verdict) is kept
