"""The audit's one entry point: read the files of a target, scan them, compare with a baseline, write the output.

`run` does what `warnonce-guard audit` is asked (a `Request`) and says what to print and how to exit
(an `Output`); the command line only prints it. `audit` (a vLLM tree) and `audit_paths` (any files and
package directories) are the scan alone.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from warnonce_guard.audit.baseline import compare, load_baseline, write_baseline
from warnonce_guard.audit.findings import AuditResult, Finding, numbered
from warnonce_guard.audit.formats import FORMATS, AuditReport
from warnonce_guard.audit.paths import python_files, tree_files
from warnonce_guard.audit.scan import PREFILTER, findings_in_source
from warnonce_guard.audit.selection import exit_code
from warnonce_guard.common.errors import ExitCode
from warnonce_guard.rule import target as targets


def audit_files(files: Iterable[tuple[Path, str]]) -> AuditResult:
    """Every finding in the files given as (file, path as shown): all are read, those with `_once(` parsed."""
    start = time.perf_counter()
    found: list[Finding] = []
    scanned = parsed = 0
    for path, shown in files:
        scanned += 1
        data = path.read_bytes()
        if PREFILTER.encode() not in data:
            continue
        parsed += 1
        found.extend(findings_in_source(data.decode("utf-8", errors="replace"), shown))
    every = numbered(found)
    return AuditResult(
        tuple(f for f in every if f.suppressed is None),
        scanned,
        parsed,
        time.perf_counter() - start,
        tuple(f for f in every if f.suppressed is not None),
    )


def audit(root: Path, package: str = "vllm") -> AuditResult:
    """Every finding under `root/package`, shown relative to `root`."""
    return audit_files(tree_files(root, package))


def audit_paths(paths: Iterable[Path], cwd: Path | None = None) -> AuditResult:
    """Every finding in the Python files given, or under the directories given (any package, not only vLLM)."""
    return audit_files(python_files(paths, cwd))


@dataclass(frozen=True)
class Request:
    """One audit: of `paths` (files or package directories) or else the vLLM tree `vllm_src` (default: installed)."""

    paths: Sequence[str] = ()
    vllm_src: str | None = None
    format: str = "text"  # a name in `formats.FORMATS`
    baseline: str | None = None  # a file of accepted findings: only new ones are shown and fail
    write_baseline: str | None = None  # accept every finding: write them to this file, and pass
    strict: bool = False


@dataclass(frozen=True)
class Output:
    """What an audit prints and how it exits."""

    text: str  # for stdout
    exit_code: ExitCode
    note: str | None = None  # one line for stderr


def run(request: Request) -> Output:
    """Audit the target; a bad baseline fails before anything is read."""
    accepted = load_baseline(request.baseline) if request.baseline else frozenset()
    if request.paths:
        result, described = audit_paths(Path(p) for p in request.paths), ", ".join(request.paths)
    else:
        target = targets.resolve(request.vllm_src)
        result, described = audit(target.root), target.describe()
    comparison = compare(result.findings, accepted)
    note = None
    if request.write_baseline:
        write_baseline(request.write_baseline, result.findings, described)
        note = f"wrote {len(result.findings)} accepted finding(s) to {request.write_baseline}"
    report = AuditReport(result, comparison, described, request.strict, baseline=bool(request.baseline))
    code = ExitCode.OK if request.write_baseline else exit_code(comparison, request.strict)
    return Output(FORMATS[request.format].write(report), code, note)
