"""What the fault campaign shares with the fault-injection tests (tests/faults.py imports it from here): the toy
trees' shapes, a run's folders, a command line started in the background, whether a process answers stop signals,
a report's verdicts, and hashes of the files a run must leave alone."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from warnonce_guard.mutations.operators import OPERATORS

from tools.toy_vllm import INTERFACE, apply_operator, make_tree

# One site in the toy tree: one mutant per operator that fits its call (from the operator registry).
MUTANTS = sum(len(apply_operator(name, INTERFACE)) for name in OPERATORS)
SESSION_MODULE = "warnonce_guard.mutations.engine.session"  # in the mutmut session's command line
# A holdable tree's guard of a mutant waits while the file this variable names exists, having made `<it>.held`.
HOLD_VARIABLE = "WARNONCE_TOY_HOLD"
# A run whose environment sets this skips the guards' naps (`unhurried`): a clean run or a rerun that only has to end.
NO_NAP_VARIABLE = "WARNONCE_TOY_NO_NAP"


# --- trees -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TreeShape:
    """How much slower than the plain toy a tree makes each phase, and how many sites it has."""

    filler_files: int = 0  # extra modules: the fingerprint and discovery read them all
    filler_functions: int = 0  # site-less functions in the site file: mutmut's generation parses them all
    guard_sleep_s: float = 0.0  # at the top of import_kernels, which each guard calls twice (not in `unhurried`)
    kernels: tuple[str, ...] = ("_C",)  # one site per kernel module, all in import_kernels: each guard runs all
    platforms: tuple[str, ...] = ()  # more platform modules (cpu.py: class CpuPlatform), each like interface.py
    holdable: bool = False  # a run in its mutants phase for as long as a test needs: see `held`

    @property
    def sites(self) -> int:
        return len(self.kernels) * (1 + len(self.platforms))

    @property
    def mutants(self) -> int:
        return MUTANTS * self.sites


_MORE_KERNELS = """        try:
            import vllm.KERNEL  # noqa: F401
        except ImportError as e:
            logger.warning_once("Failed to import from vllm.KERNEL: %s", repr(e))
"""


def slow_interface(shape: TreeShape) -> str:
    source = INTERFACE.replace("vllm._C", f"vllm.{shape.kernels[0]}")
    source += "".join(_MORE_KERNELS.replace("KERNEL", kernel) for kernel in shape.kernels[1:])
    if shape.guard_sleep_s:
        nap = f"""        import os
        import time

        if not os.environ.get("{NO_NAP_VARIABLE}"):
            time.sleep({shape.guard_sleep_s})
        try:
"""
        source = source.replace("        try:\n", nap, 1)
    if shape.holdable:
        source = source.replace("        try:\n", _HOLD, 1)
    fillers = "".join(f"\n\ndef filler_{i}(x):\n    return x + {i}\n" for i in range(shape.filler_functions))
    return source + fillers


_HOLD = f"""        import os
        import time

        hold = os.environ.get("{HOLD_VARIABLE}")
        if hold and "__mutmut_" in os.environ.get("MUTANT_UNDER_TEST", ""):  # a mutant's guard, not the clean run's
            open(hold + ".held", "w").close()
            while os.path.exists(hold):
                time.sleep(0.01)
        try:
"""


def held(hold: Path) -> dict[str, str]:
    """The environment of a run of a holdable tree whose mutants' guards wait while `hold` exists (each makes
    `hold.held` first): the run holds its lock in its mutants phase until the test removes `hold`."""
    hold.touch()
    return {**os.environ, HOLD_VARIABLE: str(hold)}


def unhurried() -> dict[str, str]:
    """The environment of a run whose guards skip the tree's naps: the phases a test aims at last as long as
    `guard_sleep_s` makes them only in the runs it interrupts."""
    return {**os.environ, NO_NAP_VARIABLE: "1"}


def fault_tree(root: Path, shape: TreeShape) -> Path:
    """A toy vLLM tree (tools/toy_vllm.py) shaped by `shape`."""
    make_tree(root, slow_interface(shape))
    for name in shape.platforms:
        source = slow_interface(shape).replace("class Platform", f"class {name.title()}Platform")
        (root / "vllm" / "platforms" / f"{name}.py").write_text(source)
    filler = root / "vllm" / "filler"
    for i in range(shape.filler_files):
        package = filler / f"p{i // 500}"
        if i % 500 == 0:
            package.mkdir(parents=True)
            (package / "__init__.py").write_text("")
        (package / f"m{i}.py").write_text(f"VALUE = {i}\n")
    if shape.filler_files:
        (filler / "__init__.py").write_text("")
    return root


# --- the user's files ------------------------------------------------------------------------------------


def hash_tree(*roots: Path) -> dict[str, str]:
    """Every file, symlink and directory under `roots` (and the roots), with its content hash and mode."""
    out: dict[str, str] = {}
    for root in roots:
        for path in [root, *sorted(root.rglob("*"))] if root.exists() else []:
            mode = path.lstat().st_mode  # one call: the type from it too (a big toy tree is hashed around every test)
            if stat.S_ISLNK(mode):
                what = f"link {os.readlink(path)}"
            elif stat.S_ISDIR(mode):
                what = "dir"
            else:
                what = hashlib.sha256(path.read_bytes()).hexdigest()
            out[str(path)] = f"{oct(mode)} {what}"
    return out


# --- running the command line ----------------------------------------------------------------------------


@dataclass
class Started:
    """A CLI run in the background: its own session (so a group signal reaches it like a terminal's Ctrl-C)."""

    proc: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path

    def wait(self, timeout: float = 120.0) -> int:
        return self.proc.wait(timeout=timeout)

    @property
    def err(self) -> str:
        return self.stderr.read_text(errors="replace")

    @property
    def out(self) -> str:
        return self.stdout.read_text(errors="replace")


def start(args: list[str], cwd: Path, logs: Path, env: dict[str, str] | None = None) -> Started:
    logs.mkdir(parents=True, exist_ok=True)
    stdout, stderr = logs / "stdout", logs / "stderr"
    with stdout.open("wb") as o, stderr.open("wb") as e:
        proc = subprocess.Popen(args, cwd=cwd, stdout=o, stderr=e, env=env, start_new_session=True)
    return Started(proc, stdout, stderr)


def answers_stop_signals(pid: int) -> bool:
    """Whether the process catches SIGTERM: Python catches only SIGINT by itself, so this is true from the first
    instruction of warnonce-guard's own (its entry module installs the handlers) until it ends."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1]
    return bool(int(caught, 16) & (1 << (signal.SIGTERM - 1)))


# --- a run's folders -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunDirs:
    tree: Path
    out: Path
    work: Path

    def workspaces(self) -> list[Path]:
        return [p for p in self.work.iterdir() if p.is_dir()] if self.work.is_dir() else []

    def glob(self, pattern: str) -> list[Path]:
        return [path for ws in self.workspaces() for path in ws.glob(pattern)]

    def finished_mutants(self) -> int:
        return len(self.glob("attribution/mutants/*.json"))

    def building_report(self) -> bool:
        return any(self.out.parent.glob(f".{self.out.name}.tmp-*"))


# --- verdicts --------------------------------------------------------------------------------------------

# A row of summary.md's "Sites at baseline": site, line, form, status (bold unless guarded), detectors, operators.
_CELL = r"(?:[^|\\]|\\.)*?"  # a cell's text: anything but a pipe that is not escaped
_BASELINE_ROW = re.compile(
    rf"^\| `(?P<site>[^`]+)` \| \d+ \| \**\w+\** \| \**(?P<status>\w+)\** \| (?P<detectors>{_CELL}) \| {_CELL} \|$"
)


@dataclass(frozen=True)
class Verdicts:
    """What a report says, without timings and paths: per mutant id, per site at baseline."""

    mutants: dict[str, tuple[str, str, tuple[str, ...]]]  # id -> (status, operator, killed by)
    sites: dict[str, tuple[str, str]]  # site id -> (status, detectors)


def read_verdicts(out: Path) -> Verdicts:
    report = json.loads((out / "mutation.json").read_text(encoding="utf-8"))
    mutants = {
        m["id"]: (m["status"], m["mutatorName"], tuple(m.get("killedBy") or ()))
        for file in report["files"].values()
        for m in file["mutants"]
    }
    sites = {}
    for line in (out / "summary.md").read_text(encoding="utf-8").splitlines():
        if match := _BASELINE_ROW.match(line):
            sites[match["site"]] = (match["status"], match["detectors"])
    return Verdicts(mutants, sites)
