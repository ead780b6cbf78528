"""The release's two artifacts, built and checked as .github/workflows/release.yml publishes them (a checkout's tool).

`build(out)` builds the sdist, then the wheel from that sdist (`python -m build`: the wheel pip would build from the
sdist a user downloads, so a file the sdist misses is missing from the wheel too, where tests/e2e/test_wheel.py looks),
and reads back the version each one carries: both must be setup.cfg's, the package's one version. `check_tag` holds a
release tag to it: the tag is `v` and that version, and CHANGELOG.md has a dated section for it.

    python -m tools.release [--out DIR] [--tag vX.Y.Z]   build both into DIR (default dist/), `twine check --strict`
                                                         them; exit 1 with one line naming what differs

It imports nothing but the standard library: `nox -s build` runs it with build and twine alone installed
(requirements/build-env.txt).
"""

from __future__ import annotations

import argparse
import configparser
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHANGELOG = ROOT / "CHANGELOG.md"


class ReleaseError(Exception):
    """An artifact, a tag or the changelog that does not match the package's version: one line saying which."""


@dataclass(frozen=True)
class Artifacts:
    sdist: Path
    wheel: Path


def package_version(root: Path = ROOT) -> str:
    """The package's version: setup.cfg's `[metadata] version`, the one place it is written."""
    setup = configparser.ConfigParser()
    setup.read(root / "setup.cfg", encoding="utf-8")
    return setup["metadata"]["version"]


def artifact_version(path: Path) -> str:
    """The version an sdist (its PKG-INFO) or a wheel (its METADATA) carries."""
    if path.name.endswith(".whl"):
        with zipfile.ZipFile(path) as wheel:
            (name,) = [n for n in wheel.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
            text = wheel.read(name).decode("utf-8")
    else:
        with tarfile.open(path) as sdist:
            (member,) = [m for m in sdist.getmembers() if re.fullmatch(r"[^/]+/PKG-INFO", m.name)]
            text = sdist.extractfile(member).read().decode("utf-8")  # type: ignore[union-attr]
    return HeaderParser().parsestr(text)["Version"]


def build(out: Path, root: Path = ROOT) -> Artifacts:
    """Build the sdist and the wheel from it into `out` (replacing files of the same names, nothing else) and check
    that both carry the package's version."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".release-", dir=out) as staging:
        built = subprocess.run(
            [sys.executable, "-m", "build", "--outdir", staging, str(root)], capture_output=True, text=True, check=False
        )
        if built.returncode != 0:
            raise ReleaseError(f"python -m build failed ({built.returncode}):\n{built.stdout[-3000:]}{built.stderr}")
        sdists, wheels = sorted(Path(staging).glob("*.tar.gz")), sorted(Path(staging).glob("*.whl"))
        if len(sdists) != 1 or len(wheels) != 1:
            raise ReleaseError(
                f"python -m build made {[p.name for p in (*sdists, *wheels)]}, not one sdist and one wheel"
            )
        version = package_version(root)
        for made in (*sdists, *wheels):
            if artifact_version(made) != version:
                raise ReleaseError(f"{made.name} carries version {artifact_version(made)}, setup.cfg says {version}")
        moved = [Path(shutil.move(made, out / made.name)) for made in (*sdists, *wheels)]
    return Artifacts(*moved)


def check_tag(tag: str, version: str, changelog: str) -> None:
    """A release tag names the package's version (`v` + setup.cfg's), and CHANGELOG.md has its dated section."""
    if tag != f"v{version}":
        raise ReleaseError(
            f"tag {tag} does not name the package's version {version}: tag v{version}, or set setup.cfg's"
        )
    if not re.search(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", changelog, re.MULTILINE):
        raise ReleaseError(f"CHANGELOG.md has no section `## [{version}] - YYYY-MM-DD`: move [Unreleased] under it")


def twine_check(artifacts: Artifacts) -> str:
    """`twine check --strict` of both (metadata complete, the long description renders on the index): its output."""
    paths = [str(artifacts.sdist), str(artifacts.wheel)]
    twine = [sys.executable, "-m", "twine", "--no-color", "check", "--strict", *paths]
    wide = {**os.environ, "COLUMNS": "200"}  # one line an artifact, as a log shows it
    checked = subprocess.run(twine, capture_output=True, text=True, check=False, env=wide)
    if checked.returncode != 0:
        raise ReleaseError(f"twine check failed:\n{checked.stdout}{checked.stderr}")
    return checked.stdout


def _given(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError("an empty value: name a folder, or a tag such as v1.2.3")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.release", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=_given, default=str(ROOT / "dist"), help="where the two artifacts go (dist/)")
    parser.add_argument("--tag", type=_given, help="the release tag (vX.Y.Z) the artifacts are published under")
    args = parser.parse_args(argv)
    try:
        version = package_version()
        if args.tag is not None:  # before the build: a wrong tag fails at once
            check_tag(args.tag, version, CHANGELOG.read_text(encoding="utf-8"))
        artifacts = build(Path(args.out))
        print(twine_check(artifacts), end="")
    except ReleaseError as error:
        print(f"release: error: {error}", file=sys.stderr)
        return 1
    for path in (artifacts.sdist, artifacts.wheel):
        print(f"{path}: version {version}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
