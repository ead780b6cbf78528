"""Which test each pytest session of a suite's run is running (`mutate --tests`): what a session that stopped
working, or a worker stopped at its time limit, was doing.

The suite's plugin writes `attribution/running/<what it runs>.json` as each test starts (what it runs: the mutant's
name, or `unmutated`) and removes it when its session ends; a file left behind is a session that never ended.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from warnonce_guard.common.files import write_atomic

UNMUTATED = "unmutated"  # the name of a session on the unmutated code (mutmut's stats and clean runs)


def _path(attribution: Path, mutant: str) -> Path:
    return attribution / "running" / f"{mutant or UNMUTATED}.json"


def starting(attribution: Path, mutant: str, test: str) -> None:
    """This process starts `test` on `mutant` ("" for the unmutated code); best effort: a full disk names nothing."""
    with contextlib.suppress(OSError):
        path = _path(attribution, mutant)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps({"pid": os.getpid(), "test": test}))


def ended(attribution: Path, mutant: str) -> None:
    """This process's session on `mutant` ended."""
    with contextlib.suppress(OSError):
        _path(attribution, mutant).unlink(missing_ok=True)


def last_tests(attribution: Path) -> dict[str, tuple[int, str]]:
    """What each session that did not end was running: mutant name (or `UNMUTATED`) -> (its pid, the test)."""
    found = {}
    for path in sorted((attribution / "running").glob("*.json")):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            data = json.loads(path.read_text(encoding="utf-8"))
            found[path.stem] = (int(data["pid"]), str(data["test"]))
    return found


def running_now(attribution: Path) -> list[str]:
    """The tests running right now in a live process, each as `test (on the unmutated code)` or `test (on M)`."""
    out = []
    for mutant, (pid, test) in last_tests(attribution).items():
        if _alive(pid):
            where = "the unmutated code" if mutant == UNMUTATED else mutant
            out.append(f"{test} (on {where})")
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's, with our pid reused: not ours, but alive
        return True
    return True
