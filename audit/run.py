"""The audit's one entry point: settle the settings, read the files of a target, scan them, compare with a baseline,
write the output.

`run` does what a `Request` asks and says what to print and how to exit (an `Output`); `audit_files` is the scan
alone.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from warnonce_guard.audit.baseline import check_writable, compare, load_baseline, write_baseline
from warnonce_guard.audit.config import Config, find
from warnonce_guard.audit.excludes import DEFAULT_EXCLUDES, Excludes
from warnonce_guard.audit.findings import AuditResult, Finding, numbered, unchecked
from warnonce_guard.audit.formats import WRITERS, AuditReport
from warnonce_guard.audit.paths import FileSet, Walk, module_name, python_files, tree_files
from warnonce_guard.audit.scan import findings_in_source, needs_parse
from warnonce_guard.audit.selection import ALL, Layer, failing, resolve
from warnonce_guard.caches.model import DEFAULT_MODEL, Model
from warnonce_guard.caches.renders_first import renders_first
from warnonce_guard.common.errors import ExitCode, GuardError, PathUnusable, UsageError
from warnonce_guard.common.files import rewrite
from warnonce_guard.rule.target import NotPythonText, installed, python_text, read_source, resolve_target

if TYPE_CHECKING:  # libcst, imported only to fix
    from warnonce_guard.audit.codemod import Change


# The cyclic collector's thresholds while files are parsed: an AST is freed by its references alone, and with
# Python's default (700 allocations) a collection runs every few nodes: vLLM 0.34.0's 407 files ~10% faster.
_THRESHOLDS = (20_000, 20, 100)


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(*_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def audit_files(files: FileSet, model: Model = DEFAULT_MODEL) -> AuditResult:
    """`scan_files`, with the cyclic collector run less often (`_THRESHOLDS`)."""
    with _fewer_collections():
        return scan_files(files, model)


def scan_files(files: FileSet, model: Model = DEFAULT_MODEL) -> AuditResult:
    """Every finding in the files given, by the caches `model` knows: all are read and decoded as Python decodes
    them, those the prefilter keeps (`scan.needs_parse`) parsed, the others left; a folder or file that cannot be
    read, decoded or parsed is one finding. The result says which rows a call reached (`reached`)."""
    start = time.perf_counter()
    found: list[Finding] = [unchecked(folder, why) for folder, why in files.unreadable]
    parsed = 0
    reached: set[str] = set()
    for path, keyed in files.files:
        try:
            data = path.read_bytes()
        except OSError as err:
            found.append(unchecked(keyed, f"cannot read it ({err.strerror or err})"))
            continue
        try:
            source = python_text(data)
        except NotPythonText as err:
            found.append(unchecked(keyed, str(err), err.line, err.column))
            continue
        kept = needs_parse(source, model)  # findings_in_source parses these alone
        parsed += kept
        module, is_package = module_name(path)
        found.extend(findings_in_source(source, keyed, module, model, is_package, reached, kept))
    every = numbered(found)
    return AuditResult(
        tuple(f for f in every if f.suppressed is None),
        len(files.files),
        parsed,
        time.perf_counter() - start,
        tuple(f for f in every if f.suppressed is not None),
        frozenset(reached),
    )


@dataclass(frozen=True)
class Request:
    """One audit: of `paths` (files or package directories) or else the vLLM tree `vllm_src` (default: installed).

    The selectors and excludes are the command line's; each replaces or extends the configuration's as ruff's do.
    """

    paths: Sequence[str] = ()
    vllm_src: str | None = None
    format: str = "text"  # a name in `audit.FORMATS`
    baseline: str | None = None  # a file of accepted findings: only new ones are shown and fail
    write_baseline: str | None = None  # accept every finding: write them to this file, and pass
    strict: bool = False  # an alias of select=ALL
    select: Sequence[str] | None = None
    extend_select: Sequence[str] = ()
    ignore: Sequence[str] = ()
    exclude: Sequence[str] | None = None
    extend_exclude: Sequence[str] = ()
    force_exclude: bool = False
    exit_zero: bool = False  # exit 0 whatever the findings
    fix: bool = False  # write the fixes of the findings it reports, then report what is left
    diff: bool = False  # print those fixes as a unified diff, change nothing

    def check(self) -> None:
        """A `UsageError` naming the option for an empty value (an unset variable's place): it never means "not
        given", which would check less than asked, or nothing."""
        files = {"--baseline": self.baseline, "--write-baseline": self.write_baseline}
        for option, value in files.items():
            if value is not None and not value.strip():
                raise UsageError(f"audit {option}: an empty file name; name the baseline file")
        lists = {"PATH": self.paths, "--select": self.select or (), "--extend-select": self.extend_select}
        lists |= {"--ignore": self.ignore, "--exclude": self.exclude or (), "--extend-exclude": self.extend_exclude}
        for option, values in lists.items():
            if not all(value.strip() for value in values):
                raise UsageError(f"audit {option}: an empty value among {list(values)!r}; give none empty")
        if self.select is not None and not self.select:
            raise UsageError("audit --select: no rule selected; give codes, prefixes or ALL")

    def layer(self) -> Layer:
        if self.strict and self.select is not None:
            raise UsageError("audit: give --strict or --select, not both (--strict is --select ALL)")
        select = (ALL,) if self.strict else self.select
        select = None if select is None else tuple(select)
        return Layer("the command line", select, tuple(self.extend_select), tuple(self.ignore))


@dataclass(frozen=True)
class Output:
    """What an audit prints and how it exits."""

    text: str  # for stdout
    exit_code: ExitCode
    note: str | None = None  # one line for stderr


VLLM_LOGGER = "vllm/logger.py"


def _vllm_logger(files: FileSet, target_dir: Path | None) -> Path | None:
    """The `vllm/logger.py` whose `*_once` the audited calls reach: the target's, one among the files audited, else
    the installed vLLM's (None: no vLLM here)."""
    if target_dir is not None:
        return target_dir / "logger.py"
    for path, _ in files.files:
        if module_name(path) == ("vllm.logger", False):
            return path
    try:
        return installed().package_dir / "logger.py"
    except GuardError:
        return None


def model_for(config: Config, files: FileSet, target_dir: Path | None) -> tuple[Model, str | None]:
    """The caches this run knows: the table's and the configured ones, vLLM's as its `vllm/logger.py` is written;
    and a note when that logger renders first."""
    model = DEFAULT_MODEL.with_rows(config.caches)
    logger = _vllm_logger(files, target_dir)
    if logger is None or not logger.is_file():
        return model, None
    try:
        fixed = renders_first(read_source(logger))
    except GuardError:  # unreadable: vLLM's logger as released
        return model, None
    if not fixed:
        return model, None
    note = f"{logger}: its *_once render the message first, so a live exception given to them is only noted (WOG013)"
    return model.with_vllm(True, f"read from {logger}"), note


def walk_for(request: Request, config: Config, cwd: Path) -> Walk:
    """How the paths given are walked: the configuration's excludes (relative to its folder), the command line's
    (relative to the current directory), the default ones unless `exclude` replaces them."""
    if request.exclude is not None:
        excludes = Excludes.of(request.exclude, cwd)
    elif "exclude" in config.lists:
        excludes = Excludes.of(config.lists["exclude"], config.root)
    else:
        excludes = Excludes(tuple(map(re.escape, DEFAULT_EXCLUDES)))
    excludes += Excludes.of(config.lists.get("extend-exclude", ()), config.root)
    excludes += Excludes.of(request.extend_exclude, cwd)
    force = request.force_exclude or config.flags.get("force-exclude", False)
    return Walk(config.root, cwd, excludes, force, config.flags.get("respect-gitignore", True))


def run(request: Request) -> Output:
    """Audit the target; bad settings or a bad baseline (or a fix without libcst) fail before anything is read."""
    request.check()
    fixing = request.fix or request.diff
    if fixing and request.write_baseline:
        raise UsageError("audit: --fix/--diff and --write-baseline do not go together: fix first, then accept the rest")
    if request.fix and not request.diff and not (request.paths or request.vllm_src):
        raise UsageError("audit --fix rewrites files: give PATHs or --vllm-src of a checkout, not the installed vLLM")
    if request.write_baseline:
        check_writable(request.write_baseline)  # a file of the user's is refused before any work
    cwd = Path.cwd()
    config = find(request.paths, cwd)
    codes = resolve([config.layer(), request.layer()])
    if fixing:
        from warnonce_guard.audit import codemod  # libcst, the mutation extra: a missing one is said before any work
    if request.paths:
        walk = walk_for(request, config, cwd)
        accepted = _baseline(request, lambda file: walk.keyed(Path(os.path.abspath(cwd / file))))
        files, described, root = python_files(map(Path, request.paths), walk), ", ".join(request.paths), walk.root
        target_dir = None
    else:
        target = resolve_target(request.vllm_src)
        accepted = _baseline(request, None)
        files, described, root = tree_files(target.root), target.describe(), target.root
        target_dir = target.package_dir
    model, note = model_for(config, files, target_dir)
    result = audit_files(files, model)
    note = _and(note, rows_note(config, result.reached)) if config.caches else note
    checked = functools.partial(files.covers, root=root)  # a baseline entry counts as stale only for these
    comparison = compare(result.findings, accepted, checked)
    if fixing:
        changes = codemod.changes(files.files, failing(comparison, codes), files.shown)
        edits = [c for c in changes if c.before != c.after]
        fixed = sum(len(c.fixed) for c in edits)
        if request.diff:
            note = _and(note, f"{fixed} fix(es) would be applied to {len(edits)} file(s)")
            failed = ExitCode.CHECK_FAILED if edits and not request.exit_zero else ExitCode.OK
            return Output("".join(c.diff() for c in edits), failed, note)
        for change in edits:
            _write_fix(change)
        result = audit_files(files, model)
        comparison = compare(result.findings, accepted, checked)
        note = _and(note, f"fixed {fixed} finding(s) in {len(edits)} file(s)")
    if request.write_baseline:
        write_baseline(request.write_baseline, result.findings, described)
        note = _and(note, f"wrote {len(result.findings)} accepted finding(s) to {request.write_baseline}")
    report = AuditReport(result, comparison, described, codes, baseline=bool(request.baseline), shown=files.shown)
    failed = bool(failing(comparison, codes)) and not (request.write_baseline or request.exit_zero)
    code = ExitCode.CHECK_FAILED if failed else ExitCode.OK
    return Output(WRITERS[request.format](report), code, note)


def rows_note(config: Config, reached: frozenset[str]) -> str:
    """The rows a run with configured caches used (which built-in rows each replaces), and each configured row no
    call in the files audited reaches: a declaration that took no effect is said, never silent."""
    used = ", ".join(
        f"{c.name}" + (f" (replacing {', '.join(c.replaces)})" if c.replaces else "") for c in config.caches
    )
    note = f"caches: the built-in table and {len(config.caches)} from {config.origin}: {used}"
    inert = [c.name for c in config.caches if c.key not in reached]
    if inert:
        note += (
            f"; {', '.join(map(repr, inert))} matched nothing in the files audited (no call reaches it, nor is it "
            "defined there): check its name, loggers and methods"
        )
    return note


def _and(note: str | None, more: str) -> str:
    return f"{note}; {more}" if note else more


def _write_fix(change: Change) -> None:
    """Write one file's fixes in place, through its symbolic links (`common.files.rewrite`: every name of it, hard
    links too, sees the fix)."""
    try:
        rewrite(change.path, change.encoded(change.after), change.encoded(change.before))
    except OSError as err:
        why = err.strerror or err
        raise PathUnusable(f"{change.shown}: cannot write its fixes ({why}); the files before it are fixed") from None


def _baseline(request: Request, rebase: Callable[[str], str] | None) -> frozenset[str]:
    return load_baseline(request.baseline, rebase) if request.baseline else frozenset()
