"""A release's `vllm/` tree in the work directory: download, verify against the index's sha256, extract.

Nothing is written to site-packages; the layout is docs/ARCHITECTURE.md's (Work directories). Everything is written
under a temporary name and renamed into place, so a killed run leaves nothing half-written under a real name.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from warnonce_guard.common.files import MARKER, Kind, mark, marker, replace_dir, temporary
from warnonce_guard.history.index import URL_ERRORS, Dist, Release
from warnonce_guard.rule.target import PACKAGE

LEGACY_MARKER = ".warnonce-history.json"  # a tree's marker before the one scheme: ours, and extracted again
COMPILED = (".so", ".pyd", ".dll", ".dylib")  # the guards block kernel modules; their binaries are not needed
CHUNK = 1 << 20
TIMEOUT_S = 120.0


class FetchFailed(Exception):
    """One release could not be fetched (download, hash or archive): that release is `not checked`.

    Not a `GuardError`: the sweep goes on, and the verdict is not kept (a rerun retries). `retry` is False
    when the index's file itself is unusable (a verified archive that does not extract or holds no `vllm/`):
    trying it again gives the same.
    """

    def __init__(self, message: str, retry: bool = True) -> None:
        super().__init__(message)
        self.retry = retry


@dataclass(frozen=True)
class Fetched:
    tree: Path  # the directory holding `vllm/`
    dist: Dist  # the file it came from
    failures: tuple[str, ...] = ()  # files tried first that could not be used, one line each
    retry: bool = False  # one of them may work on a rerun (a download failed): a verdict from this file is not kept
    notes: tuple[str, ...] = ()  # what was discarded from the work directory to fetch it, one line each


def fetch_release(release: Release, work_dir: Path) -> Fetched:
    """The release's tree: from its sdist, else a wheel; `FetchFailed` naming every file tried."""
    failures: list[FetchFailed] = []
    for dist in release.candidates():
        try:
            fetched = fetch_dist(dist, work_dir / "downloads", work_dir / "trees" / release.version)
        except FetchFailed as err:
            failures.append(FetchFailed(f"{dist.filename}: {err}", err.retry))
            continue
        said = tuple(str(f) for f in failures)
        return replace(fetched, failures=said, retry=any(f.retry for f in failures))
    raise FetchFailed("; ".join(str(f) for f in failures) or "no sdist or wheel on the index")


def fetch_dist(dist: Dist, downloads: Path, tree: Path) -> Fetched:
    if _intact(tree, dist.sha256):
        return Fetched(tree, dist)
    notes: list[str] = []
    archive = downloads / dist.filename
    if archive.is_dir() and not archive.is_symlink():
        # only this tool writes under that name in its work directory, and only ever a file
        shutil.rmtree(archive)
        notes.append(f"discarded {archive} (a directory where the downloaded archive goes); downloading it again")
    if not (archive.is_file() and sha256_of(archive) == dist.sha256):
        download(dist, archive)
    if sha256_of(archive) != dist.sha256:  # verified again right before use
        raise FetchFailed(f"{archive} no longer matches the index's sha256; rerun to fetch it again")
    damaged = _made_here(tree) and not marker(tree, Kind.RELEASE_TREE).get("tree")
    extract(archive, dist, tree)
    if damaged:
        notes.append(f"discarded the kept tree {tree} (its {MARKER} is damaged); extracted again from {archive.name}")
    return Fetched(tree, dist, notes=tuple(notes))


def sha256_of(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def download(dist: Dist, archive: Path) -> None:
    """Stream `dist` into a temporary file beside `archive`, hashing as it comes; rename it in when it matches."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = temporary(archive)
    digest = hashlib.sha256()
    try:
        request = urllib.request.Request(dist.url, headers={"User-Agent": "warnonce-guard-history"})
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response, partial.open("wb") as out:
            while chunk := response.read(CHUNK):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != dist.sha256:
            got = digest.hexdigest()
            raise FetchFailed(f"sha256 mismatch: the index says {dist.sha256[:16]}..., the download is {got[:16]}...")
        os.replace(partial, archive)
    except URL_ERRORS as err:
        raise FetchFailed(f"download failed ({err}); rerun to retry") from None
    finally:
        partial.unlink(missing_ok=True)


def tree_digest(tree: Path) -> str:
    """A hash of every file of the tree's `vllm/` package (names and contents; bytecode caches left out)."""
    digest = hashlib.sha256()
    for path in sorted((tree / PACKAGE).rglob("*")):
        relative = path.relative_to(tree)
        if "__pycache__" in relative.parts or not path.is_file():
            continue
        digest.update(relative.as_posix().encode() + b"\0" + str(path.stat().st_size).encode() + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _made_here(tree: Path) -> bool:
    """The tree carries this tool's marker file, readable or not (only extraction writes one in trees/)."""
    return any((tree / name).exists() or (tree / name).is_symlink() for name in (MARKER, LEGACY_MARKER))


def _intact(tree: Path, sha256: str) -> bool:
    """The tree was extracted from the archive with this sha256 and holds exactly what was extracted."""
    found = marker(tree, Kind.RELEASE_TREE)
    return found.get("sha256") == sha256 and found.get("tree") == tree_digest(tree)


def _members(archive: Path, kind: str) -> Iterator[tuple[PurePosixPath, BinaryIO]]:
    """(path under the archive's root, readable) for every regular file; an sdist's top folder is dropped."""
    if kind == "wheel":
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if not info.is_dir():
                    with zf.open(info) as fh:
                        yield PurePosixPath(info.filename), fh
        return
    with tarfile.open(archive, "r:*") as tf:
        for member in tf:
            parts = PurePosixPath(member.name).parts
            if member.isfile() and len(parts) > 1:
                fh = tf.extractfile(member)
                if fh is not None:
                    yield PurePosixPath(*parts[1:]), fh


def copy_members(archive: Path, kind: str, into: Path, wanted: Callable[[PurePosixPath], bool]) -> int:
    """Copy into `into` every regular file of the archive (`kind`: "sdist" or "wheel") whose path under its root
    is relative, climbs nowhere and is `wanted`; how many."""
    count = 0
    for path, fh in _members(archive, kind):
        if path.is_absolute() or ".." in path.parts or not wanted(path):
            continue
        destination = into.joinpath(*path.parts)
        destination.parent.mkdir(parents=True, exist_ok=True)
        with destination.open("wb") as out:
            shutil.copyfileobj(fh, out)
        count += 1
    return count


def _wanted(path: PurePosixPath) -> bool:
    return path.parts[:1] == (PACKAGE,) and path.suffix not in COMPILED


def extract(archive: Path, dist: Dist, tree: Path) -> None:
    """Write the archive's `vllm/` files (no compiled modules) into `tree`, whole or not at all; a tree already
    there is replaced only when its marker shows this tool made it (a marker cut short or emptied still does)."""
    if (tree.exists() or tree.is_symlink()) and not _made_here(tree):
        raise FetchFailed(f"{tree} exists and was not made by warnonce-guard history; move it away")
    tree.parent.mkdir(parents=True, exist_ok=True)
    try:
        with replace_dir(tree, Kind.RELEASE_TREE) as building:
            count = copy_members(archive, dist.kind, building, _wanted)
            if not (building / PACKAGE / "__init__.py").is_file():
                raise FetchFailed(f"{dist.filename} holds no {PACKAGE}/ package", retry=False)
            fields = {"filename": dist.filename, "sha256": dist.sha256, "files": str(count)}
            mark(building, Kind.RELEASE_TREE, **fields, tree=tree_digest(building))
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as err:
        # a verified archive that does not read stays so; a disk that is full or read-only may not
        raise FetchFailed(f"cannot extract {archive.name}: {err}", retry=isinstance(err, OSError)) from None
