"""Whether the mutmut session still works: the CPU time its process group uses.

A group that used no CPU for twice mutmut's longest time limit (never less than `STALL_FLOOR_S`) waits on
something that will not come; a session that works is never given a wall-clock limit.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from warnonce_guard.common.errors import BadRecord, SessionLost
from warnonce_guard.mutations.engine import config, layout, state
from warnonce_guard.mutations.workspace import Workspace

STALL_FLOOR_S = 300.0  # the shortest stall that ends a session (a guard of the toy takes a second)
SAMPLE_S = 2.0  # how often the group's CPU time is read


class _Process(Protocol):
    def poll(self) -> int | None: ...


def group_cpu_ticks(pgid: int, proc: Path = Path("/proc")) -> int | None:
    """CPU time (clock ticks) used by the processes of group `pgid` and the children they reaped; None when
    /proc cannot say (not Linux)."""
    total, seen = 0, False
    try:
        entries = list(proc.iterdir())
    except OSError:
        return None
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # after the command: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
        # cutime cstime
        if len(fields) > 14 and int(fields[2]) == pgid:
            total += sum(int(f) for f in fields[11:15])
            seen = True
    return total if seen else None


def stall_limit(ws: Workspace) -> float:
    """How long the session may use no CPU: twice mutmut's wall-clock limit for a mutant whose guards take as
    long as all the guards measured (mutmut-stats.json), and at least `STALL_FLOOR_S`."""
    try:
        data = json.loads(layout.stats(ws).read_text(encoding="utf-8"))
        state.parse_stats(data)
        worst = sum(float(v) for v in data["duration_by_test"].values())
    except (OSError, ValueError, TypeError, BadRecord):
        worst = 0.0
    settings = config.SETTINGS
    limit = (worst + float(str(settings["timeout_constant"]))) * float(str(settings["timeout_multiplier"]))
    return max(STALL_FLOOR_S, 2 * limit)


class Watch:
    """Raises `SessionLost` from `check` once the session's group has used no CPU for `limit()` seconds (never where
    `ticks` cannot say: no /proc, not Linux), naming the tests `running()` says were running."""

    def __init__(
        self,
        session: _Process,
        limit: Callable[[], float],
        ticks: Callable[[int], int | None] = group_cpu_ticks,
        clock: Callable[[], float] = time.monotonic,
        running: Callable[[], list[str]] = list,
    ) -> None:
        self.pid: int | None = getattr(session, "pid", None)  # a stand-in without a pid is not watched
        self.limit, self.ticks, self.clock, self.running = limit, ticks, clock, running
        self.last: int | None = None
        self.since = self.sampled = clock()

    def check(self) -> None:
        if self.pid is None:
            return
        now = self.clock()
        if now - self.sampled < SAMPLE_S:
            return
        self.sampled = now
        ticks = self.ticks(self.pid)
        if ticks is None or ticks != self.last:
            self.last, self.since = ticks, now
            return
        idle = now - self.since
        if idle > (limit := self.limit()):
            stalled = f"the mutmut session and its workers used no CPU for {idle:.0f} s (limit {limit:.0f} s)"
            if tests := self.running():
                stalled += (
                    f" while {'; '.join(tests)} ran: a test that hangs; give --timeout SECONDS to fail a test that "
                    "runs longer"
                )
            raise SessionLost(stalled)
