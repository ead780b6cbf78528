"""Staging: the site files in a workspace, and the run's settings; the target's own files are only ever read.

A staged copy becomes visible only when complete and is used only while its listing matches `staged.json`; the
`fingerprint` names the workspace, so stale verdicts are never reused.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warnonce_guard import guards
from warnonce_guard.common.errors import BadRecord
from warnonce_guard.common.files import cannot_write, scratch, sweep, write_atomic
from warnonce_guard.common.fingerprint import distributions, tool_fingerprint
from warnonce_guard.mutations.engine import config, prewalk
from warnonce_guard.mutations.workspace import Workspace
from warnonce_guard.rule.site_row import Site
from warnonce_guard.rule.target import PACKAGE, Target, files_to_read, unreadable

if TYPE_CHECKING:  # the suite's module only with --tests
    from warnonce_guard.mutations.suite import Suite

GUARD_TEST_FILES = ("conftest.py", "test_kernel_import_sites.py")
GUARDS_DIR = Path(guards.__file__).resolve().parent
# What else can change a verdict besides the target and this tool: the engine, the guards' test runner,
# the parser, and what the guards import.
VERDICT_DISTRIBUTIONS = ("mutmut", "pytest", "libcst", "torch")


def listing_digest(root: Path) -> str:
    """A digest of every file under `root` but bytecode (`prewalk.tree_digest`: relative path, size and modification
    time; an unchanged rerun's largest cost, vLLM has 6,000 files); a symlink to a folder is not followed (as os.walk
    does not), and what is no file to read is left out with a note."""
    return prewalk.tree_digest(os.fspath(root), _counted)


def _counted(entry: os.DirEntry[str]) -> bool:
    """Whether an entry that is neither a folder nor a regular file is counted: a symlink to a file is."""
    return not (entry.is_symlink() and os.path.isdir(entry.path)) and any(files_to_read([Path(entry.path)]))


def fingerprint(target: Target, packages: dict[str, Path], extra: str = "") -> str:
    """The workspace's key: this tool's code, and everything else that can change a verdict (target files, the
    engine's settings, Python, mutmut and the distributions the guards depend on, `extra` settings). Each package's
    walk is the one done ahead (`prewalk`) when there was one, else done now."""
    parts = [json.dumps([str(target.package_dir), target.version, target.commit, extra])]
    try:
        for name, folder in sorted(packages.items()):
            parts.append(json.dumps([name, str(folder), prewalk.walked(folder) or listing_digest(folder)]))
    finally:
        prewalk.abandon()  # the rest of what the walk ahead said is forgotten: a later fingerprint walks again
    return tool_fingerprint([*parts, config.section(), sys.version, *distributions(VERDICT_DISTRIBUTIONS)])


def forget_staging(ws: Workspace) -> None:
    """Make the next run stage afresh (the target changed under this one: its copy may mix two versions)."""
    ws.staged_manifest.unlink(missing_ok=True)
    ws.result_file.unlink(missing_ok=True)


def _staged(ws: Workspace) -> dict[str, Any]:
    try:
        data = json.loads(ws.staged_manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() or p.is_symlink())


def _copy(source: Path, destination: Path) -> None:
    """One file, its modification time kept; a file of the target this user may not read is the target's fault."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copy2(source, destination)
    except OSError as err:
        if err.filename2 is None and os.fspath(err.filename or "") == os.fspath(source):  # opening the source
            raise unreadable(source, err) from None
        raise


def _stage_package(ws: Workspace, name: str, source: Path, files: list[str]) -> str | None:
    """The package's staged copy of `files` (relative to the package), made (or remade) unless a complete one is
    recorded in staged.json; returns what was discarded, if anything."""
    destination = ws.pristine(name)
    recorded = _staged(ws).get(name)
    if destination.is_dir() and recorded == listing_digest(destination) and _listing(destination) == files:
        return None
    discarded = None
    if destination.exists():  # a copy never recorded, changed since or of other files: made again, mutmut's state too
        discarded = f"discarded {destination} (an incomplete or changed copy); it is made again"
        shutil.rmtree(destination)
        shutil.rmtree(ws.mutants / name, ignore_errors=True)
    sweep(ws.dir, name)  # what a killed run's copy left
    with scratch(destination) as building:
        for file in files:
            _copy(source / file, building / name / file)
        (building / name).mkdir(exist_ok=True)
        digest = listing_digest(building / name)
        (building / name).rename(destination)
    write_atomic(ws.staged_manifest, json.dumps(_staged(ws) | {name: digest}, indent=1))
    return discarded


def _copy_guard_tests(ws: Workspace) -> None:
    folder = ws.guard_tests
    folder.mkdir(exist_ok=True)
    for name in GUARD_TEST_FILES:
        shutil.copy2(GUARDS_DIR / name, folder / name)


def read_sites(ws: Workspace) -> list[Site]:
    """Sites discovered by an earlier run in the same workspace; `BadRecord` if missing or invalid."""
    if not ws.sites_file.is_file():
        raise BadRecord("missing")
    try:
        data = json.loads(ws.sites_file.read_text(encoding="utf-8"))
        sites = [Site.from_json(item) for item in data] if isinstance(data, list) else None
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise BadRecord(f"not a list of sites ({type(err).__name__})") from None
    if sites is None:
        raise BadRecord("not a list of sites")
    if not any(site.guarded for site in sites):  # a run writes the file only once it has a site to guard
        raise BadRecord("no guarded site in it")
    return sites


def mutated_files(sites: Iterable[Site]) -> list[str]:
    """The files staged and mutated: those with a guarded site (relative to the target root, sorted)."""
    return sorted({site.file for site in sites if site.guarded})


def stage_files(ws: Workspace, packages: dict[str, Path], files: Iterable[str]) -> list[str]:
    """Copy the site files `files` (e.g. vllm/platforms/cpu.py) of each package into the workspace; returns what
    was discarded of an earlier copy."""
    wanted = sorted(set(files))
    discarded = []
    try:
        ws.create()
        for name, folder in packages.items():
            mine = [file.partition("/")[2] for file in wanted if file.partition("/")[0] == name]
            if (said := _stage_package(ws, name, folder, mine)) is not None:
                discarded.append(said)
    except OSError as err:
        raise cannot_write(err, f"cannot stage the target in {ws.dir}") from None
    return discarded


def prepare(
    ws: Workspace,
    target: Target,
    sites: list[Site],
    packages: dict[str, Path] | None = None,
    suite: Suite | None = None,
    timeout: float | None = None,
) -> list[str]:
    """Create or refresh the work directory's contents for these sites, scored by the guards or by `suite`, each test
    stopped past `timeout` seconds if given; returns what was discarded of an earlier copy."""
    packages = packages or {PACKAGE: target.package_dir}
    files = mutated_files(sites)
    discarded = stage_files(ws, packages, files)
    try:
        write_atomic(ws.packages_file, json.dumps({name: str(folder) for name, folder in packages.items()}))
        if suite is None:
            _copy_guard_tests(ws)
            ws.suite_file.unlink(missing_ok=True)
        else:
            write_atomic(ws.suite_file, json.dumps(suite.to_json()))
        config.write(ws.setup_cfg, files, ws.guard_tests.name, suite, timeout)
        write_atomic(ws.sites_file, json.dumps([site.to_json() for site in sites], indent=1))
    except OSError as err:
        raise cannot_write(err, f"cannot stage the target in {ws.dir}") from None
    return discarded


def workspace_sites(ws: Workspace, find_sites: Callable[[], list[Site]], say: Callable[[str], None]) -> list[Site]:
    """The sites recorded in the workspace by an earlier run, else discovered now."""
    try:
        return read_sites(ws)
    except BadRecord as err:
        if ws.sites_file.exists():
            say(f"discarded {ws.sites_file} ({err}); discovering again")
        return find_sites()


@dataclass(frozen=True)
class Key:
    """What keys the run's workspace: the target, its staged packages, other settings (`extra`: the platform), the
    suite of --tests with its sources and settings (not the run's own `left_out` folders, which change as it runs),
    and the platform plugins every guard loads (`RegisteredPlatform.key`, and VLLM_PLUGINS, which names those vLLM
    loads)."""

    target: Target
    packages: dict[str, Path]
    extra: str
    suite: Suite | None
    left_out: list[Path]
    rounds: int = 1  # how many times each kill's tests are re-run to confirm it (`--confirm`)
    timeout: float | None = None  # seconds a test may run before pytest-timeout stops it (`--timeout`)
    plugins: list[list[str | None]] = field(default_factory=list)  # the platform plugins the guards load (their key)
    plugins_named: str | None = None  # VLLM_PLUGINS: the ones of them vLLM loads, when it is set

    def suite_files(self) -> list[tuple[str, int, int]] | None:
        if self.suite is None:
            return None
        from warnonce_guard.mutations.suite import signature

        return signature(self.suite, self.left_out)

    def fingerprint(self, suite_files: list[tuple[str, int, int]] | None = None) -> str:
        """The workspace's name; `suite_files` as `suite_files()` gave them, else read now."""
        files = suite_files if suite_files is not None else self.suite_files()
        suite = [self.suite.to_json(), files] if self.suite is not None else None
        settings = [self.extra, suite, self.rounds, self.timeout, self.plugins, self.plugins_named]
        return fingerprint(self.target, self.packages, json.dumps(settings))

    def changed(self, before: list[tuple[str, int, int]] | None) -> str | None:
        """What changed since the suite's files were `before` and the workspace was named: None when nothing did."""
        after = self.suite_files()
        if after != before and self.suite is not None:
            moved = sorted(set(before or []) ^ set(after or []))
            return f"{moved[0][0] if moved else 'a file'} of {self.suite.describe()}"
        return None
