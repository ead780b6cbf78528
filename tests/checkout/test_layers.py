"""The layers of setup.cfg's import-linter contracts hold, and an import that breaks them, even one inside a
function, fails the tests as it fails `nox -s lint`."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from tests import layout

ROOT = layout.ROOT
FOLDERS = layout.PACKAGE_FOLDERS  # warnonce_guard.<folder> -> <folder>
# lint-imports over the package as a tree under sys.path[0] shows it (the editable install's finders, which
# map warnonce_guard.<folder> to the checkout, are taken out first).
LINT = """
import sys
import tomllib
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
sys.path_hooks[:] = [h for h in sys.path_hooks if "__editable__" not in getattr(h, "__module__", "")]
sys.path_importer_cache.clear()
sys.path.insert(0, sys.argv[1])
sys.argv = ["lint-imports", "--no-cache", "--no-logo", "--config", sys.argv[2]]
from importlinter.cli import lint_imports_command
lint_imports_command()
"""


def lint_imports(tmp_path: Path, change: tuple[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """lint-imports over a copy of the package, with `change` (a module's path, the code appended to it) made."""
    for module, folder in FOLDERS.items():
        shutil.copytree(ROOT / folder, tmp_path.joinpath(*module.split(".")), ignore=shutil.ignore_patterns("*.pyc"))
    if change is not None:
        path, code = change
        with (tmp_path / "warnonce_guard" / path).open("a", encoding="utf-8") as module:
            module.write(code)
    command = [sys.executable, "-c", LINT, str(tmp_path), str(ROOT / "setup.cfg")]
    return subprocess.run(command, capture_output=True, text=True, check=False, cwd=tmp_path)


def test_the_package_keeps_every_contract(tmp_path: Path) -> None:
    done = lint_imports(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    analyzed = sum(1 for folder in FOLDERS.values() for _ in (ROOT / folder).rglob("*.py"))
    assert f"Analyzed {analyzed} files" in done.stdout  # every module of the package, none missed
    assert "0 broken" in done.stdout


def test_an_upward_import_inside_a_function_breaks_the_layers(tmp_path: Path) -> None:
    upward = "\n\ndef _upward():\n    from warnonce_guard.cli import main\n"
    done = lint_imports(tmp_path, ("rule/sites.py", upward))
    assert done.returncode == 1
    assert "warnonce_guard.rule is not allowed to import warnonce_guard.cli" in done.stdout
    assert "warnonce_guard.rule.sites -> warnonce_guard.cli.main" in done.stdout


def test_a_module_that_imports_back_inside_a_function_breaks_the_no_cycle_contract(tmp_path: Path) -> None:
    back = "\n\ndef _back():\n    from warnonce_guard.mutations.engine import session\n"
    done = lint_imports(tmp_path, ("mutations/engine/seam.py", back))  # session imports seam
    assert done.returncode == 1
    assert "No cycles are allowed in warnonce_guard.mutations.engine" in done.stdout


def test_every_tools_list_of_the_folders_is_setup_cfgs_package_dir() -> None:
    """setuptools, import-linter, coverage and ruff each read a list of their own from a static file: each must name
    exactly the folders package_dir maps (a folder added to one and not the others would go unchecked)."""
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    top = {name for name in setup["options"]["packages"].split() if name.count(".") == 1}
    layers = {
        name.strip()
        for line in setup["importlinter:contract:layers"]["layers"].splitlines()
        for name in line.split("|")
    }
    banned = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]
    assert top == set(FOLDERS)
    assert set(setup["importlinter"]["root_packages"].split()) == set(FOLDERS)
    assert layers - {""} == set(FOLDERS)
    assert {s.strip() for s in setup["coverage:run"]["source"].split(",")} == set(FOLDERS.values())
    assert set(banned["flake8-tidy-imports"]["banned-api"]) == set(FOLDERS.values())
