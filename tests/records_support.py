"""Hand-made records of a mutation run, shared by the tests (a helper module: it holds no tests).

- Small `RunResult`s made inline, for the reports and the result store.
- What the engine's session writes into a workspace (`FakeSession`): mutmut's `.meta` files, the
  generation manifest and the guards' session records, written in this process with mutmut's own names
  for the mutants, so the verdict pipeline (`mutations.run`, `mutations.judge`) is specified without
  running mutmut or pytest.
"""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from warnonce_guard.common import processes
from warnonce_guard.guards.detectors import EXCEPTION_RETAINED, OWNER_PINNED
from warnonce_guard.guards.sessions import AGAIN, GuardRecord, GuardSession, Phase, RecordKind, write_session
from warnonce_guard.mutations import operators
from warnonce_guard.mutations.engine import confirm, layout, naming, state
from warnonce_guard.mutations.operators import anchors_of
from warnonce_guard.mutations.records import (
    CRASHED,
    EXPOSED,
    FLAKY,
    GUARDED,
    KILLED,
    NO_TESTS,
    SKIPPED,
    SURVIVED,
    TIMEOUT,
    UNREACHED,
    Location,
    MutantVerdict,
    OperatorInfo,
    RunInfo,
    RunResult,
    SiteBaseline,
)
from warnonce_guard.mutations.workspace import Workspace
from warnonce_guard.rule.site_row import Site

from tools import npm

CPU = "vllm/platforms/cpu.py"
CUDA = "vllm/platforms/cuda.py"
SOURCES = {
    CPU: """import logging

logger = logging.getLogger(__name__)


class CpuPlatform:
    def import_kernels(self):
        try:
            import vllm._C_AVX2  # noqa: F401
        except ImportError as e:
            logger.warning_once("Failed to import from vllm._C_AVX2: %s", repr(e))
""",
    CUDA: """import logging

logger = logging.getLogger(__name__)


class CudaPlatform:
    def import_kernels(self):
        try:
            import vllm._C  # noqa: F401
        except ImportError as e:
            logger.warning_once("Failed to import from vllm._C with %r", e)
""",
}
# The operators as a run's result lists them (mutations.fresh.collect_result), from the registry.
OPERATORS = [OperatorInfo(name, op.description) for name, op in operators.OPERATORS.items()]
OPS = [op.name for op in OPERATORS]


def guard_id(site: Site) -> str:
    return f"guards/test_guards.py::test_site_is_guarded[{site.id}]"


def make_site(file: str, qualname: str, kernel: str) -> Site:
    line, text = next((i, text) for i, text in enumerate(SOURCES[file].splitlines(), 1) if "warning_once" in text)
    return Site(
        file=file,
        module=file.removesuffix(".py").replace("/", "."),
        qualname=qualname,
        kernel_module=kernel,
        line=line,
        end_line=line,
        column=text.index("logger"),
        end_column=len(text),
        import_line=line - 2,
        log_method="warning_once",
        form="eager",
        exc_name="e",
        message=None,
        message_source="MESSAGE",
        args=("e",),
        exc_arg_index=0,
        receiver="logger",
    )


CPU_SITE = make_site(CPU, "CpuPlatform.import_kernels", "vllm._C_AVX2")
CUDA_SITE = make_site(CUDA, "CudaPlatform.import_kernels", "vllm._C")


def located(site: Site, text: str) -> Location:
    """Where `text` sits on the site's line, 1-based with an exclusive end."""
    column = SOURCES[site.file].splitlines()[site.line - 1].index(text) + 1
    return Location(site.line, column, site.line, column + len(text))


def verdict(site: Site, index: int, operator: str, status: str, **extra: object) -> MutantVerdict:
    original = "repr(e)" if site is CPU_SITE else "e"
    fields: dict[str, object] = {
        "mutant_id": f"{site.module}.xǁ{site.qualname.replace('.', 'ǁ')}__mutmut_{index}",
        "site": site,
        "operator": operator,
        "status": status,
        "location": located(site, original),
        "original": original,
        "replacement": "e" if site is CPU_SITE else "str(e)",
        "covered_by": () if status in (SKIPPED, NO_TESTS) else (guard_id(site),),
        "duration_s": None if status in (SKIPPED, NO_TESTS) else 1.25,
    }
    if status == KILLED:
        fields.update(killed_by=guard_id(site), detectors=(EXCEPTION_RETAINED,), reason="the exception is retained")
    fields.update(extra)
    return MutantVerdict(**fields)  # type: ignore[arg-type]


def sample_result() -> RunResult:
    """2 sites, mutants of the first 3 operators: on the guarded cpu site one mutant is killed, one survives, one
    times out; the cuda site is exposed at baseline, so its three mutants are skipped."""
    return RunResult(
        vllm_version="0.33.0",
        vllm_commit="0123456789abcdef0123456789abcdef01234567",
        target="vllm==0.33.0 from PyPI",
        sources=dict(SOURCES),
        operators=list(OPERATORS),
        baselines=[
            SiteBaseline(CPU_SITE, GUARDED, guard_id(CPU_SITE)),
            SiteBaseline(
                CUDA_SITE,
                EXPOSED,
                guard_id(CUDA_SITE),
                detectors=(EXCEPTION_RETAINED, OWNER_PINNED),
                detail="ImportError kept alive by warning_once's lru_cache",
            ),
        ],
        mutants=[
            verdict(CPU_SITE, 1, OPS[0], KILLED),
            verdict(CPU_SITE, 2, OPS[1], SURVIVED, reason="every detector stayed quiet"),
            verdict(CPU_SITE, 3, OPS[2], TIMEOUT, reason="no result after 20 s"),
            *(
                verdict(CUDA_SITE, i + 1, op, SKIPPED, reason="site exposed at baseline")
                for i, op in enumerate(OPS[:3])
            ),
        ],
        duration_s=12.5,
    )


# Which runs wrote a result: a run (RUN), and a later one that reused its verdicts (RERUN).
RUN = RunInfo("0f1e2d3c4b5a69788796a5b4c3d2e1f0", "2026-05-01T12:34:56Z", "1.2.3")
RERUN = RunInfo("aaaabbbbccccddddeeeeffff00001111", "2026-05-02T08:00:00Z", "1.2.3")


def run_result(run: RunInfo = RUN, verdicts_from: RunInfo | None = None) -> RunResult:
    """`sample_result` as written by `run` (reusing the verdicts of `verdicts_from`, if given)."""
    result = sample_result()
    result.run, result.verdicts_from = run, verdicts_from
    return result


def every_status_result() -> RunResult:
    """One mutant of every status on the cpu site; the cuda site is unreached."""
    statuses = (KILLED, SURVIVED, TIMEOUT, CRASHED, NO_TESTS, SKIPPED, FLAKY)
    return RunResult(
        vllm_version="0.33.0",
        vllm_commit=None,
        target="/src/vllm",
        sources=dict(SOURCES),
        operators=list(OPERATORS),
        baselines=[
            SiteBaseline(CPU_SITE, GUARDED, guard_id(CPU_SITE)),
            SiteBaseline(CUDA_SITE, UNREACHED, guard_id(CUDA_SITE), detail="no CUDA device to steer to"),
        ],
        mutants=[verdict(CPU_SITE, i, OPS[i % 3], status) for i, status in enumerate(statuses)],
        flaky={"tests/test_x.py::test_flaky": "passed when re-run on a mutant"},
    )


@functools.cache
def npm_prefix() -> Path:
    """The pinned npm packages, installed once per test session with the project's own helper (needs npm)."""
    import shutil

    if shutil.which("npm") is None:
        pytest.skip("npm is not on PATH: the vendored files cannot be compared with the pinned packages")
    return npm.install(npm.DEFAULT_PREFIX)


# --- what the engine's session leaves in a workspace ------------------------------------------------------

GUARD_TEST = "guard_tests/test_kernel_import_sites.py::test_site_releases_exception_and_warns_once"


def guard_test(site: Site) -> str:
    """The node id of a site's guard, as the guards' conftest records it."""
    return f"{GUARD_TEST}[{site.id}]"


def meta_document(codes: dict[str, int | None], duration_s: float = 0.5) -> dict[str, object]:
    """A mutmut 3.8.1 `.meta` document: an exit code per mutant (None: not tested yet), a duration per tested one."""
    return {
        "exit_code_by_key": codes,
        "hash_by_function_name": {},
        "type_check_error_by_key": {},
        "durations_by_key": {k: duration_s for k, v in codes.items() if v is not None},
        "estimated_durations_by_key": {},
    }


def generated(ws: Workspace, file: str, codes: dict[str, int | None], run_id: str = "run1") -> Workspace:
    """`ws` as a finished generation of `file` leaves it: the pristine file, mutmut's copy of it, its `.meta` with
    `codes` (`meta_document`) and the generation manifest of `run_id`."""
    (ws.dir / file).parent.mkdir(parents=True, exist_ok=True)
    (ws.dir / file).write_text("def f(): pass\n", encoding="utf-8")
    layout.mutated(ws, file).parent.mkdir(parents=True, exist_ok=True)
    layout.mutated(ws, file).write_text("# mutants\n", encoding="utf-8")
    layout.meta(ws, file).write_text(json.dumps(meta_document(codes)), encoding="utf-8")
    state.write_generation(ws, run_id, [file])
    return ws


def passed(site: Site) -> GuardRecord:
    return GuardRecord(guard_test(site), site.id, "call", RecordKind.PASSED)


def leaked(site: Site, *detectors: str) -> GuardRecord:
    fired = detectors or (EXCEPTION_RETAINED,)
    return GuardRecord(guard_test(site), site.id, "call", RecordKind.LEAK, fired, f"{site.id}: {len(fired)} fired")


# A mutant's outcome in a FakeSession:
KILLS = "killed"  # exit code 1, and a finished guard session in which a detector fired
SURVIVES = "survived"  # exit code 0, and a finished guard session in which every guard passed
UNRECORDED = "unrecorded"  # an exit code, but no guard session (the session was killed before writing it)
UNTESTED = "untested"  # no exit code (mutmut stopped before it)
KILLED_ONCE = "killed once"  # its worker SIGKILLed (the OOM killer), code -9 kept, no ledger behind it
KILLED_TWICE = "killed twice"  # its worker SIGKILLed on two attempts in a row: code -9 and the ledger saying so


@dataclass
class FakeSession:
    """Stands in for `mutations.engine.launch.start_session`: the session's effects on the workspace, without mutmut.

    Like the real session it waits for `tell_to_mutate` (the files to mutate), reads the staged workspace (sites.json,
    packages.json, the staged site files) and names the mutants with mutmut's generator and our operators
    (`engine.naming`). Its process has generated when first polled after `tell_to_mutate`: mutmut's mutants file and
    `.meta` per site file, then `generation.json`. When waited for, it writes the guards' baseline session, then tests
    every mutant without an exit code (as mutmut does: one already tested keeps its code), writing its exit code
    and guard session, and exits as mutmut would: 1 when the clean guards fail, else 0.
    """

    baseline: RecordKind = RecordKind.PASSED  # every site's guard on the unmutated code
    outcomes: dict[int, str] = field(default_factory=dict)  # mutant number (1-based, sorted names) -> outcome
    exit_code: int | None = None  # what the session exits with, if not what mutmut would
    generates: bool = True  # False: the session dies before generating
    then: Callable[[], None] | None = None  # runs when the mutants are tested (before the session exits)
    runs: list[str] = field(default_factory=list)  # the run id of every session told to go (started, it only waits)
    found: list[dict[str, int | None]] = field(default_factory=list)  # the exit codes each session started from
    started: list[Path] = field(default_factory=list)  # the work root of every session started

    def stop(self, session: Any) -> None:
        """`stop_group` and `launch.dismiss` for this fake's processes (any other is stopped as they stop it)."""
        if isinstance(session, FakeProcess):
            session.stopped = True
        else:
            processes.stop_group(session)

    def start(self, work_root: Path) -> FakeProcess:
        self.started.append(work_root)
        codes: dict[str, dict[str, int | None]] = {}
        told = FakePipe(lambda: self.runs.append(told.run_id()))
        return FakeProcess(
            told,
            lambda: self._generate(told.workspace(), told.run_id(), told.files(), codes),
            lambda: self._test(told.workspace(), told.run_id(), told.files(), codes),
        )

    def _generate(self, ws: Workspace, run_id: str, files: list[str], codes: dict[str, dict[str, int | None]]) -> None:
        earlier = {f: state.read_meta(ws, f).exit_codes for f in files if layout.meta(ws, f).exists()}
        self.found.append({name: code for file_codes in earlier.values() for name, code in file_codes.items()})
        if not self.generates:
            return
        sites, packages = _staged(ws)
        with naming.settings(ws.dir):
            for file in files:
                source = (ws.dir / file).read_text(encoding="utf-8")
                _, generated = naming.generate(file, source, packages, anchors_of(sites))
                codes[file] = {g.mutant_id: earlier.get(file, {}).get(g.mutant_id) for g in generated}
                layout.mutated(ws, file).parent.mkdir(parents=True, exist_ok=True)
                layout.mutated(ws, file).write_text(f"# mutmut's mutants of {file}\n", encoding="utf-8")
                _save_meta(ws, file, codes[file])
        state.write_generation(ws, run_id, files)

    def _test(self, ws: Workspace, run_id: str, files: list[str], codes: dict[str, dict[str, int | None]]) -> int:
        if not self.generates:
            return 1 if self.exit_code is None else self.exit_code
        sites, _ = _staged(ws)
        guarded = [site for site in sites if site.guarded and site.file in files]
        clean = self.baseline is RecordKind.PASSED
        records = tuple(passed(s) if clean else leaked(s) for s in guarded)
        write_session(ws.attribution, GuardSession(run_id, Phase.BASELINE, "", 0 if clean else 1, records))
        names = sorted(name for file_codes in codes.values() for name in file_codes)
        for file, file_codes in codes.items() if clean else ():
            for name in [n for n, code in file_codes.items() if code is None]:
                outcome = self.outcomes.get(names.index(name) + 1, KILLS)
                if outcome == UNTESTED:
                    continue
                if outcome in (KILLED_ONCE, KILLED_TWICE):
                    file_codes[name] = -9
                    if outcome == KILLED_TWICE:
                        from warnonce_guard.mutations.engine import attempts

                        ledger = attempts.read(ws.attempts_file)
                        attempts.write(ws.attempts_file, ledger | {name: (-9, -9)})
                    continue
                killed = outcome != SURVIVES
                file_codes[name] = int(killed)
                if outcome != UNRECORDED:
                    records = tuple(leaked(s) if killed else passed(s) for s in guarded if s.file == file)
                    again = tuple(replace(r, phase=AGAIN) for r in records if r.kind is RecordKind.LEAK)
                    write_session(
                        ws.attribution, GuardSession(run_id, Phase.MUTANT, name, int(killed), records + again)
                    )
            _save_meta(ws, file, file_codes)
        confirm.confirm(ws, lambda mutant, tests: 1, 1, suite=False)  # the guards drove their sites again
        if self.then is not None:
            self.then()
        if self.exit_code is not None:
            return self.exit_code
        return 0 if clean else 1


def _staged(ws: Workspace) -> tuple[list[Site], list[str]]:
    """What staging left for the session: the sites and the staged packages' names."""
    sites = [Site.from_json(item) for item in json.loads(ws.sites_file.read_text(encoding="utf-8"))]
    return sites, sorted(json.loads(ws.packages_file.read_text(encoding="utf-8")))


def _save_meta(ws: Workspace, file: str, codes: dict[str, int | None]) -> None:
    state.write_atomic(layout.meta(ws, file), json.dumps(meta_document(codes)))


class FakePipe:
    """The session's stdin: what `launch.assign` writes (its workspace and run, a JSON object), then `tell_to_mutate`
    (the files to mutate, a JSON list); `told` runs once both came."""

    def __init__(self, told: Callable[[], None]) -> None:
        self.lines: list[bytes] = []
        self._told = told

    def write(self, data: bytes) -> None:
        self.lines += data.splitlines()
        if self.told:
            self._told()

    closed = False

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    @property
    def told(self) -> bool:
        return len(self.lines) == 2

    def workspace(self) -> Workspace:
        return Workspace(Path(json.loads(self.lines[0])["workspace"]))

    def run_id(self) -> str:
        return str(json.loads(self.lines[0])["run"])

    def files(self) -> list[str]:
        return json.loads(self.lines[1])


class FakeProcess:
    """The session's process: it waits for its workspace (`launch.assign`), then for `tell_to_mutate`; when first
    polled after that it has generated and still runs; once waited for (or polled again) it has tested the mutants
    and ended. Its stdin closed before `tell_to_mutate`, it has ended (130), as the real one does; stopped
    (`FakeSession.stop`, standing in for `stop_group` and `launch.dismiss`), it has ended as SIGTERM ends it.

    It has no `pid`: only `FakeSession.stop` stops it; and no output of its own before it takes the workspace's log
    (`early_output`).
    """

    early_output = None

    def __init__(self, stdin: FakePipe, generate: Callable[[], None], test: Callable[[], int]) -> None:
        self.stdin = stdin
        self._generate: Callable[[], None] | None = generate
        self._test = test
        self.returncode: int | None = None
        self.stopped = False

    def _step(self) -> None:
        if self.returncode is not None:
            return
        if self.stopped:
            self.returncode = -15
        elif not self.stdin.told:
            self.returncode = 130 if self.stdin.closed else None
        elif self._generate is not None:
            generate, self._generate = self._generate, None
            generate()
        else:
            self.returncode = -9  # should the work raise, the process is gone
            self.returncode = self._test()

    def poll(self) -> int | None:
        self._step()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        while self.returncode is None:
            if not self.stdin.told and not self.stdin.closed and not self.stopped:
                raise subprocess.TimeoutExpired("the fake session", timeout or 0)  # it waits for the run
            self._step()
        return self.returncode
