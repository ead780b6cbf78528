"""What users install fits their environments: ranges, an extra for the mutation run, and vLLM's own lock.

Resolves with pip (metadata only, `--dry-run`) against the package index (PyPI): marked `slow` and `network`.
tests/data/vllm-0.33.0-cpu-test-lock.txt is vLLM 0.33.0's `requirements/test/cpu.txt`, unchanged.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests import layout

ROOT = layout.ROOT
VLLM_LOCK = layout.DATA / "vllm-0.33.0-cpu-test-lock.txt"
BUILDKITE = ROOT / ".buildkite" / "mutation-guard.yml"
PYTEST_DEPENDENCIES = {"warnonce-guard", "pytest", "iniconfig", "packaging", "pluggy", "pygments"}

pytestmark = [pytest.mark.slow, pytest.mark.network]


def normal(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def resolve(requirement: str, tmp_path: Path) -> dict[str, str]:
    """What pip would install for `requirement` with vLLM's CPU test lock as constraints: name -> version."""
    report = tmp_path / "report.json"
    pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet"]
    done = subprocess.run(
        [*pip, "--report", str(report), "-c", str(VLLM_LOCK), requirement],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {normal(i["metadata"]["name"]): i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}


def lock() -> dict[str, str]:
    pins = (line.split("==", 1) for line in VLLM_LOCK.read_text().splitlines() if re.match(r"[A-Za-z0-9]", line))
    return {normal(name): version.split()[0] for name, version in pins}


def locked(name: str) -> str:
    return lock()[normal(name)]


def test_the_base_install_is_pytest_alone_at_vllms_locked_versions(tmp_path: Path) -> None:
    resolved = resolve(str(ROOT), tmp_path)
    assert set(resolved) == PYTEST_DEPENDENCIES  # strict mode and the audit: nothing else
    assert all(resolved[name] == locked(name) for name in PYTEST_DEPENDENCIES - {"warnonce-guard"})


@pytest.fixture(scope="module")
def with_the_extra(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """What pip would install for the mutation extra beside vLLM's lock (resolved once: two tests read it)."""
    return resolve(f"{ROOT}[mutation]", tmp_path_factory.mktemp("extra"))


def test_the_mutation_extra_resolves_beside_vllms_lock_without_moving_a_pin(with_the_extra: dict[str, str]) -> None:
    resolved = with_the_extra
    for name in ("pytest", "pluggy", "rich", "coverage"):
        assert resolved[name] == locked(name), name
    assert resolved["mutmut"] == "3.8.1"


def test_the_buildkite_steps_install_exactly_what_the_extra_adds_to_vllms_lock(with_the_extra: dict[str, str]) -> None:
    """warnonce-guard itself from what WARNONCE_GUARD_SPEC names (tests/checkout/test_ci_files.py runs that), then
    every package the extra adds to vLLM's lock, at the versions it resolves to there."""
    resolved = with_the_extra
    pinned = lock()
    added = {f"{name}=={version}" for name, version in resolved.items() if pinned.get(name) != version}
    assert "warnonce-guard==" + resolved["warnonce-guard"] in added
    steps = yaml.safe_load(BUILDKITE.read_text(encoding="utf-8"))["steps"]
    installs = [c for step in steps for c in step["commands"] if c.startswith("python3 -m pip install --no-deps ")]
    assert len(installs) == len(steps)
    for command in installs:
        spec, rest = command.removeprefix("python3 -m pip install --no-deps ").split('}" ', 1)
        assert spec.startswith('"$${WARNONCE_GUARD_SPEC:?')
        pins = {normal(p.split("==")[0]) + "==" + p.split("==")[1] for p in rest.split()}
        assert pins == {pin for pin in added if not pin.startswith("warnonce-guard==")}
