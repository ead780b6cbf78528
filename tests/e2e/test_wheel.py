"""The package as users get it: a wheel, installed into fresh venvs, run outside the checkout.

Marked `wheel` (and `network`: it installs from the package index): `nox -s wheel` runs `-m wheel --vllm-release X`,
X the vLLM version to install beside it; every other tier deselects these tests, which build a wheel and two venvs and
install torch and vLLM into one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from warnonce_guard.common.errors import ExitCode

from tests import layout
from tests.toy import INTERFACE, make_tree

ROOT = layout.ROOT
CONSTRAINTS = ROOT / "requirements" / "constraints.txt"

pytestmark = [pytest.mark.slow, pytest.mark.long, pytest.mark.wheel, pytest.mark.network]


def run(*args: str | Path, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        pytest.fail(f"{args} exited {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "build", "--wheel", "--outdir", dist, ROOT, cwd=dist)
    (built,) = dist.glob("warnonce_guard-*.whl")
    return built


def fresh_venv(folder: Path) -> Path:
    venv.EnvBuilder(with_pip=True).create(folder)
    return folder / "bin"


@pytest.fixture(scope="module")
def full(wheel: Path, tmp_path_factory: pytest.TempPathFactory, vllm_release: str) -> Path:
    """A venv with the guard environment, vLLM (no deps) and the wheel with its mutation extra."""
    bin_dir = fresh_venv(tmp_path_factory.mktemp("full") / "venv")
    pip = [bin_dir / "python", "-m", "pip", "install", "-q", "-c", CONSTRAINTS]
    run(*pip, "-r", ROOT / "requirements" / "guard-env.txt", cwd=ROOT)
    run(bin_dir / "python", "-m", "pip", "install", "-q", "--no-deps", f"vllm=={vllm_release}", cwd=ROOT)
    run(*pip, f"{wheel}[mutation]", cwd=ROOT)
    return bin_dir


@pytest.fixture(scope="module")
def base(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with the wheel and nothing but what it requires itself (pytest): strict mode and the audit."""
    bin_dir = fresh_venv(tmp_path_factory.mktemp("base") / "venv")
    run(bin_dir / "python", "-m", "pip", "install", "-q", "-c", CONSTRAINTS, wheel, cwd=ROOT)
    return bin_dir


def test_the_wheel_installs_one_distinctive_top_level_package_with_its_data(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"warnonce_guard", wheel.name.split("-py3")[0] + ".dist-info"}
    vendor = "warnonce_guard/mutations/report/vendor/"
    assert {f"{vendor}{f}" for f in ("mutation-test-elements.js", "LICENSE", "VENDOR.json")} <= set(names)
    assert "warnonce_guard/guards/conftest.py" in names and "warnonce_guard/mutations/engine/session.py" in names


def test_the_main_job_runs_from_the_wheel_outside_the_checkout(full: Path, tmp_path: Path, vllm_release: str) -> None:
    where = run(full / "python", "-c", "import warnonce_guard.mutations as m; print(m.__file__)", cwd=tmp_path)
    assert str(ROOT) not in where.stdout and str(full.parent) in where.stdout

    done = run(full / "warnonce-guard", "mutate", cwd=tmp_path)

    report = json.loads((tmp_path / "mutation-report" / "mutation.json").read_text(encoding="utf-8"))
    statuses = [m["status"] for f in report["files"].values() for m in f["mutants"]]
    assert report["config"]["vllmVersion"] == vllm_release and statuses and set(statuses) == {"Killed"}
    assert "Mutation score: 100.00%" in done.stdout
    assert (tmp_path / "mutation-report" / "index.html").stat().st_size > 200_000  # the viewer, inlined


def test_strict_mode_and_the_audit_need_only_pytest(base: Path, tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "tree", INTERFACE.replace('%s", repr(e)', '%r", e'))
    audited = run(base / "warnonce-guard", "audit", tree / "vllm", cwd=tmp_path, check=False)
    assert audited.returncode == ExitCode.CHECK_FAILED and " WOG001 " in audited.stdout

    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    plugin = run(base / "python", "-m", "pytest", "--warnonce-strict", "-q", "test_x.py", cwd=tmp_path)
    assert "1 passed" in plugin.stdout

    needs = run(base / "warnonce-guard", "sites", "--vllm-src", tree, cwd=tmp_path, check=False)
    assert needs.returncode == ExitCode.ENVIRONMENT
    assert needs.stderr.strip().splitlines() == [
        "warnonce-guard: error: `warnonce-guard sites` needs libcst, part of the mutation extra: "
        "pip install 'libcst>=1.1' (or, in a checkout of warnonce-guard, pip install '.[mutation]')"
    ]
