"""Fault injection for `warnonce-guard mutate`: trees that make each phase last, ways to see which phase a
running CLI is in, the verdicts a run reports, and hashes of the files a run must leave alone.

A run's phases, as the work directory shows them (one fresh work directory per run, so "exists" means
"this run wrote it"):

    staging     the workspace has no `setup.cfg` yet: discovery parses, the site files are staged (the mutmut
                session is started meanwhile: it imports, and waits)
    generation  `setup.cfg` is written, the mutmut session is running and `generation.json` is not written yet
    naming      `generation.json` is written and `identities.json` not yet: the run names the mutants (libcst)
    baseline    `generation.json` is written and no mutant has a finished guard session yet
    mutants     some mutants have a finished guard session, not all
    report      a `.<out>.tmp-*` directory is being filled beside --out
"""

from __future__ import annotations

import contextlib
import os
import pickle
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.toy import make_tree

# The campaign's pieces, written once in its tool (tools/campaign/runs.py: a tool imports nothing from tests/); the
# tests import them from here.
from tools.campaign.runs import MUTANTS, SESSION_MODULE, RunDirs, Started, Verdicts
from tools.campaign.runs import TreeShape as TreeShape
from tools.campaign.runs import answers_stop_signals as answers_stop_signals
from tools.campaign.runs import fault_tree as fault_tree
from tools.campaign.runs import hash_tree as hash_tree
from tools.campaign.runs import held as held
from tools.campaign.runs import read_verdicts as read_verdicts
from tools.campaign.runs import slow_interface as slow_interface
from tools.campaign.runs import start as start
from tools.campaign.runs import unhurried as unhurried

ROOT = Path(__file__).resolve().parent.parent
PHASES = ("staging", "generation", "naming", "baseline", "mutants", "report")
NAPPING = ("baseline", "mutants")  # the phases a tree's guard naps make long (TreeShape.guard_sleep_s)
MAKING = ("generation", "naming")  # mutmut makes the mutants (libcst parses the site files), then they are named
ERROR_PREFIX = "warnonce-guard: error: "


# --- trees -----------------------------------------------------------------------------------------------


def big_viewer(path: Path, megabytes: int) -> Path:
    """A stand-in viewer bundle of `megabytes` MB: writing it into index.html keeps the report phase open."""
    chunk = ("/* padding */" * 80 + "\n").encode()
    with path.open("wb") as out:
        out.write(b"/* stand-in for mutation-test-elements.js */\n")
        for _ in range(megabytes * (1 << 20) // len(chunk)):
            out.write(chunk)
    return path


# --- disks ----------------------------------------------------------------------------------------------


@contextlib.contextmanager
def small_disk(folder: Path, size_kb: int) -> Iterator[Path]:
    """`folder` as a tmpfs of `size_kb` KB for the block (root only: the test is skipped where none can be had)."""
    import pytest

    folder.mkdir(parents=True, exist_ok=True)
    mount = shutil.which("mount")
    if os.geteuid() != 0 or mount is None:
        pytest.skip("mounting a small tmpfs needs root")
    if subprocess.run([mount, "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(folder)]).returncode:
        pytest.skip("no tmpfs can be mounted here")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def fill_leaving(disk: Path, free_kb: int) -> None:
    """Empty `disk`, then fill it with one file so that `free_kb` KB stay free."""
    for child in disk.iterdir():
        shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    st = os.statvfs(disk)
    filler = st.f_bavail * st.f_frsize - free_kb * 1024
    if filler > 0:
        fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            os.posix_fallocate(fd, 0, filler)
        finally:
            os.close(fd)


def size_kb(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*")) // 1024


@contextlib.contextmanager
def no_longer_than(seconds: float) -> Iterator[None]:
    """The block must end within `seconds` (a FIFO opened for reading waits for ever): TimeoutError otherwise."""

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- another user -----------------------------------------------------------------------------------------

NOBODY = "nobody"


@contextlib.contextmanager
def held_by_another_run(lock: contextlib.AbstractContextManager[Any]) -> Iterator[None]:
    """For the block, `lock` held by another thread, as another run holds it (a lock is re-entrant per thread)."""
    holding, done = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            holding.set()
            done.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert holding.wait(10)
    try:
        yield
    finally:
        done.set()
        holder.join()


@contextlib.contextmanager
def shared_folder() -> Iterator[Path]:
    """A folder every user can reach (pytest's tmp_path is under a 0700 directory of root's), removed after."""
    folder = Path(tempfile.mkdtemp(prefix="warnonce-shared-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def shared_tree() -> Iterator[Path]:
    """A toy vLLM tree (root's) that every user can reach."""
    with shared_folder() as shared:
        yield make_tree(shared / "tree")


def give_to_nobody(*paths: Path) -> None:
    user = pwd.getpwnam(NOBODY)
    for path in paths:
        os.chown(path, user.pw_uid, user.pw_gid)


def as_nobody(function: Callable[[], Any]) -> Any:
    """`function()` in a forked child running as the unprivileged user nobody; its result (pickled back), or the
    test fails with the child's traceback. Skips unless root (only root can become another user). The child
    imports nothing new the user could not read: call the code once as root first."""
    import pytest

    if os.geteuid() != 0:
        pytest.skip("becoming another user needs root")
    user = pwd.getpwnam(NOBODY)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            outcome: tuple[str, Any] = ("returned", function())
        except BaseException:
            outcome = ("raised", traceback.format_exc())
        with os.fdopen(write, "wb") as out:
            pickle.dump(outcome, out)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        kind, value = pickle.load(pipe)
    os.waitpid(pid, 0)
    if kind == "raised":
        pytest.fail(f"as {NOBODY}:\n{value}")
    return value


# --- running the command line ----------------------------------------------------------------------------


def cli_args(tree: Path, out: Path, work: Path, viewer: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "warnonce_guard.cli", "mutate",
        "--vllm-src", str(tree), "--out", str(out), "--work-dir", str(work), "--viewer-js", str(viewer), *extra,
    ]  # fmt: skip


def run(
    args: list[str], cwd: Path, timeout: float = 180.0, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def rerun_of(dirs: RunDirs, viewer: Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The run again in the same work directory, without the tree's naps: it only has to end."""
    return run(cli_args(dirs.tree, dirs.out, dirs.work, viewer), cwd=cwd or dirs.work.parent, env=unhurried())


def send(started: Started, sig: signal.Signals) -> None:
    """SIGINT to the whole process group, as a terminal's Ctrl-C; SIGTERM and SIGKILL to the process."""
    if sig == signal.SIGINT:
        os.killpg(started.proc.pid, sig)
    else:
        started.proc.send_signal(sig)


def one_line_error(stderr: str) -> str:
    """The single `warnonce-guard: error:` line of `stderr` (asserting there is exactly one line, no traceback)."""
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1 and lines[0].startswith(ERROR_PREFIX), stderr
    return lines[0]


# --- processes -------------------------------------------------------------------------------------------


def processes_mentioning(text: str) -> list[tuple[int, str]]:
    """Live (not zombie) processes whose command line contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            status = (entry / "stat").read_text()
        except OSError:
            continue
        if text in cmdline and status.rsplit(")", 1)[-1].split()[0] != "Z":
            found.append((int(entry.name), cmdline))
    return found


def children_of(pid: int) -> list[int]:
    """Live processes whose parent is `pid` (the forks of a command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if entry.name.isdigit() and fields[0] != "Z" and int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def session_pids(work: Path) -> list[int]:
    """The mutmut session of the run using `work` and its forks (the generator, the warmed child that runs mutmut
    once it took over): every live process with the session's command line, oldest (lowest pid) first."""
    return sorted(pid for pid, cmd in processes_mentioning(str(work)) if _is_session_of(cmd, work))


def session_pid(work: Path) -> int | None:
    """The mutmut session of the run using `work`, if it runs."""
    return next(iter(session_pids(work)), None)


def cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def mutmut_workers(work: Path) -> dict[int, str]:
    """The session's workers testing a mutant, by pid: mutmut titles each `mutmut: <mutant>` (they are children of
    the session, or of its warmed child that runs mutmut)."""
    titles = {pid: cmdline(pid).strip() for session in session_pids(work) for pid in children_of(session)}
    return {pid: title.removeprefix("mutmut: ") for pid, title in titles.items() if title.startswith("mutmut: ")}


_SEEN_SESSIONS: dict[Path, int] = {}  # work directory -> a session process seen using it


def session_alive(work: Path) -> bool:
    """Whether a mutmut session of the run using `work` is alive: the one seen last asked first (one file read), every
    process only when it is gone (a scan of /proc takes some 8 ms, and a phase is polled every 3 ms)."""
    seen = _SEEN_SESSIONS.get(work)
    if seen is not None and _is_session_of(cmdline(seen), work):  # a zombie's command line reads empty
        return True
    found = session_pid(work)
    if found is not None:
        _SEEN_SESSIONS[work] = found
    return found is not None


def _is_session_of(command: str, work: Path) -> bool:
    return SESSION_MODULE in command and str(work) in command


def survivors(work: Path, within_s: float = 1.0) -> list[tuple[int, str]]:
    """Processes still mentioning `work` after `within_s` seconds (the CLI, its forks, the mutmut session)."""
    deadline = time.monotonic() + within_s
    while True:
        left = processes_mentioning(str(work))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


# --- phases ----------------------------------------------------------------------------------------------


def in_phase(phase: str, dirs: RunDirs) -> bool:
    """Whether the run using `dirs` is in `phase` now."""
    if phase == "staging":
        return bool(dirs.workspaces()) and not dirs.glob("setup.cfg")
    if phase == "generation":
        return bool(dirs.glob("setup.cfg")) and session_alive(dirs.work) and not dirs.glob("generation.json")
    if phase == "naming":
        return bool(dirs.glob("generation.json")) and not dirs.glob("identities.json")
    if phase == "baseline":
        return bool(dirs.glob("generation.json")) and dirs.finished_mutants() == 0
    if phase == "mutants":
        return 0 < dirs.finished_mutants() < MUTANTS
    if phase == "report":
        return dirs.building_report()
    raise ValueError(phase)


def stopped_in(phase: str, dirs: RunDirs) -> bool:
    """After the run died: whether what it left shows it never got past `phase` (the signal was in time)."""
    if (dirs.out / "mutation.json").exists():
        return False  # the report was written: every phase was over
    if phase == "staging":
        return not dirs.glob("setup.cfg")  # written right after the site files are staged
    if phase == "generation":
        return bool(dirs.glob("setup.cfg")) and not dirs.glob("generation.json")
    if phase == "naming":
        return bool(dirs.glob("generation.json")) and not dirs.glob("identities.json")
    if phase == "baseline":
        return bool(dirs.glob("generation.json")) and dirs.finished_mutants() == 0
    if phase == "mutants":
        return 0 < dirs.finished_mutants() < MUTANTS
    if phase == "report":
        return dirs.finished_mutants() == MUTANTS
    raise ValueError(phase)


def wait_until(condition: Callable[[], bool], proc: subprocess.Popen[bytes], timeout: float = 60.0) -> bool:
    """Poll `condition` until it holds (True) or the process ended or time ran out (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.003)
    return False


def phases_seconds(phases: tuple[str, ...], dirs: RunDirs, started: Started) -> float:
    """How long the run using `dirs` is seen in one of `phases` (polled as `in_phase` does; 0.0 if never seen)."""
    seen = lambda: any(in_phase(phase, dirs) for phase in phases)  # noqa: E731
    if not wait_until(seen, started.proc, timeout=120):
        return 0.0
    began = time.monotonic()
    wait_until(lambda: not seen(), started.proc, timeout=120)
    return time.monotonic() - began


# --- verdicts --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CleanRun:
    """An uninterrupted run: its verdicts, and its work directory (complete; copied by tests that damage one)."""

    verdicts: Verdicts
    work: Path
    making_s: float  # how long it was seen making and naming the mutants (generation, naming)


def fresh_dirs(base: Path, tree: Path, name: str) -> Iterator[RunDirs]:
    """Numbered run directories under `base` (attempt 1, 2, ...), each with a fresh --out and --work-dir."""
    attempt = 0
    while True:
        attempt += 1
        folder = base / f"{name}-{attempt}"
        folder.mkdir(parents=True)
        yield RunDirs(tree, folder / "report", folder / "work")


# --- a run stopped by signals ---------------------------------------------------------------------------

ATTEMPTS = 3  # a signal that missed its moment is sent again to a fresh run this often, then the case says so
EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGKILL: -signal.SIGKILL}
SAYS = {signal.SIGINT: "warnonce-guard: interrupted", signal.SIGTERM: "warnonce-guard: terminated"}
# Each phase long enough to poll for: 3000 files to stage, 400 functions to generate from, slow guards.
BIG_TREE = TreeShape(filler_files=3000, filler_functions=2000, guard_sleep_s=0.3)


def started_run(dirs: RunDirs, viewer: Path, naps: bool = True) -> Started:
    """The run, in the background; its guards nap as the tree says unless `naps` is False (a test that aims at a
    phase the naps do not make long: `NAPPING`)."""
    env = None if naps else unhurried()
    return start(cli_args(dirs.tree, dirs.out, dirs.work, viewer), dirs.work.parent, dirs.work.parent / "logs", env)


def waited(started: Started) -> int:
    """The run's exit code, waited for two minutes at most; a run still going then is killed."""
    try:
        return started.wait(timeout=120)
    finally:
        if started.proc.poll() is None:
            started.proc.kill()


def ended_with_one_line(started: Started, sig: signal.Signals, dirs: RunDirs) -> int:
    """Wait for the run; assert it ended with `sig`'s code and line alone, leaving no process behind."""
    code = waited(started)
    assert survivors(dirs.work, within_s=1.0) == []
    assert "Traceback" not in started.err + started.out, started.err
    assert code == EXIT[sig], f"exit {code}: {started.err}"
    assert started.err.splitlines() == [started.err.strip()] and started.err.startswith(SAYS[sig]), started.err
    return code
