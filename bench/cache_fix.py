"""What the cache-level fix costs: one `*_once` call, vLLM's own logger against the same patched by `export-fix`.

    .nox/guard/bin/python bench/cache_fix.py [--vllm-src PATH] [--calls N] [--repeat R]

Both loggers are the target's `vllm/logger.py` (the installed vLLM by default), the patched one loaded beside it under
a name of its own (nothing installed is written), each on a logger of its own with a handler that drops records. Per
case, ns per call and the patched/stock ratio, the medians of R pairs of runs of N calls, timed in this process's CPU
time (stock and patched alternated in each pair, the order swapped every other pair, so that a load that comes and goes
weighs on both alike):

- new message: `warning_once("kernel %s missing", i)`, a new `i` each call: a cache miss, a record emitted;
- repeated: the same `warning_once` call each time: a cache hit, nothing emitted (what a hot path pays);
- disabled level: the same `debug_once` call with the logger at WARNING: nothing emitted either way; vLLM's caches
  the call, the patch asks `isEnabledFor` and renders nothing.

Targets (issue 41): each ratio <= 1.05x; a regression shows as a ratio that moves.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
import tempfile
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from statistics import median
from types import ModuleType

from warnonce_guard.caches.cache_fix import STORE, patched
from warnonce_guard.rule.target import resolve_target

CASES = ("new message", "repeated", "disabled level")


def load(name: str, source: str, folder: Path) -> ModuleType:
    path = folder / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def quiet_logger(module: ModuleType, name: str, level: int) -> logging.Logger:
    logger = module.init_logger(name)
    logger.handlers, logger.propagate = [logging.NullHandler()], False
    logger.setLevel(level)
    return logger


def cases(logger: logging.Logger, disabled: logging.Logger, calls: int) -> dict[str, Callable[[], None]]:
    texts = [str(i) for i in range(calls)]
    error = repr(ImportError("No module named 'vllm._C'"))

    def new() -> None:
        for text in texts:
            logger.warning_once("kernel %s missing", text)  # type: ignore[attr-defined]

    def repeated() -> None:
        for _ in texts:
            logger.warning_once("Failed to import from vllm._C: %s", error)  # type: ignore[attr-defined]

    def off() -> None:
        for _ in texts:
            disabled.debug_once("Failed to import from vllm._C: %s", error)  # type: ignore[attr-defined]

    return dict(zip(CASES, (new, repeated, off), strict=True))


def clear(module: ModuleType) -> None:
    """Forget every message the module's `*_once` methods logged: its lru_caches, or the patch's store of keys."""
    for name, cached in vars(module).items():
        if hasattr(cached, "cache_clear"):
            cached.cache_clear()
        elif name == STORE:
            cached.clear()


def run_once(module: ModuleType, run: Callable[[], None]) -> float:
    """Seconds of this process's CPU time for one run (time spent waiting for a core, on a loaded machine, is not)."""
    clear(module)
    return timeit.timeit(run, number=1, timer=time.process_time)


def measure(modules: dict[str, ModuleType], calls: int, repeat: int) -> dict[str, dict[str, list[float]]]:
    """ns per call of each case for each module, `repeat` runs each, the modules alternated within each pair (the
    order swapped every other pair) so that both see the same load."""
    runs = {
        tag: cases(
            quiet_logger(module, f"bench.{tag}", logging.DEBUG),
            quiet_logger(module, f"bench.{tag}.off", logging.WARNING),
            calls,
        )
        for tag, module in modules.items()
    }
    found: dict[str, dict[str, list[float]]] = {case: {tag: [] for tag in modules} for case in CASES}
    for index in range(repeat):
        for case in CASES:
            order = list(modules) if index % 2 == 0 else list(reversed(modules))
            for tag in order:
                found[case][tag].append(run_once(modules[tag], runs[tag][case]) / calls * 1e9)
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench/cache_fix.py", allow_abbrev=False)
    parser.add_argument("--vllm-src", help="a vLLM tree (default: the installed vLLM)")
    parser.add_argument("--calls", type=int, default=2_000, help="calls per run (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=41, help="pairs of runs per case (default: %(default)s)")
    args = parser.parse_args(argv)
    target = resolve_target(args.vllm_src)
    if args.vllm_src:
        sys.path.insert(0, str(target.root))
    source = (target.package_dir / "logger.py").read_text(encoding="utf-8")
    import vllm.logger as stock  # the target's own, as every vLLM module imports it

    with tempfile.TemporaryDirectory(prefix="bench-cache-fix-") as folder:
        fixed = load("_bench_vllm_logger_fixed", patched(source), Path(folder))
    print(f"{target.describe()}; load average {os.getloadavg()[0]:.2f}; {args.calls} calls x {args.repeat} pairs")
    found = measure({"stock": stock, "patched": fixed}, args.calls, args.repeat)
    print(f"{'warning_once / debug_once':<26}{'stock ns':>10}{'patched ns':>12}{'patched/stock':>15}")
    for case, times in found.items():
        ratios = [after / before for before, after in zip(times["stock"], times["patched"], strict=True)]
        line = f"{case:<26}{median(times['stock']):>10.0f}{median(times['patched']):>12.0f}"
        print(f"{line}{median(ratios):>14.2f}x")
    print(f"load average after: {os.getloadavg()[0]:.2f}; ns and ratios: medians over the pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
