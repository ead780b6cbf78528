"""Start one scenario in an engine environment and leave no process behind, whatever happens.

The scenario runs in a process group of its own (`start_new_session`), told this process's pid so that it dies
with it (`common.processes.bind_to_parent`), with `startup/` first on its PYTHONPATH so that every Python process
of the group, EngineCore and its workers included, asks Linux to kill it when its parent dies (PR_SET_PDEATHSIG).
Whether the scenario ends, fails, hangs past its timeout or this process is interrupted, the group is stopped
(`common.processes.stop_group`) and the run checks that none of it is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from warnonce_guard.common.processes import child_environment, stop_group

from tools.real_engine.row import Row

ROOT = Path(__file__).resolve().parents[2]
STARTUP = Path(__file__).resolve().parent / "startup"  # sitecustomize.py: every process dies with its parent
TIMEOUT_S = 600.0  # one run takes about 50 s on two cores; a hung one is stopped
GONE_WAIT_S = 10.0


class ScenarioFailed(AssertionError):
    """The scenario did not write its row; the message ends with the tail of its output."""


class ProcessesLeft(AssertionError):
    """A process of the scenario's group outlived the run."""


@dataclass(frozen=True)
class Run:
    """Where one scenario writes: its row, its output, and its vLLM cache root (its own unless `shared_cache`)."""

    folder: Path
    shared_cache: Path | None = None  # another run's cache root: only to show the warm-cache trap

    @property
    def row_file(self) -> Path:
        return self.folder / "row.json"

    @property
    def log(self) -> Path:
        return self.folder / "output.log"

    @property
    def cache_root(self) -> Path:
        return self.shared_cache or self.folder / "vllm-cache"


def scenario_environment(environ: Mapping[str, str], cache_root: Path) -> dict[str, str]:
    """The scenario's environment: offline, its own vLLM cache (a warm model-info cache skips import_kernels in
    the parent), the checkout and `startup/` on its path, this process as its parent."""
    path = os.pathsep.join([str(STARTUP), str(ROOT), *filter(None, [environ.get("PYTHONPATH")])])
    return child_environment(
        environ,
        PYTHONPATH=path,
        VLLM_CACHE_ROOT=str(cache_root),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1",
        DO_NOT_TRACK="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONDONTWRITEBYTECODE="1",
    )


def run_scenario(
    python: Path,
    model: Path,
    run: Run,
    *,
    refuse: bool,
    workspace: Path | None = None,
    mutant: str = "",
    wait_s: float = 15.0,
    timeout_s: float = TIMEOUT_S,
) -> Row:
    """Run the scenario with `python` (an engine environment's) and return its row; `ScenarioFailed` without one."""
    run.folder.mkdir(parents=True, exist_ok=True)
    run.row_file.unlink(missing_ok=True)
    command = [str(python), "-m", "tools.real_engine.scenario", f"--model={model}", f"--out={run.row_file}"]
    command += [f"--wait={wait_s}", *(["--refuse"] if refuse else [])]
    if workspace is not None:
        command += [f"--workspace={workspace}", f"--mutant={mutant}"]
    status = run_group(command, scenario_environment(os.environ, run.cache_root), run.log, timeout_s)
    if status != 0 or not run.row_file.is_file():
        raise ScenarioFailed(f"the scenario exited with {status} and no row; its output ends:\n{tail(run.log)}")
    return Row.read(run.row_file)


def run_group(command: list[str], env: Mapping[str, str], log: Path, timeout_s: float) -> int | None:
    """Run `command` in a process group of its own, its output into `log`, for at most `timeout_s`; stop the group
    however it ends (`stop_group`), check it is empty, and return the command's exit status (None: timed out)."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            status = proc.poll()
            stop_group(proc)
            wait_until_gone(proc.pid)
    return None if timed_out else status


def group_alive(pgid: int) -> bool:
    """Whether any process of the group is still there (zombies do not count: they have exited)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":  # state, ppid, pgrp
            return True
    return False


def wait_until_gone(pgid: int, wait_s: float = GONE_WAIT_S) -> None:
    """Return once the group is empty; SIGKILL what remains halfway, `ProcessesLeft` if it still is not."""
    deadline = time.monotonic() + wait_s
    killed = False
    while group_alive(pgid):
        if time.monotonic() > deadline:
            raise ProcessesLeft(f"process group {pgid} still has processes {wait_s:.0f} s after it was stopped")
        if not killed and time.monotonic() > deadline - wait_s / 2:
            kill_group(pgid)
            killed = True
        time.sleep(0.1)


def kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def tail(path: Path, lines: int = 40) -> str:
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else "(no output)"
    return "\n".join(text.splitlines()[-lines:])
