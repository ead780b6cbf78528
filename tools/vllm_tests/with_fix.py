"""vLLM's own tests with and without the cache-level fix (`warnonce-guard export-fix`), compared test by test.

    python -m tools.vllm_tests.with_fix --work DIR [--tests PATH ...]

In the interpreter that runs it (the environment of vLLM's CPU test lock with the pinned vLLM: `nox -s upstream`):
the installed vLLM is copied (hard links) into DIR with its `vllm/logger.py` replaced by the patched one and put
first on the path (the installed files are never written); the patch's test goes into a copy of the release's
`tests/` (its sdist's, verified: `sources.fetch`). pytest runs `--tests` (default: `upstream.SELECTION`, vLLM's
CPU tests that import `vllm.platforms`, its logger's among them) twice, stock and patched, and every test whose
outcome differs is listed; the patch's own test is run on both loggers (it fails on vLLM's, passes on the patch).
Then the patch's test against each mutant of the patch (`fix_proof`). Exit 1 when an existing test's outcome
differs, the patch's test does not pass on the patch and fail on vLLM's, or a mutant of the patch survives.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from warnonce_guard.caches.cache_fix import patched
from warnonce_guard.caches.renders_first import once_methods
from warnonce_guard.rule.target import installed
from warnonce_guard.upstream.fix import TEST_NAME, test_change

from tools.vllm_tests import compare, fix_proof, sources

ENV = {"VLLM_TARGET_DEVICE": "cpu", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


def fixed_vllm(into: Path) -> Path:
    """A copy of the installed vLLM (hard links) whose `logger.py` is the patched one: the folder to put first on
    the path."""
    package = installed().package_dir
    if into.exists():
        shutil.rmtree(into)
    shutil.copytree(package, into / "vllm", copy_function=_link_or_copy, ignore=shutil.ignore_patterns("__pycache__"))
    logger = into / "vllm" / "logger.py"
    text = patched(logger.read_text(encoding="utf-8"), "vllm/logger.py")
    logger.unlink()  # a link to the installed file: replaced, never written through
    logger.write_text(text, encoding="utf-8")
    return into


def suite_with_test(tree: Path, into: Path) -> tuple[Path, str]:
    """A copy of the release's tests/ (hard links) with the patch's test added as `export-fix` adds it; the test's
    file."""
    if into.exists():
        shutil.rmtree(into)
    shutil.copytree(tree, into, copy_function=_link_or_copy, ignore=shutil.ignore_patterns("__pycache__"))
    methods = once_methods((installed().package_dir / "logger.py").read_text())
    change = test_change(into, "vllm.logger", methods)
    (into / change.path).unlink(missing_ok=True)
    (into / change.path).write_text(change.after, encoding="utf-8")
    return into, change.path


def run(suite: Path, tests: list[str], junit: Path, overlay: Path | None) -> compare.Run:
    env = {**os.environ, **ENV}
    if overlay is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(overlay), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "pytest", "-n", "2", "-q", "--tb=line", "-p", "no:cacheprovider"]
    subprocess.run([*command, f"--junitxml={junit}", *tests], cwd=suite, env=env, check=False)
    return compare.read(junit) if junit.is_file() else compare.Run({}, 0.0)


@dataclass(frozen=True)
class Comparison:
    stock: compare.Run
    fixed: compare.Run
    differ: list[tuple[str, compare.Result, compare.Result]]  # existing tests whose outcome differs
    own_stock: list[str]  # the patch's test on vLLM's logger: its outcomes
    own_fixed: list[str]  # and on the patch

    @property
    def holds(self) -> bool:
        own = self.own_fixed and all(o == "passed" for o in self.own_fixed)
        return not self.differ and bool(own) and bool(self.own_stock) and all(o == "failed" for o in self.own_stock)


def compared(work: Path, tests: list[str]) -> Comparison:
    tree = sources.fetch(work / "vllm-sources")
    suite, test_file = suite_with_test(tree, work / "with-fix" / "suite")
    overlay = fixed_vllm(work / "with-fix" / "vllm-fixed")
    paths = list(dict.fromkeys([*tests, test_file]))
    stock = run(suite, paths, work / "with-fix" / "stock.xml", None)
    fixed = run(suite, paths, work / "with-fix" / "fixed.xml", overlay)
    ours = f"::{TEST_NAME}["

    def own(found: compare.Run) -> list[str]:
        return [result.outcome for key, result in sorted(found.results.items()) if ours in key]

    differ = [d for d in compare.differences(stock, fixed) if ours not in d[0]]
    return Comparison(stock, fixed, differ, own(stock), own(fixed))


def report(found: Comparison, label: str) -> list[str]:
    counts = {name: run.counts() for name, run in (("without the fix", found.stock), ("with the fix", found.fixed))}
    lines = [f"{label}: every test, stock vLLM 0.33.0 and with export-fix's patch"]
    for name, count in counts.items():
        cells = ", ".join(f"{count[o]} {o}" for o in compare.OUTCOMES if count[o])
        lines.append(f"  {name:<16} {cells}")
    lines.append(
        f"  the patch's own test ({TEST_NAME}): on vLLM's logger {', '.join(found.own_stock) or 'did not run'}; "
        f"with the patch {', '.join(found.own_fixed) or 'did not run'}"
    )
    if not found.differ:
        lines.append("  every other test has the same outcome with and without the patch")
    for key, before, after in found.differ:
        why = after.message or before.message
        lines.append(f"  differs: {key}: {before.outcome} -> {after.outcome}" + (f" ({why[:300]})" if why else ""))
    return lines


def section(work: Path, tests: list[str]) -> tuple[list[str], bool]:
    """The lines `nox -s upstream` prints for the fix, and whether it holds: vLLM's tests compared, then the patch's
    test against each mutant of the patch."""
    found = compared(work, tests)
    lines = report(found, f"vLLM {sources.VERSION}'s own tests ({len(tests)} paths)")
    with tempfile.TemporaryDirectory(dir=work) as scratch:
        rows = fix_proof.prove(patched((installed().package_dir / "logger.py").read_text()), Path(scratch))
    lines += ["", "the patch's own test against the patch and each mutant of it:", *fix_proof.table(rows)]
    return lines, found.holds and all(row.as_expected for row in rows)


def main(argv: list[str]) -> int:
    from tools.vllm_tests.upstream import SELECTION

    parser = argparse.ArgumentParser(prog="python -m tools.vllm_tests.with_fix", allow_abbrev=False)
    parser.add_argument("--work", required=True, type=Path, help="where the copies and the runs go")
    parser.add_argument("--tests", nargs="+", default=list(SELECTION), help="vLLM's tests to run (in its sdist)")
    args = parser.parse_args(argv)
    lines, holds = section(args.work.resolve(), list(args.tests))
    print("\n".join(lines))
    return 0 if holds else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
