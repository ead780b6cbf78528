"""The work directory of a mutation run: a staged copy of the target's sources, never the installed files.

Layout of `<work root>/<fingerprint>/`:

    vllm/              pristine copy of the target's Python sources and data (no compiled modules)
    <plugin>/          the same for a platform plugin's package, when its own sites are mutated
    mutants/vllm/      what the guards import: mutmut writes the mutated site files here, the rest are
                       hard links to the pristine copy (mutmut never writes them)
    packages.json      the staged package names
    guard_tests/       the guard tests, copied from the `guards` package
    setup.cfg          mutmut's settings: the project's [mutmut] section plus this target's paths
    sites.json         the sites discovered in the pristine copy
    attribution/       one JSON line per guard outcome, written by the guards' conftest

The fingerprint covers the target's files (path, size, mtime), this tool's own code and mutmut's
version: mutmut caches verdicts by function source only, so a change of operators, guards or target
gets a fresh directory and stale verdicts are never reused.
"""

from __future__ import annotations

import configparser
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from guards.errors import GuardError
from guards.sites import Site
from guards.target import PACKAGE, Target

PROJECT_ROOT = Path(__file__).resolve().parent.parent
GUARD_TEST_FILES = ("conftest.py", "test_kernel_import_sites.py")
TOOL_DIRS = ("guards", "mutations")
# Compiled modules stay behind (the guards block them). Bytecode comes along: copies keep their sources'
# mtimes, so the .pyc files stay valid and the one import of vLLM does not compile it from source.
_SKIP = shutil.ignore_patterns("*.so", "*.pyd")


class StagingFailed(GuardError):
    exit_code = 7


@dataclass(frozen=True)
class Workspace:
    dir: Path

    @property
    def mutants(self) -> Path:
        return self.dir / "mutants"

    @property
    def packages_file(self) -> Path:
        """The names of the packages staged (vllm first), for the mutmut session's operators."""
        return self.dir / "packages.json"

    @property
    def sites_file(self) -> Path:
        return self.dir / "sites.json"

    @property
    def attribution(self) -> Path:
        return self.dir / "attribution"


def _tree_signature(root: Path, pattern: str = "*.py") -> list[tuple[str, int, int]]:
    out = []
    for path in sorted(root.rglob(pattern)):
        if "__pycache__" in path.parts:
            continue
        st = path.stat()
        out.append((path.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns))
    return out


def fingerprint(target: Target, packages: dict[str, Path], extra: str = "") -> str:
    """A hash of everything that can change a verdict: target files, this tool's code, mutmut, settings."""
    digest = hashlib.sha256()
    digest.update(json.dumps([str(target.package_dir), target.version, target.commit, extra]).encode())
    for name, folder in sorted(packages.items()):
        digest.update(json.dumps([name, str(folder), _tree_signature(folder)]).encode())
    for folder in TOOL_DIRS:
        for path in sorted((PROJECT_ROOT / folder).rglob("*.py")):
            digest.update(path.read_bytes())
    digest.update(mutmut_section().encode())
    digest.update(version("mutmut").encode())
    return digest.hexdigest()[:16]


def mutmut_section() -> str:
    """The project's `[mutmut]` settings (setup.cfg), as text."""
    parser = configparser.ConfigParser()
    if not parser.read(PROJECT_ROOT / "setup.cfg") or not parser.has_section("mutmut"):
        raise StagingFailed(
            f"no [mutmut] section in {PROJECT_ROOT / 'setup.cfg'}; install warnonce-guard from its checkout "
            "(pip install -e .)"
        )
    return "\n".join(f"{key} = {value.replace(chr(10), chr(10) + '    ')}" for key, value in parser.items("mutmut"))


def _indent(values: list[str]) -> str:
    return "".join(f"\n    {value}" for value in values)


def write_mutmut_config(ws: Workspace, sites: list[Site]) -> None:
    """setup.cfg for mutmut: the project's section plus the site files, the guard tests and their selection."""
    files = sorted({site.file for site in sites})
    text = (
        "# Written by warnonce-guard for one mutation run; edit the [mutmut] section of its setup.cfg instead.\n"
        "[mutmut]\n"
        f"{mutmut_section()}\n"
        f"source_paths ={_indent(files)}\n"
        f"only_mutate ={_indent(files)}\n"
        "also_copy =\n    guard_tests/\n"
        "pytest_add_cli_args_test_selection =\n    guard_tests/\n"
    )
    (ws.dir / "setup.cfg").write_text(text, encoding="utf-8")


def _copy_pristine(source: Path, destination: Path) -> None:
    if destination.is_dir():
        return
    partial = destination.with_name(f".{destination.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(source, partial, ignore=_SKIP)
    partial.rename(destination)


def _link_all(ws: Workspace, name: str) -> None:
    """Fill mutants/<name> with hard links to every pristine file (done once per work directory)."""
    marker = ws.mutants / f".{name}.linked"
    if marker.exists():
        return
    for path in (ws.dir / name).rglob("*"):
        if path.is_dir():
            continue
        destination = ws.mutants / path.relative_to(ws.dir)
        destination.parent.mkdir(parents=True, exist_ok=True)
        if not destination.exists():
            os.link(path, destination)
    marker.touch()


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
    folder = ws.dir / "guard_tests"
    folder.mkdir(exist_ok=True)
    for name in GUARD_TEST_FILES:
        shutil.copy2(PROJECT_ROOT / "guards" / name, folder / name)


def workspace(target: Target, work_root: Path, packages: dict[str, Path] | None = None, extra: str = "") -> Workspace:
    """The work directory for this target (and any plugin package staged with it) and this tool version."""
    return Workspace(work_root.resolve() / fingerprint(target, packages or {PACKAGE: target.package_dir}, extra))


def prune(ws: Workspace, keep: int = 3) -> list[Path]:
    """Remove all but the `keep` most recently used work directories beside `ws` (never `ws` itself)."""
    if ws.dir.is_dir():
        os.utime(ws.dir)
    siblings = [p for p in ws.dir.parent.iterdir() if p.is_dir() and p != ws.dir] if ws.dir.parent.is_dir() else []
    stale = sorted(siblings, key=lambda p: p.stat().st_mtime, reverse=True)[max(0, keep - 1) :]
    for path in stale:
        shutil.rmtree(path, ignore_errors=True)
    return stale


def cached_sites(ws: Workspace) -> list[Site] | None:
    """Sites discovered by an earlier run in the same work directory (same fingerprint)."""
    if not ws.sites_file.is_file():
        return None
    return [Site.from_json(data) for data in json.loads(ws.sites_file.read_text(encoding="utf-8"))]


def copy_packages(ws: Workspace, packages: dict[str, Path]) -> None:
    """Copy each package into the work directory and link it into mutants/ (once; most of staging's time).

    Needs no sites, so it can run while discovery does.
    """
    try:
        ws.dir.mkdir(parents=True, exist_ok=True)
        for name, folder in packages.items():
            _copy_pristine(folder, ws.dir / name)
            _link_all(ws, name)
    except OSError as err:
        raise StagingFailed(f"cannot stage the target in {ws.dir}: {err}; pass --work-dir on a writable disk") from None


def prepare(ws: Workspace, target: Target, sites: list[Site], packages: dict[str, Path] | None = None) -> None:
    """Create or refresh the work directory's contents for these sites."""
    packages = packages or {PACKAGE: target.package_dir}
    copy_packages(ws, packages)
    try:
        _unlink_site_files(ws, {site.file for site in sites})
        ws.packages_file.write_text(json.dumps(sorted(packages)), encoding="utf-8")
        _copy_guard_tests(ws)
        write_mutmut_config(ws, sites)
        ws.sites_file.write_text(json.dumps([site.to_json() for site in sites], indent=1), encoding="utf-8")
    except OSError as err:
        raise StagingFailed(f"cannot stage the target in {ws.dir}: {err}; pass --work-dir on a writable disk") from None
