"""The npm packages the report's vendored files come from (a checkout's tool; a run never calls npm).

`requirements/npm/package.json` pins them exactly and `package-lock.json` pins their integrity hashes;
`install()` copies both into a prefix folder (default `.nox/npm` in the checkout) and runs
`npm ci --prefix DIR` there, so every install gets byte-identical packages; `vendor()` copies the
viewer bundle, the schema and their licence into the package's `vendor/` folder
(`warnonce_guard.mutations.report.viewer`) and records their digests.

    python -m tools.npm [PREFIX]            install the pins
    python -m tools.npm --vendor [PREFIX]   install, then refresh vendor/
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

from warnonce_guard.common.errors import NpmInstallFailed, ViewerMissing
from warnonce_guard.mutations.report import viewer

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements" / "npm"
DEFAULT_PREFIX = ROOT / ".nox" / "npm"
VIEWER_JS = Path("node_modules/mutation-testing-elements/dist/mutation-test-elements.js")
SCHEMA_JSON = Path("node_modules/mutation-testing-report-schema/dist/src/mutation-testing-report-schema.json")
_MANIFESTS = ("package.json", "package-lock.json")


def install_command(prefix: Path) -> list[str]:
    return ["npm", "ci", "--prefix", str(prefix), "--ignore-scripts", "--no-audit", "--no-fund"]


def pinned(requirements: Path = REQUIREMENTS) -> dict[str, str]:
    """Package name -> exact version, as `package.json` pins them."""
    return json.loads((requirements / "package.json").read_text(encoding="utf-8"))["dependencies"]


def is_installed(prefix: Path = DEFAULT_PREFIX, requirements: Path = REQUIREMENTS) -> bool:
    """Every pinned package is under `prefix` at its pinned version."""
    for name, version in pinned(requirements).items():
        manifest = prefix / "node_modules" / name / "package.json"
        if not manifest.is_file() or json.loads(manifest.read_text(encoding="utf-8")).get("version") != version:
            return False
    return True


def install(prefix: Path = DEFAULT_PREFIX, requirements: Path = REQUIREMENTS) -> Path:
    """Install the pinned packages into `prefix` with `npm ci` unless they are there already; returns `prefix`."""
    if is_installed(prefix, requirements):
        return prefix
    if shutil.which("npm") is None:
        raise NpmInstallFailed("npm is not on PATH; install Node.js and npm (Debian: apt-get install npm)")
    prefix.mkdir(parents=True, exist_ok=True)
    for name in _MANIFESTS:
        shutil.copyfile(requirements / name, prefix / name)
    command = install_command(prefix)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not is_installed(prefix, requirements):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise NpmInstallFailed(f"`{' '.join(command)}` failed (exit {done.returncode}): {last}")
    return prefix


def fix_hint(prefix: Path) -> str:
    return f"run `python -m tools.npm {prefix}` (npm ci --prefix {prefix})"


def installed_file(prefix: Path, relative: Path) -> Path:
    """A file of the installed pins under `prefix`, or `ViewerMissing` naming the install command."""
    path = prefix / relative
    if not path.is_file():
        raise ViewerMissing(f"{path} is not installed; {fix_hint(prefix)}")
    return path


# vendored file name -> (npm package, path inside the prefix)
VENDORED = {
    viewer.VIEWER_JS.name: ("mutation-testing-elements", VIEWER_JS),
    viewer.SCHEMA_JSON.name: ("mutation-testing-report-schema", SCHEMA_JSON),
    "LICENSE": ("mutation-testing-elements", Path("node_modules/mutation-testing-elements/LICENSE")),
}


def vendor(prefix: Path = DEFAULT_PREFIX, requirements: Path = REQUIREMENTS) -> Path:
    """Copy the pinned files into the package's vendor/ folder and record their digests; returns the folder."""
    install(prefix, requirements)
    versions = pinned(requirements)
    entries = {}
    for name, (package, relative) in VENDORED.items():
        data = installed_file(prefix, relative).read_bytes()
        (viewer.VENDOR / name).write_bytes(data)
        entries[name] = {"package": package, "version": versions[package], "sha256": hashlib.sha256(data).hexdigest()}
    viewer.MANIFEST.write_text(json.dumps(entries, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return viewer.VENDOR


def main(argv: list[str] | None = None) -> int:
    """Install the pinned packages (and with --vendor refresh vendor/), print where."""
    args = sys.argv[1:] if argv is None else argv
    refresh = "--vendor" in args
    rest = [a for a in args if a != "--vendor"]
    prefix = Path(rest[0]).resolve() if rest else DEFAULT_PREFIX
    try:
        print(vendor(prefix) if refresh else install(prefix))
    except (NpmInstallFailed, ViewerMissing) as err:
        print(f"warnonce-guard: error: {err}", file=sys.stderr)
        return int(err.exit_code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
