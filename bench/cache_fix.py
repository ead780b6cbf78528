"""What the cache-level fix costs: one `*_once` call, vLLM's own logger against the same patched by `export-fix`.

    .nox/guard/bin/python bench/cache_fix.py [--vllm-src PATH] [--calls N] [--repeat R]

Both loggers are the target's `vllm/logger.py` (the installed vLLM by default), the patched one loaded beside it under
a name of its own (nothing installed is written), each on a logger of its own with a handler that drops records. Per
case, ns per call (the best of R runs of N calls) and the patched/stock ratio:

- new message: `warning_once("kernel %s missing", i)`, a new `i` each call: a cache miss, a record emitted;
- repeated: the same `warning_once` call each time: a cache hit, nothing emitted (what a hot path pays);
- disabled level: the same `debug_once` call with the logger at WARNING: nothing emitted either way; the patch
  renders the message before the cache sees it, where vLLM's hashes the arguments.

No target: the ratios are for the closing note of issue 35; a regression shows as a ratio that moves.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from warnonce_guard.caches.cache_fix import patched
from warnonce_guard.rule.target import resolve_target


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

    return {"new message": new, "repeated": repeated, "disabled level": off}


def clear(module: ModuleType) -> None:
    for cached in vars(module).values():
        if hasattr(cached, "cache_clear"):
            cached.cache_clear()


def measure(module: ModuleType, tag: str, calls: int, repeat: int) -> dict[str, float]:
    """ns per call of each case, the best of `repeat` runs (the caches cleared before each)."""
    logger = quiet_logger(module, f"bench.{tag}", logging.DEBUG)
    disabled = quiet_logger(module, f"bench.{tag}.off", logging.WARNING)
    found = {}
    for case, run in cases(logger, disabled, calls).items():
        times = []
        for _ in range(repeat):
            clear(module)
            times.append(timeit.timeit(run, number=1))
        found[case] = min(times) / calls * 1e9
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench/cache_fix.py", allow_abbrev=False)
    parser.add_argument("--vllm-src", help="a vLLM tree (default: the installed vLLM)")
    parser.add_argument("--calls", type=int, default=20_000, help="calls per run (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=7, help="runs per case, the best kept (default: %(default)s)")
    args = parser.parse_args(argv)
    target = resolve_target(args.vllm_src)
    if args.vllm_src:
        sys.path.insert(0, str(target.root))
    source = (target.package_dir / "logger.py").read_text(encoding="utf-8")
    import vllm.logger as stock  # the target's own, as every vLLM module imports it

    with tempfile.TemporaryDirectory(prefix="bench-cache-fix-") as folder:
        fixed = load("_bench_vllm_logger_fixed", patched(source), Path(folder))
    print(f"{target.describe()}; load average {os.getloadavg()[0]:.2f}; {args.calls} calls x best of {args.repeat}")
    before, after = measure(stock, "stock", args.calls, args.repeat), measure(fixed, "fixed", args.calls, args.repeat)
    print(f"{'warning_once / debug_once':<26}{'stock ns':>10}{'patched ns':>12}{'patched/stock':>15}")
    for case in before:
        print(f"{case:<26}{before[case]:>10.0f}{after[case]:>12.0f}{after[case] / before[case]:>14.2f}x")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
