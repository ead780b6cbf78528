"""The release's checks (tools/release.py) on hand-made artifacts and changelogs, and CHANGELOG.md's form. The build
itself runs in `nox -s build` (every CI run) and in tests/e2e/test_wheel.py, whose wheel it builds."""

from __future__ import annotations

import io
import re
import tarfile
import zipfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import pytest

from tests import layout
from tools import release
from tools.release import ReleaseError, artifact_version, check_tag, package_version

CHANGELOG = (layout.ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
DATED = "## [1.2.0] - 2026-01-31\n\n### Added\n\n- a thing\n"


def make_wheel(folder: Path, version: str) -> Path:
    path = folder / f"warnonce_guard-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("warnonce_guard/__init__.py", "")
        wheel.writestr(f"warnonce_guard-{version}.dist-info/METADATA", f"Metadata-Version: 2.4\nVersion: {version}\n")
    return path


def make_sdist(folder: Path, version: str) -> Path:
    path = folder / f"warnonce_guard-{version}.tar.gz"
    with tarfile.open(path, "w:gz") as sdist:
        data = f"Metadata-Version: 2.4\nName: warnonce-guard\nVersion: {version}\n".encode()
        member = tarfile.TarInfo(f"warnonce_guard-{version}/PKG-INFO")
        member.size = len(data)
        sdist.addfile(member, io.BytesIO(data))
    return path


@pytest.mark.parametrize("make", [make_wheel, make_sdist], ids=["wheel", "sdist"])
def test_the_version_an_artifact_carries_is_read_from_its_metadata(
    make: Callable[[Path, str], Path], tmp_path: Path
) -> None:
    assert artifact_version(make(tmp_path, "1.2.0rc1")) == "1.2.0rc1"


def test_the_package_version_is_setup_cfgs_and_the_installed_metadata_says_the_same() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", package_version())
    assert metadata.version("warnonce-guard") == package_version()  # what `warnonce-guard --version` prints


def test_a_tag_naming_the_version_with_its_dated_changelog_section_passes() -> None:
    check_tag("v1.2.0", "1.2.0", f"# Changelog\n\n## [Unreleased]\n\n{DATED}")


@pytest.mark.parametrize(
    ("tag", "changelog", "said"),
    [
        ("v1.2.1", DATED, "tag v1.2.1 does not name the package's version 1.2.0: tag v1.2.0, or set setup.cfg's"),
        ("1.2.0", DATED, "tag 1.2.0 does not name the package's version 1.2.0"),
        ("v1.2", DATED, "tag v1.2 does not name"),
        ("v1.2.0", "## [Unreleased]\n\n- a thing\n", "CHANGELOG.md has no section `## [1.2.0] - YYYY-MM-DD`"),
        ("v1.2.0", "## [1.2.0]\n", "CHANGELOG.md has no section"),  # undated
        ("v1.2.0", "## [1.2.0] - 2026-01-31 (yanked)\n", "CHANGELOG.md has no section"),
    ],
    ids=["other-version", "no-v", "short", "unreleased-only", "undated", "trailing-text"],
)
def test_a_tag_that_does_not_match_is_refused_in_one_line(tag: str, changelog: str, said: str) -> None:
    with pytest.raises(ReleaseError) as refused:
        check_tag(tag, "1.2.0", changelog)
    assert str(refused.value).startswith(said) and "\n" not in str(refused.value)


def test_a_wrong_tag_fails_before_anything_is_built(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "dist"
    assert release.main(["--tag", "v0.0.0-not-this", "--out", str(out)]) == 1
    assert not out.exists()
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("release: error: tag v0.0.0-not-this does not name the package's version")


@pytest.mark.parametrize("option", ["--tag", "--out"])
def test_an_empty_option_value_is_a_usage_error(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        release.main([option, " "])
    assert stop.value.code == 2 and "an empty value" in capsys.readouterr().err


def test_the_changelog_keeps_a_changelog_with_unreleased_first_and_no_invented_release() -> None:
    headings = re.findall(r"^## (.*)$", CHANGELOG, re.MULTILINE)
    assert CHANGELOG.startswith("# Changelog\n") and "https://keepachangelog.com/en/1.1.0/" in CHANGELOG
    assert headings == ["[Unreleased]"]  # no version is released: no dated section, no tag
    kinds = re.findall(r"^### (.*)$", CHANGELOG, re.MULTILINE)
    assert kinds and set(kinds) <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
    with pytest.raises(ReleaseError):  # so no tag can publish today's tree
        check_tag(f"v{package_version()}", package_version(), CHANGELOG)
