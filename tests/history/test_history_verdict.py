"""A release's verdict from discovery on its tree and its guard run (synthetic trees, no vLLM, no guards run)."""

from __future__ import annotations

from pathlib import Path

import pytest
from warnonce_guard.guards.sessions import RecordKind
from warnonce_guard.history.records import SiteOutcome, Verdict
from warnonce_guard.history.survey import survey
from warnonce_guard.history.verdict import not_checked, release_verdict

from tests.history_support import INTERFACE_SITE, LEAKS, LIVE_CALL, META, PLAIN_CALL, guard_run, platform, vllm_tree
from tests.toy import EAGER_CALL, write

CPU_SITE = "vllm/platforms/cpu.py::Platform.import_kernels::vllm._C"
MISSING = (
    "importing vllm.platforms.cpu failed: no module named 'cloudpickle'; install it where the guards run "
    "(pip install cloudpickle)"
)


def leak(site: str = INTERFACE_SITE) -> SiteOutcome:
    return SiteOutcome(site, RecordKind.LEAK, LEAKS, f"{site} (line 9, warning_once, live): 3 detector(s) fired")


def test_a_live_site_whose_guard_fails_is_exposed_with_the_detectors(tmp_path: Path) -> None:
    found = survey(vllm_tree(tmp_path, LIVE_CALL))
    assert [s.id for s in found.cached] == [INTERFACE_SITE]
    v = release_verdict(META, found, guard_run(leak()))
    assert v.verdict is Verdict.EXPOSED
    assert v.detectors == LEAKS and (v.sites, v.live, v.eager) == (1, 1, 0) and v.reason == ""


def test_detectors_are_listed_once_in_the_guards_order(tmp_path: Path) -> None:
    tree = vllm_tree(tmp_path, LIVE_CALL, {"cpu": platform(LIVE_CALL)})
    first = SiteOutcome(CPU_SITE, RecordKind.LEAK, ("warning repeated", "exception retained"))
    second = SiteOutcome(INTERFACE_SITE, RecordKind.LEAK, ("owner pinned", "exception retained"))
    v = release_verdict(META, survey(tree), guard_run(first, second))
    assert v.detectors == ("exception retained", "owner pinned", "warning repeated")


def test_an_eager_site_whose_guard_passes_is_guarded(tmp_path: Path) -> None:
    v = release_verdict(
        META, survey(vllm_tree(tmp_path, EAGER_CALL)), guard_run(SiteOutcome(INTERFACE_SITE, RecordKind.PASSED))
    )
    assert v.verdict is Verdict.GUARDED
    assert (v.sites, v.live, v.eager, v.detectors, v.reason) == (1, 0, 1, (), "")


def test_plain_warning_in_import_kernels_is_no_sites_and_says_so(tmp_path: Path) -> None:
    v = release_verdict(META, survey(vllm_tree(tmp_path, PLAIN_CALL)), None)
    assert v.verdict is Verdict.NO_SITES and (v.sites, v.plain_sites) == (0, 1)
    assert v.reason == "import_kernels logs with plain logger.warning (not cached): 1 site(s) in platforms/interface.py"


def test_a_release_without_import_kernels_names_where_it_logs_instead(tmp_path: Path) -> None:
    tree = vllm_tree(tmp_path, None)
    ops = "from vllm.logger import init_logger\nlogger = init_logger(__name__)\ntry:\n    import vllm._C\n"
    write(tree, "vllm/_custom_ops.py", ops + "except ImportError as e:\n    logger.warning('no _C: %r', e)\n")
    v = release_verdict(META, survey(tree), None)
    assert v.verdict is Verdict.NO_SITES
    assert v.reason == (
        "no import_kernels in vllm/platforms; kernel imports log with plain logger.warning (not cached): "
        "1 site(s) in _custom_ops.py"
    )


def test_a_release_before_vllm_platforms_is_no_sites(tmp_path: Path) -> None:
    write(tmp_path, "vllm/__init__.py", "")
    v = release_verdict(META, survey(tmp_path), None)
    assert v.verdict is Verdict.NO_SITES
    assert (
        v.reason
        == "no vllm/platforms package (no Platform.import_kernels); no kernel-import site logs a caught exception"
    )


def test_import_kernels_that_logs_nothing_caught_is_no_sites(tmp_path: Path) -> None:
    quiet = platform("pass").replace("except ImportError as e:", "except ImportError:")
    v = release_verdict(META, survey(vllm_tree(tmp_path, None, {"interface": quiet})), None)
    assert v.verdict is Verdict.NO_SITES and v.reason == "import_kernels logs no caught kernel-import exception"


def test_a_platform_module_that_cannot_import_is_not_checked_with_the_module_to_add(tmp_path: Path) -> None:
    error = SiteOutcome(INTERFACE_SITE, RecordKind.ERROR, ("error: Failed",), MISSING, "cloudpickle")
    v = release_verdict(META, survey(vllm_tree(tmp_path, LIVE_CALL)), guard_run(error))
    assert v.verdict is Verdict.NOT_CHECKED and not v.retry
    assert v.reason == "needs module `cloudpickle`: add `cloudpickle` (pinned) to requirements/history-env.txt"


def test_an_import_name_is_mapped_to_its_distribution(tmp_path: Path) -> None:
    error = SiteOutcome(INTERFACE_SITE, RecordKind.ERROR, ("error: Failed",), "no module named 'zmq'", "zmq")
    v = release_verdict(META, survey(vllm_tree(tmp_path, LIVE_CALL)), guard_run(error))
    assert "add `pyzmq` (pinned)" in v.reason


def test_some_sites_leaking_is_exposed_and_the_unchecked_rest_is_named(tmp_path: Path) -> None:
    tree = vllm_tree(tmp_path, LIVE_CALL, {"cpu": platform(LIVE_CALL)})
    error = SiteOutcome(CPU_SITE, RecordKind.ERROR, ("error: Failed",), MISSING, "cloudpickle")
    v = release_verdict(META, survey(tree), guard_run(error, leak()))
    assert v.verdict is Verdict.EXPOSED and v.detectors == LEAKS
    assert v.reason.startswith("1 of 2 site(s) not checked: needs module `cloudpickle`")


def test_unreached_sites_alone_prove_nothing_and_are_not_checked(tmp_path: Path) -> None:
    unreached = SiteOutcome(
        INTERFACE_SITE, RecordKind.UNREACHED, ("unreached",), f"{INTERFACE_SITE} (line 9) unreached: no logging call"
    )
    v = release_verdict(META, survey(vllm_tree(tmp_path, LIVE_CALL)), guard_run(unreached))
    assert v.verdict is Verdict.NOT_CHECKED and v.detectors == ("unreached",)
    assert v.reason == f"{INTERFACE_SITE} unreached: no logging call"


def test_a_site_the_guard_run_left_no_record_of_is_not_checked(tmp_path: Path) -> None:
    v = release_verdict(
        META, survey(vllm_tree(tmp_path, LIVE_CALL)), guard_run(SiteOutcome("elsewhere#0", RecordKind.PASSED))
    )
    assert v.verdict is Verdict.NOT_CHECKED and "no record from the guard run" in v.reason


def test_a_guard_run_that_failed_as_a_whole_is_not_checked_and_a_timeout_is_retried(tmp_path: Path) -> None:
    found = survey(vllm_tree(tmp_path, LIVE_CALL))
    usage = release_verdict(META, found, guard_run(error="no kernel-import site logs through a *_once call"))
    assert usage.verdict is Verdict.NOT_CHECKED and not usage.retry
    assert usage.reason == "guards did not run: no kernel-import site logs through a *_once call"
    assert release_verdict(META, found, guard_run(error="timed out", timed_out=True)).retry


def test_a_tree_that_does_not_parse_is_not_checked_naming_the_file(tmp_path: Path) -> None:
    tree = vllm_tree(tmp_path, LIVE_CALL)
    write(tree, "vllm/broken.py", "import vllm._C\ntry:\n    pass\nexcept ImportError as e:\n    def (:\n")
    v = release_verdict(META, survey(tree), None)
    assert v.verdict is Verdict.NOT_CHECKED and v.reason.startswith("discovery failed: vllm/broken.py:5:")


def test_cached_sites_without_a_guard_run_are_a_bug_not_a_verdict(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no guard run"):
        release_verdict(META, survey(vllm_tree(tmp_path, LIVE_CALL)), None)


def test_a_release_that_could_not_be_fetched_is_not_checked_and_retried() -> None:
    v = not_checked(META, "fetch failed: download failed (timed out); rerun to retry", retry=True)
    assert v.verdict is Verdict.NOT_CHECKED and v.retry and v.sites == 0
