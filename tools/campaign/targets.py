"""What a campaign runs on: toy trees of several shapes (runs.py) and the installed vLLM, each with its
command line, the files no run may change, and its clean run (verdicts, exit code, when each process lived)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

from tools.campaign.runs import RunDirs, TreeShape, Verdicts, fault_tree

# Each phase of a different length: the plain toy, slow guards (a long mutant phase), a big tree (long
# staging and generation), four sites (more mutants, more guards: killed-by has a choice to make).
TOYS: dict[str, TreeShape] = {
    "toy": TreeShape(),
    "toy-slow": TreeShape(guard_sleep_s=0.3),
    "toy-big": TreeShape(filler_files=3000, filler_functions=400, guard_sleep_s=0.3),
    "toy-4-sites": TreeShape(platforms=("cpu", "cuda", "rocm")),
}
VLLM = "vllm"  # the vLLM installed in this environment (`nox -s faults` installs the pinned one)


def command_line() -> list[str]:
    """`warnonce-guard` as installed beside this interpreter (the console script), else `python -m`."""
    script = Path(sys.executable).parent / "warnonce-guard"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "warnonce_guard.cli"]


def installed_vllm() -> tuple[Path, str] | None:
    """The installed vLLM's package folder and version, found without importing it (None: not installed)."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent, importlib.metadata.version("vllm")


@dataclass(frozen=True)
class Target:
    name: str
    files: Path  # what no run may change: the toy tree, or the installed vLLM package
    source: Path | None  # --vllm-src (None: the installed vLLM)
    viewer: Path | None  # --viewer-js (a small stand-in for toys: their report phase stays short)

    def command(self, dirs: RunDirs) -> list[str]:
        args = [*command_line(), "mutate", "--out", str(dirs.out), "--work-dir", str(dirs.work)]
        if self.source is not None:
            args += ["--vllm-src", str(self.source)]
        if self.viewer is not None:
            args += ["--viewer-js", str(self.viewer)]
        return args


def make_target(name: str, folder: Path) -> Target:
    """The target called `name`, its tree (for a toy) written under `folder`."""
    if name == VLLM:
        found = installed_vllm()
        if found is None:
            raise LookupError("vLLM is not installed here: run the campaign with `nox -s faults`, or --vllm-trials 0")
        return Target(VLLM, found[0], None, None)
    tree = fault_tree(folder / name / "tree", TOYS[name])
    viewer = folder / name / "viewer.js"
    viewer.write_text("/* stand-in for mutation-test-elements.js */\n", encoding="utf-8")
    return Target(name, tree, tree, viewer)


@dataclass(frozen=True)
class Clean:
    """A target's clean run: what every trial on it is compared with, and when to fault it."""

    verdicts: Verdicts
    exit_code: int
    mutants: int
    run_s: float
    session: tuple[float, float] | None
    workers: tuple[float, float] | None


def user_folder(folder: Path) -> Path:
    """A user's folder beside the work directory: a file, a nested one, a symlink. No run may touch it."""
    (folder / "data").mkdir(parents=True)
    (folder / "notes.txt").write_text("mine\n", encoding="utf-8")
    (folder / "data" / "results.json").write_text('{"score": 100}\n', encoding="utf-8")
    (folder / "latest").symlink_to("notes.txt")
    return folder
