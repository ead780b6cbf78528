"""`history --with-fix`: an exposed release's guards again with the cache-level fix applied to its `vllm/logger.py`,
no site changed (toy releases served from disk; the real guards run on them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from warnonce_guard.caches.renders_first import renders_first
from warnonce_guard.history.index import Release
from warnonce_guard.history.records import FixVerdict, GuardRun, ReleaseVerdict, Verdict
from warnonce_guard.history.render import FIX_COLUMN, to_markdown
from warnonce_guard.history.run import Options, Stages, run_history

from tests.history_support import LIVE_CALL, META, release, sdist_bytes, served, tree_files, vllm_tree
from tests.toy import EAGER_CALL


@pytest.fixture
def index(tmp_path: Path) -> list[Release]:
    """1.0.0 leaks (a live site), 1.1.0 is fixed (an eager one)."""

    def archive(version: str, call: str) -> bytes:
        return sdist_bytes(tree_files(vllm_tree(tmp_path / "src" / version, call)), top=f"vllm-{version}")

    folder = tmp_path / "index"
    return [
        release("1.0.0", served(folder, "vllm-1.0.0.tar.gz", archive("1.0.0", LIVE_CALL))),
        release("1.1.0", served(folder, "vllm-1.1.0.tar.gz", archive("1.1.0", EAGER_CALL))),
    ]


def options(tmp_path: Path, with_fix: bool = True) -> Options:
    return Options(work_dir=tmp_path / "work", out_dir=tmp_path / "out", with_fix=with_fix)


def console() -> Console:
    return Console(record=True, width=240, force_terminal=False)


def test_an_exposed_release_is_guarded_with_the_fix_its_own_guards_not_run_again(
    tmp_path: Path, index: list[Release]
) -> None:
    """A first sweep without the option, then one with it: only the fixed copy's guards run, and the column is kept
    with the verdict (a third sweep runs no guard at all)."""
    run_history(options(tmp_path, with_fix=False), console(), Stages(fetch_index=lambda url: index))
    ran: list[str] = []

    def guards(tree: Path, log: Path, timeout: float) -> GuardRun:
        ran.append(tree.name)
        from warnonce_guard.history.guard_run import run_guards

        return run_guards(tree, log, timeout)

    out = console()
    report = run_history(options(tmp_path), out, Stages(fetch_index=lambda url: index, run_guards=guards))

    assert len(ran) == 1 and ran[0].startswith(".1.0.0+fix.fix-")  # only the fixed copy's guards ran
    exposed, fixed = report.verdicts[1], report.verdicts[0]
    assert (exposed.version, exposed.verdict) == ("1.0.0", Verdict.EXPOSED)
    assert exposed.with_fix == FixVerdict(Verdict.GUARDED, neutralized=1)
    assert (fixed.verdict, fixed.with_fix) == (Verdict.GUARDED, None)  # guarded already: not checked again
    assert report.from_cache == 2
    trees = tmp_path / "work" / "trees"
    assert sorted(p.name for p in trees.iterdir()) == ["1.0.0", "1.1.0"]  # the fixed copy is gone
    assert not renders_first((trees / "1.0.0" / "vllm" / "logger.py").read_text())  # the fetched tree as fetched
    assert "with the fix: guarded (1 of 1 neutralized)" in out.export_text()
    table = (tmp_path / "out" / "history.md").read_text(encoding="utf-8")
    assert f"| reason | {FIX_COLUMN} |" in table
    assert "| exception retained, owner pinned, warning repeated |  | guarded (1 of 1 neutralized) |" in table
    assert "With the fix: 1 of 1 exposed releases guarded, no site changed." in table

    unused = Stages(fetch_index=lambda url: index, run_guards=lambda *a: pytest.fail("a kept verdict ran again"))
    again = run_history(options(tmp_path), console(), unused)
    assert again.verdicts[1].with_fix == FixVerdict(Verdict.GUARDED, neutralized=1)


def test_a_logger_the_fix_does_not_fit_is_not_checked_with_the_reason(tmp_path: Path) -> None:
    from warnonce_guard.history.fix import check_with_fix
    from warnonce_guard.history.survey import survey

    tree = vllm_tree(tmp_path / "tree", LIVE_CALL)
    (tree / "vllm" / "logger.py").write_text("import logging\n")
    fixed = check_with_fix(tree, META, survey, lambda *a: pytest.fail("no guards without the fix"), tmp_path / "l", 9)

    assert fixed.verdict is Verdict.NOT_CHECKED
    assert fixed.reason.startswith("the fix does not apply: vllm/logger.py defines no *_once function or method")


def test_the_fix_column_round_trips_through_json_and_is_shown_only_with_the_option() -> None:
    verdict = ReleaseVerdict(META, Verdict.EXPOSED, sites=6, with_fix=FixVerdict(Verdict.GUARDED, 6))

    assert ReleaseVerdict.from_json(verdict.to_json()) == verdict
    assert ReleaseVerdict.from_json(verdict.to_json() | {"with_fix": None}).with_fix is None
    legacy = {k: v for k, v in verdict.to_json().items() if k != "with_fix"}  # kept by a sweep before the option
    assert ReleaseVerdict.from_json(legacy).with_fix is None

    from warnonce_guard.history.records import HistoryReport

    report = HistoryReport("warnonce-guard history --with-fix", "2026-12-01T00:00:00+00:00", "f", "Python", (verdict,))
    assert FIX_COLUMN not in to_markdown(report)
    shown = to_markdown(HistoryReport(**{**report.__dict__, "with_fix": True}))
    assert "| guarded (6 of 6 neutralized) |" in shown
