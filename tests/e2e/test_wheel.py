"""The package as users get it: a wheel, installed into fresh venvs, run outside the checkout.

Marked `wheel` (and `network`: it installs from the package index): `nox -s wheel` runs `-m wheel --vllm-release X`,
X the vLLM version to install beside it; every other tier deselects these tests, which build a wheel (from its sdist,
as tools/release.py builds a release; `--wheel FILE` tests one built already, as release.yml does) and two venvs: one
with pytest alone, one standing in for vLLM's CPU test image (torch, vLLM), into which the Buildkite steps' install
line puts the wheel.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
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
BUILDKITE = ROOT / ".buildkite" / "mutation-guard.yml"
SPEC = "WARNONCE_GUARD_SPEC"

pytestmark = [pytest.mark.slow, pytest.mark.long, pytest.mark.wheel, pytest.mark.network]


def run(*args: str | Path, cwd: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}, **layout.QUICK_PIP}
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


def vllm_lock(vllm_release: str) -> Path:
    """vLLM's CPU test lock (tests/data): the release's, or the newest kept."""
    exact = layout.DATA / f"vllm-{vllm_release}-cpu-test-lock.txt"
    locks = sorted(
        layout.DATA.glob("vllm-*-cpu-test-lock.txt"), key=lambda p: [int(n) for n in p.name.split("-")[1].split(".")]
    )
    return exact if exact.is_file() else locks[-1]


def guards_step() -> list[str]:
    """The Buildkite guards step's commands as its agent runs them: Buildkite's `$$` unescaped."""
    steps = yaml.safe_load(BUILDKITE.read_text(encoding="utf-8"))["steps"]
    (step,) = [step for step in steps if step["key"] == "warnonce-guard-guards"]
    return [command.replace("$$", "$") for command in step["commands"]]


def buildkite(image: Path, commands: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Commands run as Buildkite's agent runs a step's, one `bash -e` script, with the image's python3 first on PATH."""
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", SPEC)}
    clean["PATH"] = os.pathsep.join([str(image), clean["PATH"]])
    clean.update(layout.QUICK_PIP)
    bash = ["bash", "-e", "-c", "\n".join(commands)]
    return subprocess.run(bash, cwd=cwd, env={**clean, **env}, capture_output=True, text=True, check=False)


def uninstall_what_the_step_installs(image: Path) -> None:
    """Back to the image as vLLM's is: without warnonce-guard and the packages its install line adds to the lock."""
    install = guards_step()[0]
    step_installs = [pin.split("==")[0] for pin in install.split('}" ', 1)[1].split()]
    run(image / "python", "-m", "pip", "uninstall", "-q", "-y", "warnonce-guard", *step_installs, cwd=ROOT)


@pytest.fixture(scope="module")
def image(wheel: Path, tmp_path_factory: pytest.TempPathFactory, vllm_release: str) -> Path:
    """A stand-in for vLLM's CPU test image: torch and vLLM (no deps), and every dependency of the mutation extra at
    the versions of vLLM's CPU test lock; not warnonce-guard, nor what the Buildkite steps install beside it."""
    bin_dir = layout.fresh_venv(tmp_path_factory.mktemp("image") / "venv")
    pip = [bin_dir / "python", "-m", "pip"]
    run(*pip, "install", "-q", "-c", CONSTRAINTS, "-r", ROOT / "requirements" / "guard-env.txt", cwd=ROOT)
    run(*pip, "install", "-q", "--no-deps", f"vllm=={vllm_release}", cwd=ROOT)
    run(*pip, "install", "-q", "-c", vllm_lock(vllm_release), f"{wheel}[mutation]", cwd=ROOT)
    uninstall_what_the_step_installs(bin_dir)
    return bin_dir


@pytest.fixture
def full(image: Path, wheel: Path, tmp_path: Path) -> Path:
    """The image after the Buildkite steps' install line, WARNONCE_GUARD_SPEC the wheel: the wheel and what its extra
    adds to vLLM's lock, beside the lock's versions of the rest, where vLLM's CI runs the guards and the main job."""
    if not (image / "warnonce-guard").is_file():
        installed = buildkite(image, guards_step()[:1], tmp_path, **{SPEC: str(wheel)})
        assert installed.returncode == 0, installed.stdout[-3000:] + installed.stderr[-3000:]
    return image


@pytest.fixture(scope="module")
def base(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with the wheel and nothing but what it requires itself (pytest): strict mode and the audit."""
    bin_dir = layout.fresh_venv(tmp_path_factory.mktemp("base") / "venv")
    run(bin_dir / "python", "-m", "pip", "install", "-q", "-c", CONSTRAINTS, wheel, cwd=ROOT)
    return bin_dir


def test_the_wheel_installs_one_distinctive_top_level_package_with_its_data(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"warnonce_guard", wheel.name.split("-py3")[0] + ".dist-info"}
    vendor = "warnonce_guard/mutations/report/vendor/"
    assert {f"{vendor}{f}" for f in ("mutation-test-elements.js", "LICENSE", "VENDOR.json")} <= set(names)
    assert "warnonce_guard/guards/conftest.py" in names and "warnonce_guard/mutations/engine/session.py" in names
    # the project's own license, setup.cfg's Apache-2.0, travels with the wheel
    license_text = zipfile.ZipFile(wheel).read(wheel.name.split("-py3")[0] + ".dist-info/licenses/LICENSE").decode()
    assert "Apache License" in license_text and "Version 2.0" in license_text


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


def test_the_buildkite_guards_step_runs_as_vllms_cpu_image_runs_it(
    image: Path, wheel: Path, tmp_path: Path, vllm_release: str
) -> None:
    """In /vllm-workspace's place: unset, the variable is named in one line and nothing is installed; set to the built
    wheel, the step installs it and the guards pass."""
    uninstall_what_the_step_installs(image)  # whatever the tests before it installed
    workspace = tmp_path / "vllm-workspace"
    (workspace / ".buildkite").mkdir(parents=True)
    record = sites_record(vllm_release)
    (workspace / ".buildkite" / "warnonce_guard_sites.json").write_bytes(record.read_bytes())

    unset = buildkite(image, guards_step(), workspace)
    assert unset.returncode != 0 and unset.stdout == "" and not (image / "warnonce-guard").exists()
    (line,) = unset.stderr.splitlines()
    assert f"{SPEC}: set it to what pip installs warnonce-guard from" in line

    done = buildkite(image, guards_step(), workspace, **{SPEC: str(wheel)})
    sites = json.loads(record.read_text(encoding="utf-8"))["sites"]
    passed = re.search(rf"^{len(sites)} passed in ", done.stdout, re.MULTILINE)
    assert done.returncode == 0 and passed, done.stdout[-3000:] + done.stderr[-3000:]
    assert (image / "warnonce-guard").is_file()
