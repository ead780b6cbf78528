"""write_report: four files, written into a temporary sibling and swapped in whole."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from warnonce_guard.common import locks
from warnonce_guard.common.errors import ExitCode, PathRefused, WorkDirBusy
from warnonce_guard.common.files import MARKER, Kind, marked, sweep
from warnonce_guard.mutations import report
from warnonce_guard.mutations.report import junit, write_report

from tests.records_support import sample_result


@pytest.fixture
def viewer(tmp_path: Path) -> Path:
    path = tmp_path / "viewer.js"
    path.write_text("/* stand-in for mutation-test-elements.js */", encoding="utf-8")
    return path


def leftovers(parent: Path, name: str) -> list[str]:
    """Hidden siblings of the report `name`, but its lock file (which stays: see `common.locks`)."""
    lock = locks.out_lock(parent / name).name
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{name}.") and p.name != lock)


def test_writes_the_four_files_and_returns_their_paths(tmp_path: Path, viewer: Path) -> None:
    out = tmp_path / "mutation-report"
    paths = write_report(sample_result(), out, viewer)
    assert [p.name for p in paths] == ["mutation.json", "index.html", "summary.md", "junit.xml"]
    assert all(p.parent == out and p.stat().st_size > 0 for p in paths)
    assert (out / MARKER).is_file()  # a later run may replace it: it is ours
    assert json.loads((out / "mutation.json").read_text(encoding="utf-8"))["schemaVersion"] == "2"
    assert "stand-in for mutation-test-elements.js" in (out / "index.html").read_text(encoding="utf-8")
    assert leftovers(tmp_path, out.name) == []


def test_an_old_report_is_replaced_whole(tmp_path: Path, viewer: Path) -> None:
    out = tmp_path / "mutation-report"
    write_report(sample_result(), out, viewer)
    (out / "stale.txt").write_text("from an older run", encoding="utf-8")
    write_report(sample_result(), out, viewer)
    assert sorted(p.name for p in out.iterdir()) == sorted([*report.FILES, MARKER])
    assert leftovers(tmp_path, out.name) == []


def test_a_directory_it_did_not_write_is_refused_and_left_as_it_was(tmp_path: Path, viewer: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "keep.txt").write_text("precious", encoding="utf-8")
    with pytest.raises(PathRefused, match="holds files warnonce-guard did not create"):
        write_report(sample_result(), out, viewer)
    assert [p.name for p in out.iterdir()] == ["keep.txt"] and (out / "keep.txt").read_text() == "precious"
    assert leftovers(tmp_path, out.name) == []


def test_leftovers_of_a_swap_killed_halfway_are_swept_but_only_marked_ones(tmp_path: Path, viewer: Path) -> None:
    out = tmp_path / "mutation-report"
    write_report(sample_result(), out, viewer)
    ours = tmp_path / ".mutation-report.tmp-1-0000abcd"
    ours.mkdir()
    (ours / MARKER).write_text('{"tool": "warnonce-guard", "kind": "report"}')
    (ours / "index.html").write_text("half")
    foreign = tmp_path / ".mutation-report.tmp-2-00000000"  # a name of ours, but no marker: the user's
    foreign.mkdir()
    (foreign / "keep.txt").write_text("precious")
    moved_aside = tmp_path / ".mutation-report.old-5-0000cafe" / "mutation-report"  # killed between the renames
    moved_aside.mkdir(parents=True)
    (moved_aside.parent / MARKER).write_text('{"tool": "warnonce-guard", "kind": "scratch"}')
    (moved_aside / MARKER).write_text('{"tool": "warnonce-guard", "kind": "report"}')

    killed_before_marking = tmp_path / ".mutation-report.tmp-3-0000efab"  # SIGKILL between mkdir and the marker
    killed_before_marking.mkdir()
    killed_while_marking = tmp_path / ".mutation-report.tmp-4-00001234"  # ... or while the marker was written
    killed_while_marking.mkdir()
    (killed_while_marking / MARKER).write_text("")
    (killed_while_marking / f".{MARKER}.tmp-4-00005678").write_text('{"tool": "warn')

    write_report(sample_result(), out, viewer)

    assert not ours.exists() and (foreign / "keep.txt").read_text() == "precious"
    assert not moved_aside.parent.exists()
    assert not killed_before_marking.exists() and not killed_while_marking.exists()


def test_a_failing_writer_leaves_the_old_report_untouched_and_no_temp_dir(
    tmp_path: Path, viewer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "mutation-report"
    write_report(sample_result(), out, viewer)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken(result: object) -> bytes:
        raise RuntimeError("disk full halfway")

    monkeypatch.setattr(junit, "render", broken)  # the last writer: three files are already in the temp dir
    changed = sample_result()
    changed.vllm_version = "9.9.9"
    with pytest.raises(RuntimeError, match="disk full halfway"):
        write_report(changed, out, viewer)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert leftovers(tmp_path, out.name) == []


def test_a_failing_writer_with_no_old_report_leaves_nothing_but_its_lock_file(
    tmp_path: Path, viewer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(junit, "render", lambda result: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        write_report(sample_result(), tmp_path / "mutation-report", viewer)
    assert sorted(tmp_path.iterdir()) == sorted([viewer, locks.out_lock(tmp_path / "mutation-report")])


def test_report_directory_gets_an_ordinary_mode(tmp_path: Path, viewer: Path) -> None:
    out = tmp_path / "mutation-report"
    write_report(sample_result(), out, viewer)
    assert out.stat().st_mode & 0o055  # readable by others (not mkdtemp's 0700) under the usual umask


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt, as in a terminal's process: one a shell that is not interactive started in the
    background (nohup, `&` in a CI script) inherits SIGINT ignored, and would never see it."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("ctrl_c_raises")
def test_ctrl_c_between_the_two_renames_of_a_swap_leaves_a_whole_report(
    tmp_path: Path, viewer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "mutation-report"
    write_report(sample_result(), out, viewer)
    real_replace = os.replace
    sent: list[object] = []  # the SIGINT handler and whether SIGINT was held, when the Ctrl-C was sent

    def replace_then_ctrl_c(source: object, destination: object) -> None:
        real_replace(source, destination)
        if Path(str(source)) == out:  # the old report was just moved aside: Ctrl-C lands now
            sent.append(
                (signal.getsignal(signal.SIGINT), signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))
            )
            # To this thread, as a terminal's Ctrl-C reaches a single-threaded run: a process-directed kill goes
            # to another thread (one an earlier test left) while this one holds it blocked, and may land late.
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    monkeypatch.setattr(os, "replace", replace_then_ctrl_c)
    changed = sample_result()
    changed.vllm_version = "9.9.9"
    try:
        write_report(changed, out, viewer)
    except KeyboardInterrupt:
        pass
    else:  # what it saw, to tell a Ctrl-C still pending from one never sent
        pytest.fail(f"the Ctrl-C did not interrupt the write: sent {sent}, pending {signal.sigpending()}")

    assert sorted(p.name for p in out.iterdir()) == sorted([*report.FILES, MARKER])  # never absent or half
    assert "9.9.9" in (out / "summary.md").read_text(encoding="utf-8")


# --- one writer at a time ---------------------------------------------------------------------------------


def written_by(name: str) -> report.RunResult:
    """A result whose report says `name` (as its vLLM version): which writer's report a directory holds."""
    result = sample_result()
    result.vllm_version = name
    return result


def whole_report_of(out: Path) -> str:
    """The writer of the report in `out`, asserting it is whole: marked, the four files, mutation.json parses."""
    assert marked(out, Kind.REPORT), sorted(p.name for p in out.iterdir()) if out.is_dir() else "no --out"
    assert sorted(p.name for p in out.iterdir()) == sorted([*report.FILES, MARKER])
    return json.loads((out / "mutation.json").read_text(encoding="utf-8"))["config"]["vllmVersion"]


def race(out: Path, viewer: Path, names: tuple[str, ...], sweeps: int = 10) -> dict[str, str]:
    """Writers of `names` and a sweeper of `out`, let go at once; how each write ended."""
    start = threading.Barrier(len(names) + 1)
    outcomes: dict[str, str] = {}

    def write(name: str) -> None:
        start.wait()
        try:
            write_report(written_by(name), out, viewer)
            outcomes[name] = "written"
        except WorkDirBusy:
            outcomes[name] = "busy"
        except Exception as err:  # what the old code gave: exit 16, a temporary directory swept away
            outcomes[name] = repr(err)

    def sweeper() -> None:
        start.wait()
        for _ in range(sweeps):
            with contextlib.suppress(WorkDirBusy), locks.out_dir(out):  # a sweep runs only under the lock
                sweep(out.parent, out.name)

    threads = [*(threading.Thread(target=write, args=(name,)) for name in names), threading.Thread(target=sweeper)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def test_writers_and_sweeps_racing_on_one_out_leave_one_writers_whole_report_or_the_previous(
    tmp_path: Path, viewer: Path
) -> None:
    out = tmp_path / "mutation-report"
    write_report(written_by("previous"), out, viewer)
    previous, writes = "previous", 0
    for round_ in range(150):
        outcomes = race(out, viewer, (f"a{round_}", f"b{round_}"))

        assert set(outcomes.values()) <= {"written", "busy"}, (round_, outcomes)
        written = {name for name, outcome in outcomes.items() if outcome == "written"}
        now = whole_report_of(out)
        assert now in written or (not written and now == previous), (round_, outcomes, now)
        assert leftovers(tmp_path, out.name) == [], round_
        previous, writes = now, writes + len(written)
    # not vacuous: rounds wrote reports (how many depends on the scheduler: 45 of 300 on a loaded CI machine)
    assert writes >= 15


def test_a_second_writer_is_refused_in_one_line_while_a_run_holds_the_report_directory(
    tmp_path: Path, viewer: Path
) -> None:
    out = tmp_path / "mutation-report"
    write_report(written_by("first"), out, viewer)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    refused: list[BaseException] = []

    def second_run() -> None:
        try:
            write_report(written_by("second"), out, viewer)
        except WorkDirBusy as err:
            refused.append(err)

    with locks.out_dir(out):  # as `mutate` holds it from its path check to its last rename
        thread = threading.Thread(target=second_run)
        thread.start()
        thread.join()
        write_report(written_by("holder"), out, viewer)  # the holder itself writes (the lock is re-entrant)

    (err,) = refused
    assert err.exit_code == ExitCode.ENVIRONMENT
    assert str(err) == (
        f"--out {out}: another warnonce-guard run is writing its report there; wait for it to finish or pass "
        "another --out"
    )
    assert before != {p.name: p.read_bytes() for p in out.iterdir()} and whole_report_of(out) == "holder"
    assert leftovers(tmp_path, out.name) == []


def test_a_sweep_leaves_a_live_writers_directory_alone(
    tmp_path: Path, viewer: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "mutation-report"
    write_report(written_by("previous"), out, viewer)
    rendering, release = threading.Event(), threading.Event()
    real_render = junit.render

    def slow_render(result: report.RunResult) -> bytes:
        rendering.set()
        release.wait(10)
        return real_render(result)

    monkeypatch.setattr(junit, "render", slow_render)
    outcome: list[str] = []
    writer = threading.Thread(target=lambda: outcome.append(str(write_report(written_by("live"), out, viewer))))
    writer.start()
    assert rendering.wait(10)
    (building,) = leftovers(tmp_path, out.name)  # the live writer's, three files in

    swept: list[Path] | str
    try:
        with locks.out_dir(out):  # a sweep runs only under the lock
            swept = sweep(out.parent, out.name)
    except WorkDirBusy:
        swept = "busy"
    release.set()
    writer.join()

    assert swept == "busy" and outcome  # the live writer's files were not touched, and it finished
    assert whole_report_of(out) == "live" and not (tmp_path / building).exists()


def test_the_lock_file_is_a_hidden_sibling_that_stays(tmp_path: Path, viewer: Path) -> None:
    out = tmp_path / "mutation-report"
    write_report(sample_result(), out, viewer)
    assert locks.out_lock(out) == tmp_path / ".mutation-report.warnonce-guard.lock"
    assert locks.out_lock(out).is_file() and leftovers(tmp_path, out.name) == []
    write_report(sample_result(), out, viewer)  # a later run takes it again


def test_a_result_made_printable_is_checked_once_and_a_new_one_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from warnonce_guard.mutations.report import printable

    result = sample_result()
    made = printable.printable_result(result)
    monkeypatch.setattr(printable, "printable_json", lambda data: pytest.fail("checked again"))
    assert printable.printable_result(made) is made
    with pytest.raises(pytest.fail.Exception, match="checked again"):
        printable.printable_result(replace(made, vllm_version="9.9.9"))
