"""The committed export (docs/upstream/) run as vLLM's CI would run it, against the installed vLLM and copies of it:
kernels missing (CPU) or built and imported (GPU), sys.modules left as found, a seventh site, the bug put back; and,
reading PyPI, its patch applied to vLLM 0.33.0's sdist as a git checkout. Each run imports torch and vLLM."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from warnonce_guard.common.errors import ExitCode
from warnonce_guard.upstream.export import listed_cases
from warnonce_guard.upstream.render import PATH
from warnonce_guard.upstream.words import LEAKS

from tests.exported_support import (
    COMMITTED,
    RUFF,
    add_seventh_site,
    export,
    failure_lines,
    made_leaky,
    run_exported,
    vllm_copy,
)

pytestmark = [pytest.mark.slow, pytest.mark.long]

TEXT = COMMITTED.read_text(encoding="utf-8")
KERNELS = (
    "vllm._C",
    "vllm._C_AVX512",
    "vllm._C_AVX2",
    "vllm._C_stable_libtorch",
    "vllm._moe_C_stable_libtorch",
    "vllm._qutlass_C",
)
# Beside the exported module: around the session, what sys.modules (and the `vllm` package's attributes for the
# kernel modules) hold before and after, written to report.json. With BUILT, every kernel module is first put there
# as vLLM's GPU CI has it, built and imported (a module object in sys.modules and on the package), and the platform
# modules imported with them.
SYS_MODULES_KEPT = f"""
import importlib
import json
import sys
import types
from pathlib import Path

import pytest

KERNELS = {KERNELS!r}
BUILT = BUILT_FLAG


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop(session):
    import vllm

    if BUILT:
        for name in KERNELS:
            sys.modules[name] = module = types.ModuleType(name)
            setattr(vllm, name.rpartition(".")[2], module)
        for name in ("interface", "cpu", "cuda"):
            importlib.import_module(f"vllm.platforms.{{name}}")
    modules = dict(sys.modules)
    attributes = {{name: getattr(vllm, name.rpartition(".")[2], None) for name in KERNELS}}
    yield
    report = {{
        "changed": sorted(n for n in modules if sys.modules.get(n) is not modules[n]),
        "added": sorted(set(sys.modules) - set(modules)),
        "attributes": sorted(
            n for n in KERNELS if getattr(vllm, n.rpartition(".")[2], None) is not attributes[n]
        ),
        "fakes": sorted(n for n in KERNELS if isinstance(sys.modules.get(n), types.ModuleType)),
    }}
    Path("report.json").write_text(json.dumps(report))
"""


@pytest.mark.parametrize("built", [False, True], ids=["kernels-missing", "kernels-built-and-imported"])
def test_the_export_passes_alone_and_leaves_sys_modules_as_it_found_them(built: bool, tmp_path: Path) -> None:
    conftest = SYS_MODULES_KEPT.replace("BUILT_FLAG", str(built))
    done = run_exported(TEXT, tmp_path, [], conftest=conftest)
    assert done.returncode == 0 and "6 passed" in done.stdout, done.stdout[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["changed"] == []  # every module there before is there after, the same object
    assert report["attributes"] == []
    assert not set(report["added"]) & set(KERNELS)  # a stand-in or a block leaves nothing behind
    assert report["fakes"] == (sorted(KERNELS) if built else [])


@pytest.fixture(scope="module")
def seven(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A copy of the installed vLLM with a seventh cached site in CpuPlatform.import_kernels, and its line."""
    tree = vllm_copy(tmp_path_factory.mktemp("seven"))
    return tree, add_seventh_site(tree)


def test_a_seventh_site_of_vllm_is_a_seventh_case_that_passes(seven: tuple[Path, int], tmp_path: Path) -> None:
    tree, line = seven
    done = export("--vllm-src", str(tree), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    cases = listed_cases(done.stdout)
    assert cases is not None and len(cases) == 7
    assert f"vllm/platforms/cpu.py:{line}" in [case.site for case in cases]
    ran = run_exported(done.stdout, tmp_path / "run", [tree])
    assert ran.returncode == 0 and "7 passed" in ran.stdout, ran.stdout[-3000:]


def test_check_of_the_committed_export_names_the_seventh_site(seven: tuple[Path, int], tmp_path: Path) -> None:
    tree, line = seven
    done = export("--vllm-src", str(tree), "--check", str(COMMITTED), cwd=tmp_path)
    assert done.returncode == ExitCode.CHECK_FAILED
    seventh = f"case cpu-CpuPlatform.import_kernels-vllm._C_extra is new (vllm/platforms/cpu.py:{line})"
    assert done.stdout == f"{COMMITTED}: {seventh}; re-export\n"
    fresh = export("--check", str(COMMITTED), cwd=tmp_path)  # the installed vLLM: six sites, as committed
    assert fresh.returncode == 0 and fresh.stdout == f"{COMMITTED}: up to date (6 cases)\n"


def test_with_the_bug_back_every_case_fails_naming_its_site_and_what_leaked(tmp_path: Path) -> None:
    tree = vllm_copy(tmp_path / "leaky")
    made_leaky(tree)
    done = run_exported(TEXT, tmp_path / "run", [tree])
    assert "6 failed" in done.stdout, done.stdout[-3000:]
    lines = failure_lines(done.stdout)
    for case in listed_cases(TEXT) or []:
        (line,) = [line for line in lines if f"AssertionError: {case.site}: " in line]
        assert ", ".join(LEAKS) in line  # exception retained, object pinned, warning repeated


@pytest.mark.network
def test_the_patch_applies_to_vllms_sdist_as_a_checkout_and_is_clean_there(tmp_path: Path) -> None:
    from warnonce_guard.history.fetch import copy_members, download

    from tools.vllm_tests import sources

    dist = sources.sdist()
    archive = tmp_path / dist.filename
    download(dist, archive)
    checkout = tmp_path / "vllm"
    copy_members(archive, "sdist", checkout, lambda path: True)
    patch = tmp_path / "export.patch"
    assert export("--patch", "--out", str(patch), cwd=tmp_path).returncode == 0
    git = ["git", "-c", "safe.directory=*", "-c", "user.email=t@t", "-c", "user.name=t"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "sdist"], ["apply", "--check", str(patch)]):
        subprocess.run([*git, *command], cwd=checkout, check=True, capture_output=True)
    subprocess.run([*git, "apply", "--index", str(patch)], cwd=checkout, check=True)
    assert (checkout / PATH).read_text(encoding="utf-8") == TEXT
    for command in (["check", "--no-cache"], ["format", "--check", "--no-cache"]):  # the sdist's own settings
        done = subprocess.run([str(RUFF), *command, PATH], cwd=checkout, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
