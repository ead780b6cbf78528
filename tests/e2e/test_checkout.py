"""vLLM's own checkout: the installed vLLM laid out as one (its tests/conftest.py importing a test requirement
that is not installed, pytest settings pytest rejects), and the guards run on it from outside, from inside and
installed from it, as on the installed vLLM; a platform module that fails to import is exit 4 naming it; a
mutation run whose work directory lies in a checkout reads none of its settings."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest
from warnonce_guard.common.errors import ExitCode
from warnonce_guard.rule.sites import discover

from tests.faults import cli_args
from tests.toy import CHECKOUT_RUNS, CLI, as_checkout, guards_on_checkout, make_tree

SPEC = importlib.util.find_spec("vllm")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SPEC is None, reason="vLLM is not installed")]
INSTALLED = Path(SPEC.origin).parent if SPEC is not None and SPEC.origin else Path()
SETTINGS = dict(zip(CHECKOUT_RUNS, ("pyproject.toml", "pytest.ini", "setup.cfg"), strict=True))  # one each


@pytest.fixture(scope="module")
def cached() -> int:
    """How many guards the installed vLLM has (6 in vLLM 0.33.0)."""
    return sum(site.cached for site in discover(INSTALLED.parent))


@pytest.mark.parametrize("how", CHECKOUT_RUNS)
def test_the_guards_pass_on_a_checkout_of_the_installed_vllm(how: str, cached: int, tmp_path: Path) -> None:
    tree = tmp_path / "vllm-checkout"
    tree.mkdir()
    (tree / "vllm").symlink_to(INSTALLED)
    as_checkout(tree, SETTINGS[how])

    run = guards_on_checkout(tree, how, "-q", "--tb=line")

    assert run.returncode == ExitCode.OK, run.stdout[-3000:] + run.stderr[-3000:]
    assert f"at {tree / 'vllm'}" in run.stdout and f"{cached} passed" in run.stdout and cached >= 6


def test_a_platform_module_that_raises_on_import_is_exit_7_in_one_line_naming_it(tmp_path: Path) -> None:
    # The installed vLLM through symlinks, but for its own __init__.py (so it is this tree's package) and a
    # platforms/cpu.py that cannot load a shared library, as on a machine without libnuma.
    package = tmp_path / "tree" / "vllm"
    package.mkdir(parents=True)
    for entry in INSTALLED.iterdir():
        if entry.name not in ("__init__.py", "platforms"):
            (package / entry.name).symlink_to(entry)
    shutil.copy2(INSTALLED / "__init__.py", package / "__init__.py")
    (package / "platforms").mkdir()
    for entry in (INSTALLED / "platforms").iterdir():
        if entry.name != "cpu.py":
            (package / "platforms" / entry.name).symlink_to(entry)
    cpu = (INSTALLED / "platforms" / "cpu.py").read_text(encoding="utf-8")
    failing = 'raise ImportError("libnuma.so.1: cannot open shared object file: No such file or directory")\n'
    (package / "platforms" / "cpu.py").write_text(failing + cpu, encoding="utf-8")

    run = subprocess.run([*CLI, "guards", "--vllm-src", str(package.parent), "-q"], capture_output=True, text=True)

    assert run.returncode == ExitCode.ENVIRONMENT, run.stdout[-3000:] + run.stderr[-3000:]
    (line,) = run.stderr.strip().splitlines()
    assert line.startswith("warnonce-guard: error: importing vllm.platforms.cpu failed: libnuma.so.1: "), line
    assert "passed" in run.stdout  # not vacuous: the guards of the other platform modules ran, and passed


def test_a_mutation_run_whose_work_directory_lies_in_a_checkout_reads_none_of_its_settings(tmp_path: Path) -> None:
    checkout = as_checkout(tmp_path / "checkout", "pyproject.toml")
    tree = make_tree(checkout / "plugin-tree")
    viewer = tmp_path / "viewer.js"
    viewer.write_text("/* stand-in for mutation-test-elements.js */\n", encoding="utf-8")
    work = checkout / ".warnonce-work"  # the default --work-dir, from the checkout's root

    args = cli_args(tree, tmp_path / "report", work, viewer)
    run = subprocess.run(args, capture_output=True, text=True, cwd=checkout)

    assert run.returncode == ExitCode.OK, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Mutation score: 100.00%" in run.stdout
