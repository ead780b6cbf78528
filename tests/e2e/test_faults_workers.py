"""Fault injection aimed at the mutmut session's children and its disk: one worker SIGKILLed (as the kernel's OOM
killer does), the process generating the mutants SIGKILLed, the attribution folder made immutable mid-run, the work
directory's disk filled mid-run. A verdict is what the mutant did, not what happened to its worker: the run re-tests, or
ends in one line with the exit code that names the problem (12: the work directory, 13: the engine), never a
score it could not have reached on an idle machine; a rerun then ends with the clean run's verdicts.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from warnonce_guard.common.errors import ExitCode

from tests.faults import (
    CleanRun,
    RunDirs,
    Started,
    TreeShape,
    children_of,
    cli_args,
    fault_tree,
    fresh_dirs,
    in_phase,
    mutmut_workers,
    one_line_error,
    read_verdicts,
    rerun_of,
    session_pid,
    start,
    started_run,
    survivors,
    wait_until,
)

pytestmark = [pytest.mark.slow, pytest.mark.long]

ATTEMPTS = 3


@pytest.fixture(scope="module")
def fault_shape() -> TreeShape:
    """Each guard sleeps 0.5 s twice: a worker lives about a second, long enough to be found and killed."""
    return TreeShape(guard_sleep_s=0.5)


def finish(started: Started, work: Path, timeout: float = 240.0) -> int:
    """The run's exit code; a run that does not end in time is killed (with its session) and fails the test."""
    try:
        return started.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        session = session_pid(work)
        for group in [started.proc.pid, *([session] if session else [])]:  # each runs in a group of its own
            os.killpg(group, signal.SIGKILL)
        started.proc.wait()
        pytest.fail(f"the run did not end within {timeout:.0f} s of waiting: {started.err}")


KILLED: set[int] = set()  # workers this module killed: a dead one may still be listed for an instant


def kill_worker(
    dirs: RunDirs, started: Started, mutant: str | None = None, sig: signal.Signals = signal.SIGKILL
) -> str | None:
    """Send `sig` to one worker testing a mutant (`mutant`, or any); the mutant it was testing, None if none was
    seen."""
    found: dict[int, str] = {}

    def testing() -> bool:
        workers = mutmut_workers(dirs.work).items()
        found.update({pid: name for pid, name in workers if mutant in (None, name) and pid not in KILLED})
        return bool(found)

    if not wait_until(testing, started.proc, timeout=120):
        return None
    pid, name = next(iter(found.items()))
    os.kill(pid, sig)
    KILLED.add(pid)
    return name


def rerun_gives(dirs: RunDirs, viewer: Path, clean: CleanRun) -> subprocess.CompletedProcess[str]:
    again = rerun_of(dirs, viewer)
    assert again.returncode == 0, again.stdout + again.stderr
    assert read_verdicts(dirs.out) == clean.verdicts
    return again


def workspace(dirs: RunDirs) -> Path:
    (ws,) = dirs.workspaces()
    return ws


# --- a worker killed from outside ------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGXCPU], ids=["oom-killer", "time-limit"])
def test_a_worker_killed_from_outside_is_tested_again_and_the_run_ends_with_the_clean_verdicts(
    sig: signal.Signals,
    untouched_user_tree: Path,
    small_viewer: Path,
    clean_run: CleanRun,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    """SIGKILL is what the kernel's OOM killer sends; SIGXCPU what mutmut's time limit sends (a loaded machine)."""
    dirs = next(fresh_dirs(tmp_path, untouched_user_tree, "worker-killed"))
    started = started_run(dirs, small_viewer)
    killed = kill_worker(dirs, started, sig=sig)
    code = finish(started, dirs.work)
    assert killed is not None, f"no mutmut worker was seen (exit {code}): {started.err}"

    assert code == ExitCode.OK, started.out + started.err  # not "crashed": tested again in the same run
    assert read_verdicts(dirs.out) == clean_run.verdicts
    log = (workspace(dirs) / "mutmut.log").read_text(errors="replace")
    assert "testing again 1 mutant(s)" in log
    assert json.loads((workspace(dirs) / "attempts.json").read_text())["mutants"] == {}  # its series ended
    again = rerun_gives(dirs, small_viewer, clean_run)
    assert "verdicts stand" in again.stdout
    assert survivors(dirs.work) == []
    record_property("outcome", f"{sig.name} to the worker of {killed}; exit {code}; rerun exit {again.returncode}")


def test_a_worker_killed_on_both_attempts_is_a_crash_kept_for_good(
    untouched_user_tree: Path, small_viewer: Path, clean_run: CleanRun, tmp_path: Path
) -> None:
    dirs = next(fresh_dirs(tmp_path, untouched_user_tree, "worker-killed-twice"))
    started = started_run(dirs, small_viewer)
    killed = kill_worker(dirs, started)
    assert killed is not None, started.err
    again = kill_worker(dirs, started, killed)  # its second attempt, in the same run
    code = finish(started, dirs.work)
    assert again == killed, f"the second attempt of {killed} was not seen (exit {code}): {started.err}"

    assert code == ExitCode.CHECK_FAILED, started.out + started.err
    report = json.loads((dirs.out / "mutation.json").read_text(encoding="utf-8"))
    statuses = {m["id"]: m["status"] for file in report["files"].values() for m in file["mutants"]}
    assert statuses[killed] == "RuntimeError"  # Stryker's name for crashed
    assert {s for m, s in statuses.items() if m != killed} == {"Killed"}
    ledger = json.loads((workspace(dirs) / "attempts.json").read_text())["mutants"]
    assert ledger == {killed: [-signal.SIGKILL, -signal.SIGKILL]}
    rerun = rerun_of(dirs, small_viewer)
    assert rerun.returncode == ExitCode.CHECK_FAILED and "verdicts stand" in rerun.stdout  # a verdict it earned


# --- a dead generator ------------------------------------------------------------------------------------


def test_a_dead_generator_ends_the_run_with_exit_13_in_bounded_time(
    tmp_path: Path, small_viewer: Path, record_property: Callable[[str, object], None]
) -> None:
    tree = fault_tree(tmp_path / "user" / "tree", TreeShape(filler_functions=3000))  # generation lasts seconds
    misses = []
    for dirs in fresh_dirs(tmp_path, tree, "generation"):
        started = started_run(dirs, small_viewer)

        def generating(dirs: RunDirs = dirs) -> bool:
            session = session_pid(dirs.work)
            return in_phase("generation", dirs) and session is not None and bool(children_of(session))

        seen = wait_until(generating, started.proc, timeout=120)
        session = session_pid(dirs.work)
        workers = children_of(session) if seen and session else []
        if workers:
            time.sleep(0.3)  # the pool has taken the site file: kill the process generating it
            os.kill(min(workers), signal.SIGKILL)  # the session's first fork (its second imports the target)
        began = time.monotonic()
        code = finish(started, dirs.work, timeout=120)
        if workers and not dirs.glob("generation.json"):
            break
        misses.append(f"exit {code}, {'generation over' if workers else 'no generator seen'}")
        if len(misses) == ATTEMPTS:
            pytest.skip(f"could not kill the generator: {'; '.join(misses)}")

    assert code == ExitCode.ENVIRONMENT, started.out + started.err
    line = one_line_error(started.err)
    assert "generating mutants died" in line and "mutmut.log" in line
    assert time.monotonic() - began < 60
    assert survivors(dirs.work) == [] and not dirs.out.exists()
    record_property("outcome", f"exit {code} {time.monotonic() - began:.1f} s after the kill: {line}")


# --- the work directory refuses a write ------------------------------------------------------------------


def test_an_attribution_folder_made_immutable_mid_run_is_exit_12_naming_it_never_a_score(
    untouched_user_tree: Path, small_viewer: Path, clean_run: CleanRun, tmp_path: Path
) -> None:
    dirs = next(fresh_dirs(tmp_path, untouched_user_tree, "immutable"))
    started = started_run(dirs, small_viewer)
    records = None
    try:
        if wait_until(lambda: in_phase("mutants", dirs), started.proc, timeout=120):  # records being written
            records = workspace(dirs) / "attribution" / "mutants"
            made = subprocess.run(["chattr", "+i", str(records)], capture_output=True, text=True)
            if made.returncode:
                pytest.skip(f"chattr +i is not available here: {made.stderr.strip()}")
        code = finish(started, dirs.work)
    finally:
        if records is not None:
            subprocess.run(["chattr", "-i", str(records)], capture_output=True)
        if started.proc.poll() is None:
            started.proc.kill()
            finish(started, dirs.work)
    assert records is not None, f"the mutants phase was not seen (exit {code}): {started.err}"

    assert code == ExitCode.ENVIRONMENT, started.out + started.err
    line = one_line_error(started.err)
    assert str(records) in line and "Operation not permitted" in line
    assert not dirs.out.exists() and not (workspace(dirs) / "result.json").exists()
    rerun_gives(dirs, small_viewer, clean_run)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 MB tmpfs (root only): a disk the test can fill."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mount = shutil.which("mount")
    if os.geteuid() != 0 or mount is None:
        pytest.skip("mounting a small disk needs root")
    if subprocess.run([mount, "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(folder)]).returncode:
        pytest.skip("no tmpfs can be mounted here")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def fill(disk: Path) -> Path:
    """Write one file until the disk refuses even a byte: nothing is left for anyone."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for size in (1 << 20, 1 << 12, 1):
            chunk = b"\0" * size
            try:
                while True:
                    os.write(fd, chunk)
            except OSError as err:
                assert err.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


def test_a_disk_that_fills_while_the_session_runs_is_exit_12_naming_the_work_directory(
    untouched_user_tree: Path, small_viewer: Path, clean_run: CleanRun, small_disk: Path
) -> None:
    dirs = RunDirs(untouched_user_tree, small_disk / "report", small_disk / "work")
    started = start(cli_args(dirs.tree, dirs.out, dirs.work, small_viewer), small_disk, small_disk.parent / "logs")
    named = wait_until(lambda: bool(dirs.glob("identities.json")), started.proc, timeout=120)
    if named:  # the session runs its guards (the stats, the clean run): the disk fills under it
        filler = fill(small_disk)
    code = finish(started, dirs.work)
    assert named, f"the run ended (exit {code}) before its mutants were named: {started.err}"

    assert code == ExitCode.ENVIRONMENT, started.out + started.err  # not 1: "the clean guards failed"
    line = one_line_error(started.err)
    assert f"cannot write in the work directory {workspace(dirs)}" in line and "No space left" in line
    assert not dirs.out.exists()
    filler.unlink()
    rerun_gives(dirs, small_viewer, clean_run)
