"""vLLM's test sources for one release: its sdist from the package index, verified, and `tests/` taken out of it.

    python -m tools.vllm_tests.sources DEST   fetch into DEST (once) and print the folder that holds tests/

The index lists the file and its sha256 (PEP 691, `warnonce_guard.history.index`); it must be the sha256 pinned
here (tests/data/README.md gives the same), and the download is checked against it as it comes
(`warnonce_guard.history.fetch.download`). Taken out are `tests/` and `pyproject.toml` (vLLM's pytest settings:
its markers, and a rootdir that is not this checkout); never `vllm/`, so the tests import the installed wheel.
A folder already extracted from that archive (its `common.files` marker says so) is used as it is, without the
network; one without the marker is someone else's and never replaced.
"""

from __future__ import annotations

import sys
from pathlib import Path, PurePosixPath

from warnonce_guard.common.errors import GuardError
from warnonce_guard.common.files import Kind, mark, marked, marker, replace_dir
from warnonce_guard.history.fetch import FetchFailed, copy_members, download, sha256_of
from warnonce_guard.history.index import DEFAULT_INDEX, Dist, fetch_index

VERSION = "0.33.0"
SHA256 = "f4c33c2503d52bb411146afa9618a4f48bed68912f617e6803ac8d76e4c74112"  # vllm-0.33.0.tar.gz
# Every sdist whose tests/ a session takes (tests/data/README.md gives the same): the pinned release's, and that of
# 0.29.0, the last before the fix, whose suite `nox -s exported -- --vllm 0.29.0` runs the exported test in.
SDISTS = {
    VERSION: SHA256,
    "0.34.0": "fcad848b246a9d8652b47e6425af92334dc02492f9802720f54e27b823cf0113",  # the pinned vLLM (noxfile.py)
    "0.29.0": "c03feb07943ecae9e69e7dc424d7c5569ecf8d1292513aef2a4de67af381cd97",
}
KIND = Kind.RELEASE_TREE  # files of a release, from its archive (marker fields: archive, sha256)


def sdist(version: str = VERSION, sha256: str = SHA256, base: str = DEFAULT_INDEX) -> Dist:
    """The release's sdist as the index lists it; `FetchFailed` when it is missing or its sha256 is not `sha256`."""
    for release in fetch_index(base):
        if release.version == version:
            for dist in release.files:
                if dist.kind == "sdist":
                    if dist.sha256 != sha256:
                        raise FetchFailed(f"{dist.filename}: the index's sha256 {dist.sha256} is not {sha256}")
                    return dist
    raise FetchFailed(f"no sdist of vllm {version} on {base}")


def kept(path: PurePosixPath) -> bool:
    """Whether an sdist's file (its path under the top folder) is one to take out: `tests/` and `pyproject.toml`."""
    return path.parts[0] == "tests" or path == PurePosixPath("pyproject.toml")


def extract(archive: Path, tree: Path, sha256: str) -> None:
    """Write the kept files of `archive` into `tree`, whole or not at all, marked with the archive's name and hash."""
    if (tree.exists() or tree.is_symlink()) and not marked(tree, KIND):
        raise FetchFailed(f"{tree} exists and was not extracted here; move it away")
    tree.parent.mkdir(parents=True, exist_ok=True)
    with replace_dir(tree, KIND) as building:
        copy_members(archive, "sdist", building, kept)
        if not (building / "tests" / "conftest.py").is_file():
            raise FetchFailed(f"{archive.name} holds no tests/conftest.py")
        mark(building, KIND, archive=archive.name, sha256=sha256)


def extracted(tree: Path, sha256: str) -> bool:
    return marker(tree, KIND).get("sha256") == sha256


def fetch(dest: Path, version: str = VERSION, sha256: str = SHA256, base: str = DEFAULT_INDEX) -> Path:
    """`DEST/vllm-VERSION/` holding the release's tests/ and pyproject.toml; the archive is kept in DEST/downloads."""
    tree = dest / f"vllm-{version}"
    if extracted(tree, sha256):
        return tree
    dist = sdist(version, sha256, base)
    archive = dest / "downloads" / dist.filename
    if not (archive.is_file() and sha256_of(archive) == sha256):
        download(dist, archive)
    extract(archive, tree, sha256)
    return tree


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tools.vllm_tests.sources DEST", file=sys.stderr)
        return 2
    try:
        print(fetch(Path(argv[0])))
    except (FetchFailed, GuardError) as err:  # GuardError: the index cannot be read
        print(f"vllm-tests: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
