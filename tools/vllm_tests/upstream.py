"""The proof for vLLM, in one table: what guards the kernel-import warnings today, and what the exported test adds.

    python -m tools.vllm_tests.upstream --work DIR [--tests PATH ...]

In the interpreter that runs it (the environment of vLLM's CPU test lock with the pinned vLLM and the mutation
engine: `nox -s upstream`), against vLLM 0.33.0's own sources (its verified sdist's tests/ and pyproject.toml):

1. `warnonce-guard export-test` writes the test for the installed vLLM, dropped at its path into a copy of vLLM's
   tests/ (hard links: the fetched tree is never written), and `warnonce-guard mutate --tests` scores it there;
2. `mutate --tests` scores vLLM's own tests (`--tests`, default `SELECTION`) where the sdist lies;
3. the exported test runs inside vLLM 0.33.0's suite (every case passes) and 0.29.0's, the release before the fix
   (installed apart, with --no-deps, and put first on the path: every case fails, naming its site and the leak);
4. the cache-level fix (`warnonce-guard export-fix`): vLLM's own tests (`--tests`) with and without it, every test
   whose outcome differs listed, and the patch's own test against the patch and each mutant of it (`with_fix`).

Then one row per scored suite (mutants, killed, survived, not reached, score), one per run of step 3, and step 4's
lines. It exits 1 when the exported test kills less than every mutant, a run of step 3 is not as expected, or the
fix changes an outcome of vLLM's tests or its test does not kill every mutant of it; vLLM's own tests killing
nothing is the finding, not a failure. The reports stay in DIR/upstream/ (`report-exported/`,
`report-vllm/`), the verdicts in DIR/upstream/work/: a rerun with nothing changed re-tests nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tools.vllm_tests import exported, sources, with_fix

BEFORE_FIX = "0.29.0"
# vLLM's own tests that import vllm.platforms and run on a CPU without a model download (its logger's tests too):
# the platform, CPU, plugin, config, custom-op and watermarking tests; those in its GPU, kernel, model, distributed
# and serving folders need a GPU or a model from the Hub. A test that fails here is left out by the run and listed.
SELECTION = (
    "tests/test_logger.py",
    "tests/platforms/test_cpu.py",
    "tests/test_zen_cpu_platform_detection.py",
    "tests/plugins_tests/test_platform_plugins.py",
    "tests/utils_/test_cpu_resource_utils.py",
    "tests/test_attention_backend_registry.py",
    "tests/config/test_config_utils.py",
    "tests/model_executor/test_cpu_unquantized_gemm_dispatch.py",
    "tests/model_executor/test_enabled_custom_ops.py",
    "tests/model_executor/layers/test_activation.py",
    "tests/model_executor/layers/test_mm_input_norm.py",
    "tests/model_executor/test_bailing_mrope.py",
    "tests/model_executor/test_k2_horizon_rope_fold.py",
    "tests/fusion/test_quant_activation_contract.py",
    "tests/watermarking/test_gumbel.py",
    "tests/watermarking/test_prf.py",
    "tests/watermarking/test_watermarking.py",
)
CLI = (sys.executable, "-m", "warnonce_guard.cli")


@dataclass(frozen=True)
class Score:
    """One suite's mutation run, read from its report."""

    label: str  # the table's short name for it (the report names it whole)
    mutants: int
    killed: int
    survived: int
    not_reached: int
    score: float | None
    exit_code: int

    def row(self) -> list[str]:
        shown = "n/a" if self.score is None else f"{self.score:.1f}%"
        counts = (self.mutants, self.killed, self.survived, self.not_reached)
        return [self.label, *(str(count) for count in counts), shown]


def read_score(report: Path, label: str, exit_code: int) -> Score:
    """The counts of a run's `mutation.json` (Stryker's statuses)."""
    data = json.loads((report / "mutation.json").read_text(encoding="utf-8"))
    statuses = [m["status"] for f in data["files"].values() for m in f["mutants"]]
    count = statuses.count
    if failing := data["config"].get("failingOnUnmutated"):
        label += f", {len(failing)} failing on the unmutated code left out"
    return Score(
        label, len(statuses), count("Killed"), count("Survived"), count("NoCoverage"), data["config"]["score"],
        exit_code,
    )  # fmt: skip


def mutate(work: Path, name: str, label: str, root: Path, tests: list[str]) -> Score:
    """`warnonce-guard mutate --tests` on `tests` (paths in `root`), run there; its score (exit 0 or 1: a verdict;
    anything else stops)."""
    out, env = work / f"report-{name}", {**os.environ, **exported.ENV}
    command = [*CLI, "mutate", "--tests", *tests, "--tests-root", ".", "--out", str(out)]
    done = subprocess.run([*command, "--work-dir", str(work / "work")], env=env, cwd=root, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"upstream: `{' '.join(command)}` ended with exit code {done.returncode}, no verdict")
    return read_score(out, label, done.returncode)


def suite_with(file: Path, tree: Path, into: Path) -> Path:
    """A copy of `tree` (hard links) holding `file` at the exported test's path; kept between runs, so that an
    unchanged export keys the same workspace (the copy's files keep their modification times)."""
    suite = into / tree.name
    if not suite.is_dir():
        shutil.copytree(tree, suite, copy_function=os.link, ignore=shutil.ignore_patterns("__pycache__"))
    placed = suite / exported.PATH
    if not placed.is_file() or placed.read_bytes() != file.read_bytes():
        placed.unlink(missing_ok=True)
        shutil.copy2(file, placed)
    return suite


def before_fix(work: Path) -> Path:
    """vLLM 0.29.0 installed apart (--no-deps), once: the folder to put first on the path."""
    target = work / f"vllm-{BEFORE_FIX}"
    if not (target / "vllm" / "platforms" / "interface.py").is_file():
        pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target)]
        subprocess.run([*pip, f"vllm=={BEFORE_FIX}"], check=True)
    return target


def in_suite(work: Path, file: Path, version: str, expect: str, path: Path | None = None) -> tuple[list[str], bool]:
    """The exported test inside `version`'s suite: its row, and whether it is as `expect` says."""
    tree = sources.fetch(work / "vllm-sources", version, sources.SDISTS[version])
    result = exported.run(file, tree, work, extra_path=path)
    wrong = exported.unmet(result, expect)
    for line in wrong:
        print(f"upstream: the exported test in vLLM {version}'s suite: {line}", file=sys.stderr)
    counts = {outcome: sum(row.outcome == outcome for row in result.rows) for outcome in ("passed", "failed")}
    row = [f"the exported test in vLLM {version}'s suite", str(len(result.rows)), str(counts["passed"])]
    return [*row, str(counts["failed"]), f"expected: every case {'passes' if expect == 'pass' else 'fails'}"], not wrong


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [header, ["-" * width for width in widths], *rows]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)) for line in lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.vllm_tests.upstream", allow_abbrev=False)
    parser.add_argument("--work", required=True, type=Path, help="where the sources, the reports and verdicts go")
    parser.add_argument("--tests", nargs="+", default=list(SELECTION), help="vLLM's tests to score (in its sdist)")
    args = parser.parse_args(argv)
    work = args.work.resolve() / "upstream"
    work.mkdir(parents=True, exist_ok=True)
    tree = sources.fetch(args.work.resolve() / "vllm-sources")
    file = work / exported.PATH.name
    subprocess.run([*CLI, "export-test", "--out", str(file)], check=True)
    suite = suite_with(file, tree, work / "suite")
    scores = [
        mutate(work, "exported", f"the exported test ({exported.PATH})", suite, [exported.PATH.as_posix()]),
        mutate(work, "vllm", f"vLLM {sources.VERSION}'s own tests ({len(args.tests)} paths)", tree, list(args.tests)),
    ]
    runs = [
        in_suite(args.work.resolve(), file, sources.VERSION, "pass"),
        in_suite(args.work.resolve(), file, BEFORE_FIX, "leak", before_fix(work)),
    ]
    print()
    print(table(["suite", "mutants", "killed", "survived", "not reached", "score"], [s.row() for s in scores]))
    print()
    print(table(["run", "cases", "passed", "failed", ""], [row for row, _ in runs]))
    fix_lines, fix_holds = with_fix.section(args.work.resolve(), list(args.tests))
    print()
    print("\n".join(fix_lines))
    exported_score = scores[0]
    ok = exported_score.mutants > 0 and exported_score.killed == exported_score.mutants and all(ok for _, ok in runs)
    if not ok:
        print("upstream: the exported test does not hold (see above)", file=sys.stderr)
    if not fix_holds:
        print("upstream: the cache-level fix does not hold (see above)", file=sys.stderr)
    return 0 if ok and fix_holds else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
