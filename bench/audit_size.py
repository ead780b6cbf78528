"""Memory and speed of the audit on one big file, printed as numbers and ratios (the target is checked here, not in a
test; tests/audit/test_grammar.py checks that a big file is audited in pieces and its findings are right).

    python bench/audit_size.py [--megabytes 50 10]

For each size: a generated file of that many megabytes (the same platform class again and again, each with a live
exception in a `warning_once` call and a continuation line at column 0), audited with `--format json` in a child
process; its seconds, its peak resident memory, and that peak per megabyte of source.
Target: a 50 MB file under 1 GiB.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

UNIT = '''

class Platform{n}:
    """A platform.

with a docstring line at column 0
"""

    @classmethod
    def import_kernels(cls, x):
        try:
            import vllm._C  # noqa: F401
        except ImportError as e:
            logger.warning_once("Failed to import kernels %d: %r", {n}, e)
        data = [
1, 2, 3,
        ]
        return data
'''
TARGET_MIB = {50: 1024}  # megabytes of source -> the most MiB its audit may take


def audit_peak(source: Path) -> tuple[float, float, int]:
    """Seconds, peak MiB and findings of `warnonce-guard audit FILE --format json` in a child of a fresh process."""
    script = (
        "import resource, subprocess, sys, time\n"
        "t = time.monotonic()\n"
        f"done = subprocess.run([sys.executable, '-m', 'warnonce_guard.cli', 'audit', {str(source)!r}, '--format',"
        " 'json'], capture_output=True, text=True)\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(time.monotonic() - t, peak, done.stdout.count('\"code\"'))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    seconds, peak_kib, findings = done.stdout.split()
    return float(seconds), int(peak_kib) / 1024, int(findings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, nargs="+", default=[50, 10], help="file sizes to audit")
    args = parser.parse_args()
    print(f"load before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="warnonce-bench-") as tmp:
        for megabytes in args.megabytes:
            path = Path(tmp) / f"big-{megabytes}.py"
            count = megabytes * 1_000_000 // len(UNIT) + 1
            path.write_text("".join(UNIT.replace("{n}", str(n)) for n in range(count)))
            seconds, peak, findings = audit_peak(path)
            target = TARGET_MIB.get(megabytes)
            verdict = f"  [target <= {target} MiB: {'met' if peak <= target else 'MISSED'}]" if target else ""
            print(
                f"{megabytes:4d} MB ({count} classes): {seconds:6.1f} s, {findings} findings, peak {peak:6.0f} MiB "
                f"= {peak / megabytes:.1f} MiB per MB of source{verdict}"
            )
            path.unlink()
    print(
        f"load after:  {os.getloadavg()[0]:.2f}; this process's own peak "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )


if __name__ == "__main__":
    main()
