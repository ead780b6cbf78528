"""First on a scenario's PYTHONPATH: each Python process of it (the scenario, EngineCore and its workers, which
vLLM spawns) dies when the process that started it dies, even by SIGKILL (Linux's PR_SET_PDEATHSIG).

A parent that died before the request was made never signals: a process whose parent, as the environment names it
(`protocol.PARENT_PID`), is gone by then exits at once. Each process names itself to the children it will start.
"""

import os
from pathlib import Path

from warnonce_guard.common import protocol
from warnonce_guard.common.processes import die_with_parent


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


die_with_parent()
_parent = protocol.settings().parent_pid
if _parent is not None and os.getppid() != _parent and _gone(_parent):
    os._exit(1)
protocol.tell_parent(os.environ, os.getpid())
