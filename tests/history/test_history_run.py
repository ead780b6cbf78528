"""The sweep end to end on toy releases served from disk: verdicts, lines, files, cache hits, interruption."""

from __future__ import annotations

import json
import os
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from warnonce_guard.cli.main import main
from warnonce_guard.common import locks, ownership
from warnonce_guard.common.errors import ExitCode, PathRefused, PathUnusable, WorkDirBusy
from warnonce_guard.common.files import MARKER, Kind, mark, marked, temporary
from warnonce_guard.common.fingerprint import distributions
from warnonce_guard.history.fetch import fetch_release
from warnonce_guard.history.index import Release
from warnonce_guard.history.records import Verdict
from warnonce_guard.history.run import Options, Stages, run_history
from warnonce_guard.history.survey import survey

from tests.faults import held_by_another_run
from tests.history_support import (
    LIVE_CALL,
    PLAIN_CALL,
    index_server,
    release,
    sdist_bytes,
    served,
    tree_files,
    vllm_tree,
    wheel_bytes,
)


@pytest.fixture
def index(tmp_path: Path) -> list[Release]:
    """Three releases: 1.0.0 leaks, 0.9.0 logs with plain logger.warning, 0.8.0's download fails its hash."""

    def archive(version: str, call: str) -> bytes:
        return sdist_bytes(tree_files(vllm_tree(tmp_path / "src" / version, call)), top=f"vllm-{version}")

    listed = [
        release("0.8.0", served(tmp_path / "index", "vllm-0.8.0.tar.gz", archive("0.8.0", PLAIN_CALL), "0" * 64)),
        release("0.9.0", served(tmp_path / "index", "vllm-0.9.0.tar.gz", archive("0.9.0", PLAIN_CALL))),
        release(
            "1.0.0", served(tmp_path / "index", "vllm-1.0.0.tar.gz", archive("1.0.0", LIVE_CALL), None, "2026-03-01")
        ),
    ]
    return listed


@pytest.fixture
def index_url(index: list[Release]) -> Iterator[str]:
    """`index` served on localhost, for the tests that go through the command line."""
    with index_server(index) as served:
        yield served.url


def stages(listed: list[Release], **stand_ins: object) -> Stages:
    """The sweep's real stages, but the index lists `listed` (and any stage named is replaced)."""
    return Stages(fetch_index=lambda url: listed, **stand_ins)  # type: ignore[arg-type]


def options(tmp_path: Path, **changes: object) -> Options:
    return Options(**{"work_dir": tmp_path / "work", "out_dir": tmp_path / "out", **changes})


def console() -> Console:
    return Console(record=True, width=200, force_terminal=False)


def test_each_release_gets_a_verdict_a_line_on_the_console_and_a_line_in_the_log(tmp_path: Path, index) -> None:
    out = console()
    report = run_history(options(tmp_path), out, stages(index))
    assert [(v.version, v.verdict) for v in report.verdicts] == [
        ("1.0.0", Verdict.EXPOSED),
        ("0.9.0", Verdict.NO_SITES),
        ("0.8.0", Verdict.NOT_CHECKED),
    ]
    assert report.verdicts[0].detectors == ("exception retained", "owner pinned", "warning repeated")
    assert report.verdicts[2].reason.startswith("fetch failed: vllm-0.8.0.tar.gz: sha256 mismatch")
    text = out.export_text()
    assert "1.0.0       exposed     1 sites (1 live)" in text and "0.9.0       no sites    0 sites (1 plain)" in text
    assert "0.8.0       not checked –                        fetch failed" in text
    log = (tmp_path / "work" / "history.log").read_text(encoding="utf-8").splitlines()
    assert [line.split()[1] for line in log] == ["1.0.0", "0.9.0", "0.8.0"]
    # the live once-calls, counted by the audit on the release's tree: its one live site
    assert "| 1.0.0 | 2026-03-01 | 1 | 1 live | 1 | exposed |" in (tmp_path / "out" / "history.md").read_text()
    assert (tmp_path / "out" / "history.json").is_file()


def test_a_second_run_fetches_and_checks_only_what_it_could_not_finish(tmp_path: Path, index) -> None:
    run_history(options(tmp_path), console(), stages(index))
    fetched: list[str] = []
    fetching = stages(
        index,
        fetch_release=lambda r, w: fetched.append(r.version) or fetch_release(r, w),
        run_guards=lambda *a: pytest.fail("a kept verdict was checked again"),
    )
    report = run_history(options(tmp_path), console(), fetching)
    assert fetched == ["0.8.0"]  # its download failed: not kept, so tried again
    assert (report.checked, report.from_cache) == (1, 2)


def test_an_interrupted_sweep_keeps_what_it_finished_and_writes_no_table(tmp_path: Path, index) -> None:
    calls: list[Path] = []

    def interrupted(tree: Path):
        calls.append(tree)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return survey(tree)

    with pytest.raises(KeyboardInterrupt):
        run_history(options(tmp_path), console(), stages(index, survey=interrupted))
    assert not (tmp_path / "out").exists()
    report = run_history(options(tmp_path), console(), stages(index))
    assert (report.checked, report.from_cache) == (2, 1)


def test_a_wheel_checked_because_the_sdist_failed_says_why_in_the_row(tmp_path: Path) -> None:
    files = tree_files(vllm_tree(tmp_path / "src", PLAIN_CALL))
    bad = served(tmp_path / "index", "vllm-1.0.0.tar.gz", sdist_bytes(files), "0" * 64)
    wheel = served(tmp_path / "index", "vllm-1.0.0-py3-none-any.whl", wheel_bytes(files))
    (v,) = run_history(options(tmp_path), console(), stages([release("1.0.0", bad, wheel)])).verdicts
    assert v.verdict is Verdict.NO_SITES and v.meta.source == "vllm-1.0.0-py3-none-any.whl"
    assert v.meta.fallback.startswith("the sdist failed: vllm-1.0.0.tar.gz: sha256 mismatch")
    assert "checked from the wheel vllm-1.0.0-py3-none-any.whl (the sdist failed: " in (
        tmp_path / "out" / "history.md"
    ).read_text(encoding="utf-8")


def test_the_work_directory_is_never_inside_site_packages(tmp_path: Path, index) -> None:
    inside = Path(sysconfig.get_paths()["purelib"]) / "warnonce-history"
    with pytest.raises(PathRefused, match="fetched releases never go there"):
        run_history(options(tmp_path, work_dir=inside), console(), stages(index))
    assert not inside.exists()


def test_the_command_exits_1_when_a_release_is_not_checked_and_0_when_all_have_verdicts(
    tmp_path: Path, index_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["history", "--index-url", index_url, "--work-dir", "w", "--out", "o"]) == ExitCode.CHECK_FAILED
    said = f"Produced by `warnonce-guard history --index-url {index_url} --out o`"
    assert said in (tmp_path / "o" / "history.md").read_text()
    assert (
        main(["history", "--index-url", index_url, "--from", "0.9.0", "--work-dir", "w", "--out", "o"]) == ExitCode.OK
    )


def test_an_unknown_release_is_one_line_and_its_own_exit_code(
    tmp_path: Path, index_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["history", "--index-url", index_url, "--only", "0.7.0"]) == ExitCode.NOTHING_TO_CHECK
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["warnonce-guard: error: --only: 0.7.0 not on the index; its newest release is 1.0.0"]


def test_the_work_directory_is_marked_and_refused_when_it_holds_what_history_did_not_make(
    tmp_path: Path, index
) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine\n", encoding="utf-8")
    with pytest.raises(PathRefused, match="holds files warnonce-guard did not create"):
        run_history(options(tmp_path, work_dir=theirs), console(), stages(index))
    assert sorted(os.listdir(theirs)) == ["notes.txt"]
    run_history(options(tmp_path), console(), stages(index))
    assert marked(tmp_path / "work", Kind.HISTORY)
    # a mutation run's --work-dir is another kind: a history work directory is not one, and is refused
    with pytest.raises(PathRefused):
        ownership.check_work_root(tmp_path / "work", [])


def test_a_second_sweep_on_the_same_work_directory_is_refused_while_the_first_holds_it(tmp_path: Path, index) -> None:
    first_sweep = locks.work_dir(tmp_path / "work", Kind.HISTORY)  # held as a sweep holds it, from start to tables
    with held_by_another_run(first_sweep), pytest.raises(WorkDirBusy, match="another warnonce-guard run is using it"):
        run_history(options(tmp_path), console(), stages(index))
    assert not (tmp_path / "out").exists()


def test_the_current_directory_is_never_the_work_directory(
    tmp_path: Path, index, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PathRefused, match="the current directory"):
        run_history(options(tmp_path, work_dir=tmp_path.parent), console(), stages(index))


def test_what_a_killed_sweep_left_half_written_is_removed_by_the_next_one(tmp_path: Path, index) -> None:
    run_history(options(tmp_path), console(), stages(index))
    work = tmp_path / "work"
    (results,) = (work / "results").iterdir()
    # what each writer leaves when killed: a file half-written, a directory marked from its start (a tree being
    # extracted, the old tree moved aside in a swap, a guard run's records), or one not marked yet
    files = [
        temporary(work / "downloads" / "vllm-1.0.0.tar.gz"),
        temporary(results / "1.0.0.json"),
        temporary(work / "history.md"),
    ]
    folders = {
        temporary(work / "trees" / "1.0.0"): (Kind.RELEASE_TREE, "vllm/__init__.py"),
        temporary(work / "trees" / "1.0.0", "old"): (Kind.SCRATCH, "1.0.0/vllm/__init__.py"),
        temporary(work / "logs" / "attribution"): (Kind.SCRATCH, "baseline/history-4242-0badcafe.json"),
        temporary(work / "trees" / "0.9.0"): (None, ""),
    }
    for path in files:
        path.write_text("half", encoding="utf-8")
    for folder, (kind, inside) in folders.items():
        folder.mkdir()
        if kind is not None:
            mark(folder, kind)
            (folder / inside).parent.mkdir(parents=True, exist_ok=True)
            (folder / inside).write_text("half", encoding="utf-8")
    theirs = temporary(work / "trees" / "1.0.0")  # a name of ours, but no marker: not ours to remove
    (theirs / "notes").mkdir(parents=True)
    kept = [work / "downloads" / "notes.txt", work / "trees" / ".hidden-by-the-user", theirs / "notes" / "mine.txt"]
    for path in kept:
        path.write_text("mine", encoding="utf-8")
    run_history(options(tmp_path), console(), stages(index))
    hidden = {p.relative_to(work).as_posix() for p in work.rglob(".*")}
    markers = {".warnonce-guard", *(f"trees/{v}/.warnonce-guard" for v in ("0.9.0", "1.0.0"))}
    assert hidden == markers | {".warnonce-guard.lock", "trees/.hidden-by-the-user", f"trees/{theirs.name}"}
    assert all(path.read_text(encoding="utf-8") == "mine" for path in kept)


def test_an_out_directory_that_cannot_be_made_or_written_is_refused_before_any_work(
    tmp_path: Path, index, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_fetch = stages(index, fetch_release=lambda *a: pytest.fail("a release was fetched"))
    (tmp_path / "afile").write_text("mine\n", encoding="utf-8")
    with pytest.raises(PathUnusable, match=r"--out .*afile/sub: .*afile is not a directory"):
        run_history(options(tmp_path, out_dir=tmp_path / "afile" / "sub"), console(), no_fetch)
    read_only = tmp_path / "read-only"
    read_only.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != read_only and real_access(path, mode))
    for out in (read_only, read_only / "new"):
        with pytest.raises(PathUnusable, match=r"read-only is not writable"):
            run_history(options(tmp_path, out_dir=out), console(), no_fetch)
    assert not (tmp_path / "work").exists()
    assert os.listdir(read_only) == []


def test_a_verdict_from_a_wheel_because_the_sdist_failed_is_not_kept_so_the_sdist_is_tried_again(
    tmp_path: Path,
) -> None:
    files = tree_files(vllm_tree(tmp_path / "src", PLAIN_CALL))
    data = sdist_bytes(files)
    sdist = served(tmp_path / "index", "vllm-1.0.0.tar.gz", data)
    wheel = served(tmp_path / "index", "vllm-1.0.0-py3-none-any.whl", wheel_bytes(files))
    (tmp_path / "index" / "vllm-1.0.0.tar.gz").unlink()  # the sdist's download fails this time
    listed = stages([release("1.0.0", sdist, wheel)])
    (first,) = run_history(options(tmp_path), console(), listed).verdicts
    assert first.meta.source == wheel.filename and first.meta.fallback.endswith("rerun to retry")
    (tmp_path / "index" / "vllm-1.0.0.tar.gz").write_bytes(data)  # as the row says: rerun
    report = run_history(options(tmp_path), console(), listed)
    (again,) = report.verdicts
    assert (report.checked, again.meta.source, again.meta.fallback) == (1, sdist.filename, "")
    assert run_history(options(tmp_path), console(), listed).from_cache == 1  # the sdist's verdict is kept


def test_a_verdict_from_a_wheel_because_the_sdist_holds_no_vllm_package_is_kept(tmp_path: Path) -> None:
    files = tree_files(vllm_tree(tmp_path / "src", PLAIN_CALL))
    sdist = served(tmp_path / "index", "vllm-1.0.0.tar.gz", sdist_bytes({"README.md": b"no package"}))
    wheel = served(tmp_path / "index", "vllm-1.0.0-py3-none-any.whl", wheel_bytes(files))
    listed = stages([release("1.0.0", sdist, wheel)])
    (first,) = run_history(options(tmp_path), console(), listed).verdicts
    assert first.meta.fallback == "the sdist failed: vllm-1.0.0.tar.gz: vllm-1.0.0.tar.gz holds no vllm/ package"
    assert run_history(options(tmp_path), console(), listed).from_cache == 1  # the same on every rerun: kept


def test_a_full_disk_in_the_work_directory_is_one_line_and_its_exit_code_not_a_traceback(
    tmp_path: Path, index_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import errno

    from warnonce_guard.history import cache

    def full(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cache, "write_atomic", full)
    assert main(["history", "--index-url", index_url, "--work-dir", "w", "--out", "o"]) == ExitCode.ENVIRONMENT
    (line,) = capsys.readouterr().err.strip().splitlines()
    where = f"--work-dir {tmp_path / 'w'}: cannot write in it: No space left on device: {tmp_path / 'w'}"
    assert line.startswith(f"warnonce-guard: error: {where}") and line.endswith("and rerun"), line
    assert not (tmp_path / "o").exists()


def test_a_distribution_added_to_the_guard_environment_rechecks_a_kept_release(tmp_path: Path, index) -> None:
    first = run_history(options(tmp_path, only=("0.9.0",)), console(), stages(index))
    assert run_history(options(tmp_path, only=("0.9.0",)), console(), stages(index)).from_cache == 1
    installed = distributions()
    added = stages(index, distributions=lambda: [*installed, "cloudpickle==3.1.2"])
    again = run_history(options(tmp_path, only=("0.9.0",)), console(), added)
    assert (again.from_cache, again.checked) == (0, 1) and again.fingerprint != first.fingerprint


def stopped_after_fetching(tmp_path: Path, listed: list[Release], version: str) -> None:
    """A sweep of `version` killed after its tree was extracted, before its verdict was kept."""

    def killed(tree: Path) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_history(options(tmp_path, only=(version,)), console(), stages(listed, survey=killed))


@pytest.mark.parametrize(
    "damage", ['{"filename": "vllm-1.0.', "", "[]", "{}"], ids=["cut-short", "empty", "not-an-object", "no-fields"]
)
def test_a_kept_tree_whose_marker_is_damaged_is_extracted_again_with_a_note(tmp_path: Path, index, damage: str) -> None:
    stopped_after_fetching(tmp_path, index, "1.0.0")
    tree = tmp_path / "work" / "trees" / "1.0.0"
    (tree / MARKER).write_text(damage, encoding="utf-8")  # was: "not checked" on every rerun
    out = console()
    (verdict,) = run_history(options(tmp_path, only=("1.0.0",)), out, stages(index)).verdicts
    assert verdict.verdict is Verdict.EXPOSED, verdict.reason
    note = f"1.0.0: discarded the kept tree {tree} (its {MARKER} is damaged); extracted again from vllm-1.0.0.tar.gz"
    assert note in out.export_text().splitlines()
    assert json.loads((tree / MARKER).read_text(encoding="utf-8"))["sha256"] == index[2].files[0].sha256
    assert run_history(options(tmp_path, only=("1.0.0",)), console(), stages(index)).from_cache == 1


def test_a_directory_where_a_download_goes_is_discarded_with_a_note_and_the_archive_downloaded(
    tmp_path: Path, index
) -> None:
    run_history(options(tmp_path, only=("0.9.0",)), console(), stages(index))  # the history work directory, marked
    downloads = tmp_path / "work" / "downloads"
    where = downloads / "vllm-1.0.0.tar.gz"
    (where / "vllm-1.0.0").mkdir(parents=True)  # was: "download failed ... rerun to retry" on every rerun
    (where / "vllm-1.0.0" / "PKG-INFO").write_text("half\n", encoding="utf-8")
    (downloads / "notes.txt").write_text("mine\n", encoding="utf-8")
    out = console()
    (verdict,) = run_history(options(tmp_path, only=("1.0.0",)), out, stages(index)).verdicts
    assert verdict.verdict is Verdict.EXPOSED, verdict.reason
    note = f"1.0.0: discarded {where} (a directory where the downloaded archive goes); downloading it again"
    assert note in out.export_text().splitlines()
    assert where.is_file() and (downloads / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    assert run_history(options(tmp_path, only=("1.0.0",)), console(), stages(index)).from_cache == 1
