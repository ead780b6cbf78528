"""Staging: a pristine copy of the target's sources in a workspace; the installed files are never written.

What goes where is `mutations.workspace`'s business; this module copies, links and writes the run's
settings. The pristine copy holds real copies (not links to the target: nothing the run does, or a
damaged workspace, can reach the user's files through it) of everything but compiled modules and C/C++
sources. A package's copy becomes visible only when complete: it is built in a temporary folder beside it
(`common.files.scratch`), renamed into place, and then recorded in `staged.json` with a digest of its files'
paths, sizes and modification times. A copy whose listing does not match (a run killed between the rename and
the record, or files removed since) is discarded and made again.

The fingerprint (`common.fingerprint`) covers the target's files (path, size, mtime), this tool's own code,
the engine's settings and mutmut's version: mutmut caches verdicts by function source only, so a change of
operators, guards or target gets a fresh workspace and stale verdicts are never reused.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from warnonce_guard import guards
from warnonce_guard.common.errors import BadRecord
from warnonce_guard.common.files import cannot_write, scratch, sweep, write_atomic
from warnonce_guard.common.fingerprint import distributions, tool_fingerprint
from warnonce_guard.mutations.engine import config as engine_config
from warnonce_guard.mutations.workspace import Workspace
from warnonce_guard.rule.sites import Site
from warnonce_guard.rule.target import PACKAGE, Target, files_to_read, unreadable

GUARD_TEST_FILES = ("conftest.py", "test_kernel_import_sites.py")
GUARDS_DIR = Path(guards.__file__).resolve().parent
# What else can change a verdict besides the target and this tool: the engine, the guards' test runner,
# the parser, and what the guards import.
VERDICT_DISTRIBUTIONS = ("mutmut", "pytest", "libcst", "torch")
# Compiled modules stay behind (the guards block them), and so do C/C++/CUDA sources and headers (a third of
# vLLM's files; Python never imports them). Bytecode comes along: copies keep their sources' mtimes, so the
# .pyc files stay valid and the one import of vLLM does not compile it from source.
_SKIPPED = (".so", ".pyd", ".h", ".hpp", ".cuh", ".inl", ".cu", ".cpp", ".c", ".cc")


def _copy_tree(source: Path, destination: Path) -> None:
    """Copy every file staging keeps (modification times included), making only the folders that hold one.

    One walk, then plain copies: several times faster than `shutil.copytree` on vLLM's 1,000 folders, a
    third of which hold only C/C++ sources.
    """
    for folder, _, files in os.walk(source):
        kept = list(files_to_read(Path(folder, name) for name in sorted(files) if not name.endswith(_SKIPPED)))
        if not kept:
            continue
        target = destination / os.path.relpath(folder, source)
        target.mkdir(parents=True, exist_ok=True)
        for path in kept:
            try:
                shutil.copy2(path, target / path.name)
            except OSError as err:
                if err.filename2 is None and os.fspath(err.filename or "") == os.fspath(path):  # opening the source
                    raise unreadable(path, err) from None
                raise


def _tree_signature(root: Path, pattern: str = "*.py") -> list[tuple[str, int, int]]:
    out = []
    for path in files_to_read(p for p in sorted(root.rglob(pattern)) if "__pycache__" not in p.parts):
        st = path.stat()
        out.append((path.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns))
    return out


def fingerprint(target: Target, packages: dict[str, Path], extra: str = "") -> str:
    """The workspace's key: this tool's code, and everything else that can change a verdict (target files, the
    engine's settings, Python, mutmut and the distributions the guards depend on, `extra` settings)."""
    parts = [json.dumps([str(target.package_dir), target.version, target.commit, extra])]
    parts += [json.dumps([name, str(folder), _tree_signature(folder)]) for name, folder in sorted(packages.items())]
    return tool_fingerprint([*parts, engine_config.section(), sys.version, *distributions(VERDICT_DISTRIBUTIONS)])


def listing_digest(folder: Path) -> str:
    """A digest of every file under `folder`: relative path, size and modification time."""
    digest = hashlib.sha256()
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            st = os.stat(path)
            # os.fsencode: a file name that is not UTF-8 (kept by Python as surrogates) hashes as its bytes
            digest.update(os.fsencode(f"{os.path.relpath(path, folder)}\0{st.st_size}\0{st.st_mtime_ns}\n"))
    return digest.hexdigest()


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


def _copy_pristine(ws: Workspace, name: str, source: Path) -> str | None:
    """The package's pristine copy, made (or remade) unless a complete one is recorded in staged.json;
    returns what was discarded, if anything."""
    destination = ws.pristine(name)
    recorded = _staged(ws).get(name)
    if destination.is_dir() and recorded == listing_digest(destination):
        return None
    discarded = None
    if destination.exists():  # a copy never recorded, or changed since: make it again, links included
        discarded = f"discarded {destination} (an incomplete or changed copy); it is made again"
        shutil.rmtree(destination)
        shutil.rmtree(ws.mutants / name, ignore_errors=True)
    sweep(ws.dir, name)  # what a killed run's copy left
    with scratch(destination) as building:
        _copy_tree(source, building / name)
        digest = listing_digest(building / name)
        (building / name).rename(destination)
    write_atomic(ws.staged_manifest, json.dumps(_staged(ws) | {name: digest}, indent=1))
    return discarded


def _link_all(ws: Workspace, name: str) -> None:
    """Fill mutants/<name> with hard links to every pristine file; a link that went missing is made again
    (every run checks: a file missing there would leave the guards importing an incomplete package)."""
    pristine = ws.pristine(name)
    for folder, _, files in os.walk(pristine):
        linked = ws.mutants / name / os.path.relpath(folder, pristine)
        linked.mkdir(parents=True, exist_ok=True)
        for file in files:
            with contextlib.suppress(FileExistsError):  # linked already, or mutmut's own copy of a site file
                os.link(os.path.join(folder, file), linked / file)


def _unlink_site_files(ws: Workspace, site_files: set[str]) -> None:
    """mutmut owns the site files under mutants/: it copies them there and writes the mutants into them.

    A hard link left in place would be skipped by its copy and then written through, into the pristine
    copy. A file mutmut already wrote (another inode) is kept: it is mutmut's cache.
    """
    for file in site_files:
        linked = ws.mutants / file
        if linked.exists() and os.path.samefile(linked, ws.dir / file):
            linked.unlink()


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
    if not any(site.cached for site in sites):  # a run writes the file only once it has a site to mutate
        raise BadRecord("no *_once site in it")
    return sites


def copy_packages(ws: Workspace, packages: dict[str, Path]) -> list[str]:
    """Copy each package into the work directory and link it into mutants/ (once; most of staging's time).

    Needs no sites, so it can run while discovery does.
    """
    discarded = []
    try:
        ws.create()
        for name, folder in packages.items():
            if (said := _copy_pristine(ws, name, folder)) is not None:
                discarded.append(said)
            _link_all(ws, name)
    except OSError as err:
        raise cannot_write(err, f"cannot stage the target in {ws.dir}") from None
    return discarded


def prepare(ws: Workspace, target: Target, sites: list[Site], packages: dict[str, Path] | None = None) -> None:
    """Create or refresh the work directory's contents for these sites."""
    packages = packages or {PACKAGE: target.package_dir}
    copy_packages(ws, packages)
    try:
        _unlink_site_files(ws, {site.file for site in sites})
        write_atomic(ws.packages_file, json.dumps(sorted(packages)))
        _copy_guard_tests(ws)
        engine_config.write(ws.setup_cfg, [site.file for site in sites], ws.guard_tests.name)
        write_atomic(ws.sites_file, json.dumps([site.to_json() for site in sites], indent=1))
    except OSError as err:
        raise cannot_write(err, f"cannot stage the target in {ws.dir}") from None
