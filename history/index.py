"""Releases of a project on the package index (PEP 691 JSON simple API): version, date, files and hashes.

Pre-releases are left out of a range unless asked for (`--pre`) or named with `--only`; a release whose
files are all yanked is kept and marked yanked (a pin still installs it).
"""

from __future__ import annotations

import http.client
import json
import re
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urljoin

from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename
from packaging.version import InvalidVersion, Version
from warnonce_guard.common.errors import IndexUnavailable, NoRelease, UsageError
from warnonce_guard.history import DEFAULT_INDEX

PROJECT = "vllm"
ACCEPT = "application/vnd.pypi.simple.v1+json"
TIMEOUT_S = 60.0
SHA256 = re.compile(r"[0-9a-fA-F]{64}")
# What reading a URL raises when the network, the server or the URL fails (URLError and TimeoutError are OSErrors)
URL_ERRORS = (OSError, http.client.HTTPException, ValueError)


@dataclass(frozen=True)
class Dist:
    """One file of a release, as the index lists it."""

    filename: str
    kind: str  # "sdist" or "wheel"
    url: str  # absolute
    sha256: str
    size: int
    uploaded: str  # ISO 8601
    yanked: str | None  # the yank reason ("" without one), None when not yanked


@dataclass(frozen=True)
class Release:
    version: str
    files: tuple[Dist, ...]

    @property
    def parsed(self) -> Version:
        return Version(self.version)

    @property
    def date(self) -> str:
        """The day the release's first file was uploaded."""
        return min((f.uploaded for f in self.files), default="")[:10]

    @property
    def yanked(self) -> str | None:
        """The yank reason when every file is yanked (PEP 592), else None."""
        if self.files and all(f.yanked is not None for f in self.files):
            return next((f.yanked for f in self.files if f.yanked), "")
        return None

    @property
    def prerelease(self) -> bool:
        return self.parsed.is_prerelease

    def candidates(self) -> tuple[Dist, ...]:
        """The files to try, in order: sdists (far smaller), then wheels, smallest first; unyanked first."""
        return tuple(sorted(self.files, key=lambda f: (f.kind != "sdist", f.yanked is not None, f.size, f.filename)))


@dataclass(frozen=True)
class Selection:
    releases: tuple[Release, ...]  # newest first
    prereleases_left_out: tuple[str, ...]


def index_url(base: str, project: str = PROJECT) -> str:
    return urljoin(base if base.endswith("/") else base + "/", f"{project}/")


def fetch_index(base: str = DEFAULT_INDEX, project: str = PROJECT) -> list[Release]:
    """Read the project's page from the index (one request) and parse it."""
    url = index_url(base, project)
    try:
        request = urllib.request.Request(url, headers={"Accept": ACCEPT, "User-Agent": "warnonce-guard-history"})
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            body = response.read()
            final_url = response.geturl()
    except URL_ERRORS as err:
        raise IndexUnavailable(
            f"cannot read the package index at {url}: {err}; check the network or --index-url"
        ) from None
    try:
        data = json.loads(body)
    except ValueError as err:
        raise IndexUnavailable(
            f"{final_url}: not a PEP 691 JSON page (the answer is not JSON: {err}); pass a PEP 691 index with "
            "--index-url"
        ) from None
    return parse_index(data, final_url, project)


def _kind_and_version(filename: str, project: str) -> tuple[str, str] | None:
    try:
        if filename.endswith(".whl"):
            name, version, *_ = parse_wheel_filename(filename)
            kind = "wheel"
        else:
            name, version = parse_sdist_filename(filename)
            kind = "sdist"
    except (InvalidSdistFilename, InvalidWheelFilename, InvalidVersion):
        return None
    return (kind, str(version)) if name == project else None


def parse_index(data: object, base_url: str, project: str = PROJECT) -> list[Release]:
    """Releases from a PEP 691 project page, oldest first. A file the page describes wrongly (its name does not
    parse, no sha256, no URL) is not a release's file."""
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(files, list):
        raise IndexUnavailable(f"{base_url}: not a PEP 691 JSON project page (no `files` list)")
    by_version: dict[str, list[Dist]] = {version: [] for version in _versions(data.get("versions", ()))}
    for entry in files:
        found = _dist(entry, base_url, project)
        if found is not None:
            version, dist = found
            by_version.setdefault(version, []).append(dist)
    releases = [Release(version, tuple(dists)) for version, dists in by_version.items()]
    return sorted(releases, key=lambda r: r.parsed)


def _dist(entry: object, base_url: str, project: str) -> tuple[str, Dist] | None:
    """(version, file) for one entry of the page's `files`, or None when it does not describe a usable file."""
    if not isinstance(entry, dict):
        return None
    filename, hashes, url = entry.get("filename"), entry.get("hashes"), entry.get("url")
    parsed = _kind_and_version(filename, project) if isinstance(filename, str) else None
    sha256 = hashes.get("sha256") if isinstance(hashes, dict) else None
    if parsed is None or not isinstance(sha256, str) or not SHA256.fullmatch(sha256) or not isinstance(url, str):
        return None
    try:
        absolute = urljoin(base_url, url)
    except ValueError:
        return None
    kind, version = parsed
    size, uploaded, yanked = entry.get("size"), entry.get("upload-time"), entry.get("yanked", False)
    return version, Dist(
        filename=filename,
        kind=kind,
        url=absolute,
        sha256=sha256.lower(),
        size=size if isinstance(size, int) else 0,
        uploaded=uploaded if isinstance(uploaded, str) else "",
        yanked=(yanked if isinstance(yanked, str) else "") if yanked else None,
    )


def _versions(values: Iterable[object]) -> Iterable[str]:
    for value in values if isinstance(values, list) else ():
        try:
            yield str(Version(str(value)))
        except InvalidVersion:
            continue


def parse_version(text: str, option: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise UsageError(f"{option} {text}: not a version; give one such as 0.29.0") from None


def select(
    releases: Sequence[Release],
    start: str | None = None,
    end: str | None = None,
    only: Sequence[str] = (),
    pre: bool = False,
) -> Selection:
    """The releases to check, newest first: `--only` ones, or those from `start` to `end` (inclusive)."""
    known = {r.parsed: r for r in releases}
    if only:
        wanted = [parse_version(text, "--only") for text in only]
        unknown = [str(v) for v in wanted if v not in known]
        if unknown:
            newest = f"its newest release is {max(known)}" if known else "it lists no release"
            raise NoRelease(f"--only: {', '.join(unknown)} not on the index; {newest}")
        chosen = [known[v] for v in dict.fromkeys(wanted)]
        return Selection(tuple(sorted(chosen, key=lambda r: r.parsed, reverse=True)), ())
    low = parse_version(start, "--from") if start else None
    high = parse_version(end, "--to") if end else None
    in_range = [r for r in releases if (low is None or r.parsed >= low) and (high is None or r.parsed <= high)]
    left_out = tuple(r.version for r in in_range if r.prerelease and not pre)
    chosen = [r for r in in_range if pre or not r.prerelease]
    if not chosen:
        span = f"{start or 'the first'} to {end or 'the newest'}"
        raise NoRelease(f"no release on the index from {span}" + (" (pre-releases need --pre)" if left_out else ""))
    return Selection(tuple(sorted(chosen, key=lambda r: r.parsed, reverse=True)), left_out)
