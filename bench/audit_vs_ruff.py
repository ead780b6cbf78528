"""The audit's speed on a big tree, beside ruff's on the same tree, as paired ratios (issue 42's target: on this
machine, flashinfer-python and vLLM 0.34.0 audited in at most 5 s; the machine is shared, so a ratio to a command run
in turn with it says more than seconds).

    python bench/audit_vs_ruff.py TREE [TREE ...] [--rounds 3]

Each round runs, in turn, `warnonce-guard audit TREE --exit-zero` and `ruff check --isolated --select B019 --no-cache
--exit-zero TREE` (B019: lru_cache on methods, the nearest rule ruff has; --isolated: the tree's own ruff settings
are not read) in child processes, and times each, in wall and CPU seconds (on a machine others load, CPU seconds are
what the audit costs); it prints each round's seconds and ratios, then the medians, and the files scanned and parsed.
A tree is a package folder, or an unpacked vLLM wheel's root (holding `vllm/logger.py`: audited as `--vllm-src`).
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

_SCANNED = re.compile(r"([\d,]+) files scanned \(([\d,]+) parsed\)")


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _timed(argv: list[str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user and system, of the child and its own children) and stdout of a command."""
    start, cpu = time.perf_counter(), _cpu()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    seconds, cpu = time.perf_counter() - start, _cpu() - cpu
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()[-400:]}")
    return seconds, cpu, done.stdout


def audit_argv(tree: Path) -> list[str]:
    """The audit of a tree: a vLLM wheel's root (holding `vllm/logger.py`) as `--vllm-src`, else the folder."""
    cli = [sys.executable, "-m", "warnonce_guard.cli", "audit", "--exit-zero"]
    return [*cli, "--vllm-src", str(tree)] if (tree / "vllm" / "logger.py").is_file() else [*cli, str(tree)]


def ruff_argv(tree: Path, ruff: str) -> list[str]:
    target = tree / "vllm" if (tree / "vllm" / "logger.py").is_file() else tree
    return [ruff, "check", "--isolated", "--select", "B019", "--no-cache", "--exit-zero", "-q", str(target)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ruff", default=shutil.which("ruff") or str(Path(sys.executable).with_name("ruff")))
    args = parser.parse_args(argv)
    for tree in args.trees:
        audits, cpus, ratios, cpu_ratios, scanned = [], [], [], [], "?"
        for round_ in range(1, args.rounds + 1):
            audit, audit_cpu, out = _timed(audit_argv(tree))
            ruff, ruff_cpu, _ = _timed(ruff_argv(tree, args.ruff))
            found = _SCANNED.search(out)
            scanned = f"{found[1]} files scanned, {found[2]} parsed" if found else scanned
            audits.append(audit)
            cpus.append(audit_cpu)
            ratios.append(audit / ruff)
            cpu_ratios.append(audit_cpu / ruff_cpu)
            print(
                f"{tree}: round {round_}: audit {audit:.2f} s ({audit_cpu:.2f} s CPU), ruff {ruff:.2f} s "
                f"({ruff_cpu:.2f} s CPU), ratio {audit / ruff:.2f} (CPU {audit_cpu / ruff_cpu:.2f})"
            )
        print(
            f"{tree}: audit median {statistics.median(audits):.2f} s, {statistics.median(cpus):.2f} s CPU "
            f"({scanned}); audit/ruff median ratio {statistics.median(ratios):.2f}, CPU "
            f"{statistics.median(cpu_ratios):.2f}, over {args.rounds} rounds"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
