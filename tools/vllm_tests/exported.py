"""The exported test inside vLLM's own suite: a release's sdist `tests/`, its conftest.py and pytest settings.

    python -m tools.vllm_tests.exported --vllm VERSION --work DIR [--file FILE] [--expect pass|leak|any]
                                        [-- PYTEST ARGS]

FILE (default: `docs/upstream/test_kernel_import_warnings.py`, exported from the pinned vLLM) goes at its path
(`tests/platforms/`) in a copy of the release's `tests/` and `pyproject.toml` (`sources.fetch`: the verified
sdist; the copy is hard links, so the fetched tree is never written), and pytest runs it from there, in the
interpreter that runs this (the vLLM installed beside it is the one tested). It prints one row per case and
checks `--expect`: `pass`, every case passes; `leak` (vLLM before the fix), every case fails, its message naming
its site (file:line) and what leaked (`upstream.words.LEAKS`); `any`, only that each case ran. `nox -s exported`
runs it; `run` is the same, for a caller of its own (a combined session).
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

from warnonce_guard.upstream.export import listed_cases
from warnonce_guard.upstream.words import LEAKS

from tools.vllm_tests import compare, sources

ROOT = Path(__file__).resolve().parents[2]
EXPORTED = ROOT / "docs" / "upstream" / "test_kernel_import_warnings.py"
PATH = Path("tests/platforms/test_kernel_import_warnings.py")
TEST = "test_kernel_import_warning_keeps_nothing_alive"
# As `nox -s vllm-tests` runs vLLM's tests: its CPU platform (the wheel is a CUDA build), no model downloads.
ENV = {"VLLM_TARGET_DEVICE": "cpu", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
EXPECTATIONS = ("pass", "leak", "any")


@dataclass(frozen=True)
class Row:
    id: str
    site: str  # file:line, as the file lists the case
    outcome: str  # compare.OUTCOMES, or compare.ABSENT when pytest did not report it
    message: str  # the failure's first line


@dataclass(frozen=True)
class Result:
    rows: tuple[Row, ...]
    seconds: float  # pytest's own time for the session (collection and the cases)
    returncode: int
    conftest: bool  # the suite's tests/conftest.py was loaded (pytest's --trace-config says so)
    summary: str  # pytest's last line


def run(
    file: Path, tree: Path, work: Path, pytest_args: tuple[str, ...] = (), extra_path: Path | None = None
) -> Result:
    """pytest on `file` dropped into a copy of `tree` (a release's tests/ and pyproject.toml), made in `work`; with
    `extra_path` (a vLLM installed apart) first on the path."""
    cases = listed_cases(file.read_text(encoding="utf-8"))
    if cases is None:
        raise SystemExit(f"exported: {file}: not an exported module (its CASES cannot be read)")
    work = work.resolve()  # pytest runs in the copy: the junit file's path must not be relative
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="exported-", dir=work) as scratch:
        suite = Path(scratch) / tree.name
        shutil.copytree(tree, suite, copy_function=os.link, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copyfile(file, suite / PATH)
        junit = Path(scratch) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=line", "--trace-config"]
        command += [f"--junitxml={junit}", *pytest_args, PATH.as_posix()]
        env = {**os.environ, **ENV}
        if extra_path is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(extra_path), env.get("PYTHONPATH")]))
        done = subprocess.run(command, cwd=suite, env=env, capture_output=True, text=True, check=False)
        found = compare.read(junit) if junit.is_file() else compare.Run({}, 0.0)
        conftest = f"from '{suite / 'tests' / 'conftest.py'}'>" in done.stdout
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    results = {key.rpartition("::")[2]: result for key, result in found.results.items()}
    absent = compare.Result(compare.ABSENT, "")
    rows = []
    for case in cases:
        result = results.get(f"{TEST}[{case.id}]", absent)
        rows.append(Row(case.id, case.site, result.outcome, result.message))
    summary = lines[-1] if lines else done.stderr.strip()[-500:]
    return Result(tuple(rows), found.seconds, done.returncode, conftest, summary)


def unmet(result: Result, expect: str) -> list[str]:
    """Why `result` is not what `expect` says (nothing when it is)."""
    if not result.rows:
        return ["the file lists no case"]
    wrong = [] if result.conftest else ["the suite's tests/conftest.py was not loaded"]
    for row in result.rows:
        if row.outcome == compare.ABSENT:
            wrong.append(f"{row.id}: did not run")
        elif expect == "pass" and row.outcome != "passed":
            wrong.append(f"{row.id}: {row.outcome}, expected to pass ({row.message})")
        elif expect == "leak" and row.outcome != "failed":
            wrong.append(f"{row.id}: {row.outcome}, expected to fail")
        elif expect == "leak" and (row.site not in row.message or not any(leak in row.message for leak in LEAKS)):
            wrong.append(f"{row.id}: its message does not name {row.site} and a leak: {row.message!r}")
    return wrong


def report(result: Result, label: str) -> list[str]:
    """The lines printed: one per case, then the counts."""
    width = max(len(row.id) for row in result.rows) if result.rows else 0
    lines = [f"{row.id:<{width}}  {row.outcome:<7}  {row.message}".rstrip() for row in result.rows]
    counts = {outcome: sum(row.outcome == outcome for row in result.rows) for outcome in ("passed", "failed")}
    lines.append(
        f"{label}: {len(result.rows)} cases, {counts['passed']} passed, {counts['failed']} failed "
        f"({result.seconds:.1f} s in pytest; tests/conftest.py {'loaded' if result.conftest else 'NOT loaded'})"
    )
    return [f"pytest: {result.summary}", *lines]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.vllm_tests.exported", allow_abbrev=False)
    parser.add_argument("--vllm", required=True, choices=sorted(sources.SDISTS), help="whose sdist tests/ to run in")
    parser.add_argument("--work", required=True, type=Path, help="where the sources and the runs' copies go")
    parser.add_argument("--file", type=Path, default=EXPORTED, help="the exported module (default: %(default)s)")
    parser.add_argument("--expect", choices=EXPECTATIONS, default="any")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed on to pytest")
    args = parser.parse_args(argv)
    tree = sources.fetch(args.work / "vllm-sources", args.vllm, sources.SDISTS[args.vllm])
    result = run(args.file, tree, args.work, tuple(args.pytest_args))
    print("\n".join(report(result, f"vLLM {args.vllm}'s suite, {args.file.name}")))
    wrong = unmet(result, args.expect)
    for line in wrong:
        print(f"exported: not as expected ({args.expect}): {line}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
