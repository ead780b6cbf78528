"""The package as users get it: a wheel, installed into fresh venvs, run outside the checkout.

Marked `wheel` (and `network`: it installs from the package index): `nox -s wheel` runs `-m wheel --vllm-release X`,
X the vLLM version to install beside it; every other tier deselects these tests, which build a wheel (from its sdist,
as tools/release.py builds a release; `--wheel FILE` tests one built already, as release.yml does) and three venvs,
and install torch and vLLM into two.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import venv
import zipfile
from pathlib import Path

import pytest
import yaml
from warnonce_guard.common.errors import ExitCode

from tests import layout
from tests.toy import INTERFACE, make_tree
from tools import release
from tools.release import artifact_version, package_version

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
def wheel(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """The wheel `--wheel` names (it must carry setup.cfg's version), or one built from a fresh sdist."""
    given = request.config.getoption("--wheel")
    if given:
        path = Path(given).resolve()
        assert path.is_file() and artifact_version(path) == package_version(), f"--wheel {given}"
        return path
    return release.build(tmp_path_factory.mktemp("dist")).wheel


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


def sites_record(vllm_release: str) -> Path:
    """The sites every run of vLLM X must find (expected-sites/, `nox -s guards` passes the same)."""
    record = ROOT / "expected-sites" / f"vllm-{vllm_release}.json"
    assert record.is_file(), f"no {record.relative_to(ROOT)}: write it with `warnonce-guard sites --write`"
    return record


def test_the_installed_wheel_prints_setup_cfgs_version(base: Path, tmp_path: Path) -> None:
    done = run(base / "warnonce-guard", "--version", cwd=tmp_path)
    assert done.stdout == f"warnonce-guard {package_version()}\n"


def test_the_guards_pass_from_the_wheel_outside_the_checkout(full: Path, tmp_path: Path, vllm_release: str) -> None:
    record = sites_record(vllm_release)
    sites = json.loads(record.read_text(encoding="utf-8"))["sites"]
    done = run(full / "warnonce-guard", "guards", "-q", "--expect-sites", record, cwd=tmp_path)
    assert re.search(rf"^{len(sites)} passed in ", done.stdout, re.MULTILINE), done.stdout[-2000:]


BUILDKITE = ROOT / ".buildkite" / "mutation-guard.yml"
SPEC = "WARNONCE_GUARD_SPEC"


def vllm_lock(vllm_release: str) -> Path:
    """vLLM's CPU test lock (tests/data): the release's, or the newest kept."""
    exact = layout.DATA / f"vllm-{vllm_release}-cpu-test-lock.txt"
    locks = sorted(
        layout.DATA.glob("vllm-*-cpu-test-lock.txt"), key=lambda p: [int(n) for n in p.name.split("-")[1].split(".")]
    )
    return exact if exact.is_file() else locks[-1]


def buildkite_step(key: str) -> list[str]:
    """A Buildkite step's commands as its agent runs them: Buildkite's `$$` unescaped, one script."""
    (step,) = [s for s in yaml.safe_load(BUILDKITE.read_text(encoding="utf-8"))["steps"] if s["key"] == key]
    return step["commands"]


@pytest.fixture(scope="module")
def image(wheel: Path, tmp_path_factory: pytest.TempPathFactory, vllm_release: str) -> Path:
    """A stand-in for vLLM's CPU test image: torch and vLLM, and every dependency of the mutation extra at the
    versions of vLLM's CPU test lock; not warnonce-guard, nor what the Buildkite steps install beside it."""
    bin_dir = fresh_venv(tmp_path_factory.mktemp("image") / "venv")
    pip = [bin_dir / "python", "-m", "pip"]
    run(*pip, "install", "-q", "-c", CONSTRAINTS, "-r", ROOT / "requirements" / "guard-env.txt", cwd=ROOT)
    run(*pip, "install", "-q", "--no-deps", f"vllm=={vllm_release}", cwd=ROOT)
    run(*pip, "install", "-q", "-c", vllm_lock(vllm_release), f"{wheel}[mutation]", cwd=ROOT)
    (install, _) = buildkite_step("warnonce-guard-guards")
    step_installs = [pin.split("==")[0] for pin in install.split('}" ', 1)[1].split()]
    run(*pip, "uninstall", "-q", "-y", "warnonce-guard", *step_installs, cwd=ROOT)
    return bin_dir


def test_the_buildkite_guards_step_runs_as_vllms_cpu_image_runs_it(
    image: Path, wheel: Path, tmp_path: Path, vllm_release: str
) -> None:
    """In /vllm-workspace's place, with the image's python3 first on PATH: unset, the variable is named in one line and
    nothing is installed; set to the built wheel, the step installs it and the guards pass."""
    workspace = tmp_path / "vllm-workspace"
    (workspace / ".buildkite").mkdir(parents=True)
    record = sites_record(vllm_release)
    (workspace / ".buildkite" / "warnonce_guard_sites.json").write_bytes(record.read_bytes())
    script = "\n".join(buildkite_step("warnonce-guard-guards")).replace("$$", "$")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", SPEC)}
    env["PATH"] = os.pathsep.join([str(image), env["PATH"]])

    def step(**more: str) -> subprocess.CompletedProcess[str]:
        bash = ["bash", "-e", "-c", script]
        return subprocess.run(bash, cwd=workspace, env={**env, **more}, capture_output=True, text=True, check=False)

    unset = step()
    assert unset.returncode != 0 and unset.stdout == "" and not (image / "warnonce-guard").exists()
    (line,) = unset.stderr.splitlines()
    assert f"{SPEC}: set it to what pip installs warnonce-guard from" in line

    done = step(**{SPEC: str(wheel)})
    sites = json.loads(record.read_text(encoding="utf-8"))["sites"]
    passed = re.search(rf"^{len(sites)} passed in ", done.stdout, re.MULTILINE)
    assert done.returncode == 0 and passed, done.stdout[-3000:] + done.stderr[-3000:]
    assert (image / "warnonce-guard").is_file()
