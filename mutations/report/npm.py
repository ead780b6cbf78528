"""The pinned npm packages the report needs: the HTML viewer bundle and the Stryker report schema.

`requirements/npm/package.json` pins them exactly and `package-lock.json` pins their integrity hashes;
`install()` copies both into a prefix folder (default `.nox/npm` in the checkout) and runs
`npm ci --prefix DIR` there, so every run gets byte-identical packages. `python -m mutations.report.npm`
does the same from a shell.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from mutations.report.errors import NpmInstallFailed, ViewerMissing

ROOT = Path(__file__).resolve().parents[2]
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
    return f"run `python -m mutations.report.npm {prefix}` (npm ci --prefix {prefix} with requirements/npm/)"


def find_viewer(prefix: Path = DEFAULT_PREFIX) -> Path:
    """The viewer bundle under `prefix`, or `ViewerMissing` naming the install command."""
    path = prefix / VIEWER_JS
    if not path.is_file():
        raise ViewerMissing(f"the report viewer {path} is not installed; {fix_hint(prefix)}")
    return path


def find_schema(prefix: Path = DEFAULT_PREFIX) -> Path:
    """The Stryker report JSON schema under `prefix`, or `ViewerMissing` naming the install command."""
    path = prefix / SCHEMA_JSON
    if not path.is_file():
        raise ViewerMissing(f"the report schema {path} is not installed; {fix_hint(prefix)}")
    return path


def main(argv: list[str] | None = None) -> int:
    """`python -m mutations.report.npm [PREFIX]`: install the pinned packages, print where."""
    args = sys.argv[1:] if argv is None else argv
    prefix = Path(args[0]).resolve() if args else DEFAULT_PREFIX
    try:
        install(prefix)
    except NpmInstallFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    print(prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
