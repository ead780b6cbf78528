"""Speed and memory of the mutation run, printed as numbers and ratios (targets are checked here, not in a test).

    python bench/mutation_speed.py [--naive-sample N] [--sites 100] [--nox PATH] [--only-d]

Run it inside a session's environment (`.nox/tests/bin/python bench/mutation_speed.py`), where vLLM is installed:
(a) one cold `python -c "import vllm.platforms.cpu"`, the yardstick;
(b) the full mutation run against the installed vLLM in a fresh work directory, and the largest resident
    set of any process it started (MiB); then (b') once more with nothing changed;
(c) the naive way: one fresh pytest process per mutant (N of them, timed and scaled to all);
(d) the cost of each added mutant, from generated vLLM-shaped trees with 10 and --sites sites;
(e) what a warm `nox -s mutation` adds to the bare command (with --nox, or a `nox` on PATH).
Targets: (b) <= 2.0x (a); (b') <= 0.3x (a); (c) >= 5x (b); (d) <= 50 ms per added mutant; (e) <= 2 s.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from warnonce_guard.common import protocol

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "warnonce_guard.cli.main"]


def _toy_logger_source() -> str:
    """vLLM's logger in miniature, shared with the tests (tests/toy.py)."""
    spec = importlib.util.spec_from_file_location("toy", ROOT / "tests" / "toy.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LOGGER_SOURCE


LOGGER = _toy_logger_source()

PLATFORM_HEAD = """
from vllm.logger import init_logger

logger = init_logger(__name__)
"""

PLATFORM_CLASS = """

class Platform{n}:
    @classmethod
    def import_kernels(cls) -> None:
        try:
            import vllm._C_{n}  # noqa: F401
        except ImportError as e:
            logger.warning_once("Failed to import from vllm._C_{n}: %s", repr(e))
"""


def timed(cmd: list[str], cwd: Path = ROOT, **kwargs: object) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, check=False, **kwargs)  # type: ignore[call-overload]
    return time.perf_counter() - start, done


def generated_tree(root: Path, sites: int) -> Path:
    """A vLLM-shaped tree with `sites` kernel-import sites, one platform class each."""
    package = root / "vllm"
    (package / "platforms").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "_version.py").write_text("__version__ = version = '0.0.0'\n__commit_id__ = commit_id = 'bench'\n")
    (package / "logger.py").write_text(LOGGER)
    (package / "platforms" / "__init__.py").write_text("")
    body = PLATFORM_HEAD + "".join(PLATFORM_CLASS.format(n=n) for n in range(sites))
    (package / "platforms" / "generated.py").write_text(body)
    return root


def mutation_run(work: Path, out: Path, *extra: str) -> float:
    seconds, done = timed([*CLI, "mutate", "--work-dir", str(work), "--out", str(out), *extra])
    if done.returncode != 0:
        sys.exit(f"mutation run failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return seconds


def naive(work: Path, sample: int) -> tuple[float, int]:
    """One fresh pytest process per mutant, like running the guards by hand for each."""
    (ws,) = [p for p in work.iterdir() if p.is_dir()]
    mutants = [m["mutant_id"] for m in json.loads((ws / "identities.json").read_text())]
    env = protocol.without_protocol(os.environ)  # nothing recorded, as by hand
    sites = ["--sites-file", str(ws / "sites.json")]
    start = time.perf_counter()
    for mutant in mutants[:sample]:
        subprocess.run(
            [sys.executable, "-m", "pytest", "guard_tests", "-x", "-q", "-p", "no:cacheprovider", *sites],
            cwd=ws / "mutants",
            env=dict(env, MUTANT_UNDER_TEST=mutant, PYTHONPATH=str(ws / "mutants")),
            capture_output=True,
            check=False,
        )
    per_mutant = (time.perf_counter() - start) / max(1, min(sample, len(mutants)))
    return per_mutant * len(mutants), len(mutants)


def per_added_mutant(base: Path, sites: int) -> tuple[float, float, float]:
    small, large = generated_tree(base / "small", 10), generated_tree(base / "large", sites)
    t_small = mutation_run(base / "work-small", base / "out-small", "--vllm-src", str(small))
    t_large = mutation_run(base / "work-large", base / "out-large", "--vllm-src", str(large))
    added = 3 * (sites - 10)  # three operators fit each generated site
    return t_small, t_large, (t_large - t_small) / added


def nox_overhead(nox: str, base: Path) -> tuple[float, float]:
    """A warm `nox -s mutation` against the bare command it runs, both on an unchanged work directory."""
    work, out = base / "nox-work", base / "nox-out"
    session = ["--", "--work-dir", str(work), "--out", str(out)]
    timed([nox, "-s", "mutation", *session])  # warm the session's environment and the work directory
    with_nox, done = timed([nox, "-s", "mutation", *session])
    if done.returncode != 0:
        sys.exit(f"nox -s mutation failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    venv_bin = ROOT / ".nox" / "mutation" / "bin"
    bare, _ = timed([str(venv_bin / "warnonce-guard"), "mutate", "--work-dir", str(work), "--out", str(out)])
    return with_nox, bare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--naive-sample", type=int, default=3, help="mutants timed for (c), scaled to all")
    parser.add_argument("--sites", type=int, default=100, help="sites of the large generated tree for (d)")
    parser.add_argument("--nox", default=shutil.which("nox"), help="nox executable for (e)")
    parser.add_argument("--only-d", action="store_true", help="measure (d) alone (no vLLM needed)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="warnonce-bench-") as tmp:
        base = Path(tmp)
        if args.only_d:
            report_d(base, args.sites)
            return
        cold, _ = timed([sys.executable, "-c", "import vllm.platforms.cpu"])
        print(f"(a)  cold import of vllm.platforms.cpu:     {cold:7.2f} s")
        full = mutation_run(base / "work", base / "out")
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(f"(b)  full mutation run (fresh work dir):    {full:7.2f} s   = {full / cold:.2f}x (a)  [target <= 2.0x]")
        print(f"     largest resident set of its processes: {peak:7.0f} MiB")
        again = mutation_run(base / "work", base / "out")
        ratio = again / cold
        print(f"(b') second run, nothing changed:           {again:7.2f} s   = {ratio:.2f}x (a)  [target <= 0.3x]")
        naive_total, count = naive(base / "work", args.naive_sample)
        print(
            f"(c)  naive, one pytest process per mutant:  {naive_total:7.2f} s   ({count} mutants, "
            f"{args.naive_sample} timed) = {naive_total / full:.1f}x (b)  [target >= 5x]"
        )
        report_d(base, args.sites)
        if args.nox:
            with_nox, bare = nox_overhead(args.nox, base)
            print(
                f"(e)  warm nox -s mutation {with_nox:.2f} s, the bare command {bare:.2f} s: "
                f"nox adds {with_nox - bare:.2f} s  [target <= 2 s]"
            )
        else:
            print("(e)  skipped: no nox on PATH (pass --nox PATH)")


def report_d(base: Path, sites: int) -> None:
    t_small, t_large, each = per_added_mutant(base, sites)
    print(
        f"(d)  generated trees: 10 sites {t_small:.2f} s, {sites} sites {t_large:.2f} s: "
        f"{each * 1000:.0f} ms per added mutant  [target <= 50 ms]"
    )


if __name__ == "__main__":
    main()
