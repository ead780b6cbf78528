"""The mutmut run itself, in a process of its own: `python -m mutations.engine.session WORK_ROOT`, started by
`launch.start_session` as the command starts, given its workspace inside WORK_ROOT by `launch.assign` and told what
to mutate by `launch.tell_to_mutate` (docs/ARCHITECTURE.md, The mutation run)."""

from __future__ import annotations

import gc

if __name__ == "__main__":  # the session's own process: its imports, then torch's and vLLM's, run with Python's
    gc.disable()  # cycle collector off until `processes.collect_from_here` (in the generator, and before testing)

import contextlib
import functools
import importlib
import importlib.util
import json
import os
import platform
import signal
import sys
import traceback
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from warnonce_guard.common import protocol
from warnonce_guard.common.errors import BadRecord, ExitCode, GuardError, RecordsUnwritten, StagingFailed
from warnonce_guard.common.files import DISK_ERRORS, PERMISSION_ERRORS
from warnonce_guard.common.processes import bind_to_parent, collect_from_here, die_with_parent
from warnonce_guard.guards.sessions import UNWRITTEN_STATUS, baseline_sessions
from warnonce_guard.mutations.engine import collected, config, confirm, launch, naming, overlay, pristine, state
from warnonce_guard.mutations.engine.generation import InProcessPool
from warnonce_guard.mutations.engine.seam import (
    BASELINE_PHASES,
    MUTANT_MARK,
    MUTANT_VARIABLE,
    Generation,
    each_generation,
    forget_collected_tests,
    lean_generation,
    our_operators,
    patched_main,
    reached_functions,
    tests_run_in,
)
from warnonce_guard.mutations.engine.status import (
    ENGINE_FAILED,
    NOTHING_COLLECTED,
    PYTEST_NO_TESTS,
    SUITE_BROKEN,
    WRITE_REFUSED,
)
from warnonce_guard.mutations.engine.workers import Registrar
from warnonce_guard.mutations.operators import Anchors, anchors_of, site_lines
from warnonce_guard.mutations.suite import Suite, read_baseline, read_suite
from warnonce_guard.mutations.workspace import Workspace
from warnonce_guard.rule.site_row import Site
from warnonce_guard.rule.target import PACKAGE

# A write the work directory refused: the disk (full, over quota, read-only) or the folder (permissions, chattr +i)
REFUSED_WRITES = DISK_ERRORS | PERMISSION_ERRORS


# What importing mutmut.__main__ spends its time on, imported once before the generator's fork rather than in each
# child; not mutmut itself, which reads setup.cfg when imported, not yet written then.
ENGINE_IMPORTS = ("pytest", "coverage", "click", "rich.progress")
# What only generation uses of it: loaded on first use (about 0.3 s for libcst's matchers), in the generator while
# the run discovers the sites, and never in the process that imports the target and runs the mutants.
GENERATION_IMPORTS = ("libcst.matchers",)
# The generator yields the processor to this process's imports (torch, then vLLM: the run's critical path), which
# wait for nothing else; the mutants are done a second before mutmut's first run needs them. 6% off the full run's
# wall time, paired on this machine (farm-bench, median of 16).
GENERATOR_NICENESS = 10


def _warm_up(modules: Sequence[str]) -> None:
    """Import `modules` while the parent discovers the sites; one that fails to import here fails again where it
    is needed, which says so."""
    for name in modules:
        with contextlib.suppress(Exception):
            importlib.import_module(name)


class _OnFirstUse(types.ModuleType):
    """A module whose code runs when an attribute it does not hold yet is first read: its import binds it as is
    (the import system reads only `__spec__` and the like, set already), `m.matches(...)` then loads it in place.
    Loaded before any thread runs (`_loaded`, in the generator): a thread reading it while another loads it would
    find it empty. Code that fails leaves no module behind, as a failed import does: the next import raises again."""

    def __getattr__(self, attribute: str) -> Any:
        self.__class__ = types.ModuleType  # from here on, an ordinary module: its code runs once, in it
        spec = self.__spec__
        assert spec is not None and spec.loader is not None
        try:
            spec.loader.exec_module(self)
        except BaseException:
            sys.modules.pop(spec.name, None)
            parent, _, child = spec.name.rpartition(".")
            if parent and getattr(sys.modules.get(parent), child, None) is self:
                delattr(sys.modules[parent], child)
            raise
        return getattr(self, attribute)


def _deferred(modules: Sequence[str]) -> None:
    """Make each of `modules` (not imported yet) run its code on its first use rather than when imported: `import
    libcst.matchers as m` in mutmut binds it, `m.matches(...)` loads it. One that cannot be found is left to its
    importer, which says so."""
    for name in modules:
        if name in sys.modules:
            continue
        with contextlib.suppress(Exception):
            spec = importlib.util.find_spec(name)
            if spec is None or spec.loader is None:
                continue
            module = importlib.util.module_from_spec(spec)
            module.__class__ = _OnFirstUse
            sys.modules[name] = module
            parent, _, child = name.rpartition(".")
            if parent:
                setattr(sys.modules[parent], child, module)


def _loaded(modules: Sequence[str]) -> None:
    """Run the code of each of `modules` that `_deferred` left for its first use (in the process about to use it)."""
    for name in modules:
        with contextlib.suppress(Exception):
            getattr(importlib.import_module(name), "__warnonce_loaded__", None)


def _environment(
    ws: Workspace,
    run_id: str,
    packages: dict[str, Path],
    suite: Suite | None = None,
    rounds: int = 1,
    sites_file: Path | None = None,
) -> None:
    """Tell the guard sessions mutmut starts (in this process's environment) to record, on the target imported
    through the workspace (its site modules mutmut's copies), in mutmut's names; and which sites each function
    mutmut mutates holds (they run those first, see guards.conftest). A suite's sessions are told where its
    baseline goes (`suite_plugin`)."""
    protocol.tell_guards(
        os.environ,
        attribution=str(ws.attribution),
        run_id=run_id,
        mutant_variable=MUTANT_VARIABLE,
        baseline_phases=BASELINE_PHASES,
        mutant_mark=MUTANT_MARK,
        sites=str(sites_file or ws.sites_file),
        expect_vllm=str(packages[PACKAGE]),
        mutated=str(ws.mutants),
        evidence=False,  # verdicts and detectors only: no referrer chains (see guards.drive)
        suite_baseline=str(ws.suite_baseline) if suite is not None else None,
        confirm=rounds,  # a guard that kills a mutant drives its site again that often (guards.outcome.drive_again)
    )
    protocol.tell_site_functions(os.environ, naming.function_keys(_sites(ws)))


def staged_packages(ws: Workspace) -> dict[str, Path]:
    """Each staged package and the directory it is imported from (packages.json)."""
    return {name: Path(folder) for name, folder in json.loads(ws.packages_file.read_text(encoding="utf-8")).items()}


def record_generation(
    ws: Workspace, run_id: str, files: list[str], create_mutants: Callable[..., Any]
) -> Callable[..., Any]:
    """mutmut's `create_mutants`, writing `generation.json` once it has returned."""

    @functools.wraps(create_mutants)
    def recorded(*args: Any, **kwargs: Any) -> Any:
        stats = create_mutants(*args, **kwargs)
        state.write_generation(ws, run_id, files)
        return stats

    return recorded


def _sites(ws: Workspace) -> list[Site]:
    return [Site.from_json(data) for data in json.loads(ws.sites_file.read_text(encoding="utf-8"))]


def described_into(ws: Workspace, files: Sequence[str], packages: Sequence[str], anchors: Anchors) -> Generation:
    """What `seam.each_generation` calls with each file mutmut generates: the mutants of a site file are described
    into the workspace (`Workspace.made`), where the parent names them from."""

    def record(
        file: str, source: str, parsed: str, module: Any, mutations: Sequence[Any], where_is: Mapping[Any, Any]
    ) -> None:
        if file not in files:
            return
        try:
            ws.made(file).unlink(missing_ok=True)  # an earlier description never stands in for this one
            made = naming.describe(parsed, module, naming.named(file, module, mutations), where_is, packages, anchors)
            naming.write_made(ws.made(file), source, made)
        except Exception:  # the parent, finding no description, describes the file itself and says what fails
            return

    return record


def _mutmut(
    ws: Workspace,
    run_id: str,
    files: list[str],
    registrar: Registrar | None = None,
    suite: bool = False,
    guards: collected.Guards | None = None,
) -> Any:
    """mutmut's `__main__` as the session runs it (`seam.patched_main`): generation in this process
    (`engine.generation`), recorded (`generation.json`) once it returned; with `registrar`, each worker's result
    decided by it; for a `suite`, every pytest session forked from this process before any test ran
    (`engine.pristine`); else, with `guards`, the guards collected there once and each worker's run in that
    session (`engine.collected`)."""
    runner = None
    if suite:
        runner = pristine.fork_runner(ws.attribution, f"{PACKAGE}.logger")
    elif guards is not None:
        runner = collected.fork_runner(guards)
    return patched_main(
        InProcessPool,
        lambda create_mutants: record_generation(ws, run_id, files, create_mutants),
        registrar.wrap if registrar is not None else None,
        runner,
    )


def generate(ws: Workspace, run_id: str, packages: dict[str, Path], files: list[str]) -> None:
    """The first step of mutmut's `run`, on its own: copy the site files into mutants/ and make their mutants, with
    our operators, described as they are made; then record them; mutmut's `run` later finds them made."""
    mutmut_main = _mutmut(ws, run_id, files)
    sites = _sites(ws)
    anchors = anchors_of(sites)
    with (
        lean_generation(site_lines(sites)),
        our_operators(sorted(packages), anchors=anchors),
        each_generation(described_into(ws, files, sorted(packages), anchors)),
    ):
        mutmut_main.copy_src_dir()
        mutmut_main.create_mutants(os.cpu_count() or 4)  # as `run` does


def run_mutmut(
    ws: Workspace,
    run_id: str,
    packages: dict[str, Path],
    files: list[str],
    suite: Suite | None = None,
    rounds: int = 1,
) -> int:
    """mutmut's `run` with our operators, anchored on the workspace's sites, the target imported through the
    workspace, the tests run in the suite's folder (or the guards in mutants/), then once more on the mutants whose
    worker was killed or timed out, then each kill confirmed by `rounds` re-runs (`confirm_kills`); its exit code
    (mutmut exits 1 when the clean tests fail)."""
    from mutmut.runners.harness import BadTestExecutionCommandsException

    overlay.install(ws, packages, files)
    registrar = Registrar.load(ws, run_id)
    guards = collected.Guards() if suite is None else None
    mutmut_main = _mutmut(ws, run_id, files, registrar, suite is not None, guards)
    with (
        our_operators(sorted(packages), anchors=anchors_of(_sites(ws))),
        tests_run_in(suite.root if suite is not None else None),
        contextlib.closing(guards) if guards is not None else contextlib.nullcontext(),
    ):
        code = 0
        try:
            mutmut_main._run([], max_children=None)
            if again := registrar.take_again():  # once: a second abnormal attempt is kept as the verdict
                print(f"testing again {len(again)} mutant(s) whose worker was stopped, killed or timed out")
                mutmut_main._run(again, max_children=None)
        except SystemExit as stop:  # and a suite whose tests reach no mutated function: its failing tests re-run
            code = stop.code if isinstance(stop.code, int) else 1
        except (BadTestExecutionCommandsException, pristine.SessionCannotStart) as err:  # pytest exited 4: a
            if suite is None:  # conftest.py that fails, a bad option
                raise
            print(f"the suite's pytest session could not start (pytest's exit status 4): {err}", flush=True)
            return SUITE_BROKEN
        confirm_kills(ws, suite, rounds, guards)
    return code


def confirm_kills(ws: Workspace, suite: Suite | None, rounds: int, guards: collected.Guards | None = None) -> None:
    """Re-run the tests of every kill not confirmed yet, and a suite's failing tests that reached a mutated function,
    as mutmut runs a worker's (`engine.confirm`): in the guards' collected session when there is one, `rounds` times
    each."""
    from mutmut.mutation.trampoline import set_mutant_under_test
    from mutmut.runners.harness import PytestRunner

    runner = PytestRunner()

    def run_tests(mutant: str, tests: list[str]) -> int:
        set_mutant_under_test(mutant)
        code = guards.run(tests) if guards is not None else None
        return code if code is not None else int(runner.run_tests(mutant_name=mutant or None, tests=tests))

    failing = {}
    if suite is not None:
        with contextlib.suppress(BadRecord):
            baseline = read_baseline(ws.suite_baseline)
            failing = {test: why for test, why in baseline.failures.items() if test in baseline.reaching}
    confirm.confirm(ws, run_tests, rounds, suite is not None, failing, os.cpu_count() or 2)


def complete_baseline(ws: Workspace) -> int:
    """Run every guard once on the unmutated code, without stopping at the first failure.

    mutmut stops at the first failing guard when the target itself leaks (its stats and clean runs
    use `-x`), which would leave the other sites unjudged. vLLM is already imported in this process,
    so this costs only the guards themselves.
    """
    import pytest
    from mutmut.mutation.trampoline import set_mutant_under_test

    set_mutant_under_test("")
    os.chdir(ws.mutants)
    try:
        return int(pytest.main([ws.guard_tests.name, "-q", *config.GUARD_ARGS, "--tb=no"]))
    finally:
        os.chdir(ws.dir)


def exit_without_teardown(code: int) -> None:
    """Exit with `code` once the output is flushed, without tearing down what the guards imported: unloading vLLM
    and torch takes about a second, the last of the run's critical path, and every file is written by now."""
    _flush()
    os._exit(code)


def _flush() -> None:
    """This process's output written out, as far as its log takes it."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a log the disk refuses: the exit code still says what happened
            stream.flush()


def _generated(ws: Workspace, run_id: str, warm_up: Sequence[str]) -> int:
    """Generate the mutants in a child, which waits for `tell_to_mutate`, while this process imports `warm_up` and then,
    in a second child, the target package itself; the generator's exit code (0: generated). The child is forked once
    what mutmut imports is imported (`main`), before the rest. Returns in the process that runs mutmut next: the second
    child once it took over (it imported the target without reaching a site or kernel module, and said so), and this
    process then ends as that child does; else this process, which never imported the target."""
    pid = _fork()
    if pid == 0:
        with contextlib.suppress(OSError):
            os.nice(GENERATOR_NICENESS)  # it ends long before its mutants are needed: the imports come first
        _loaded(GENERATION_IMPORTS)  # while the run discovers the sites
        collect_from_here()  # what generation makes is collected, what was imported is not scanned
        files = launch.files_to_mutate()
        code = int(ExitCode.INTERRUPTED)
        if files is not None:
            code = _checked(ws, lambda: generate(ws, run_id, staged_packages(ws), files))
        exit_without_teardown(code)
    _processor_known()
    _warm_up(warm_up)
    (told, tell), (took_over, take_over) = os.pipe(), os.pipe()
    warmer = _fork()
    if warmer == 0:  # the target's import, while the mutants are generated
        os.close(tell)
        os.close(took_over)
        try:
            why = _not_warmed(ws)
            print(f"not imported while the mutants are generated: {why}" if why else f"{PACKAGE} imported", flush=True)
        except BaseException:  # whatever stopped it (a signal, SystemExit), this process may hold part of an import
            why = "the import was stopped"
        if why:
            # the parent goes on without this process (it reads only whether this one took over)
            exit_without_teardown(0)
        os.write(take_over, b"1")
        os.close(take_over)
        _take_the_end()
        with os.fdopen(told, "rb") as pipe:
            said = pipe.readline()
        return int(said) if said.strip() else int(ExitCode.INTERRUPTED)
    os.close(told)
    os.close(take_over)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if code < 0:
        died = f"the process generating mutants died (signal {-code}: killed, out of memory?); run again"
        code = _print_error(died, ENGINE_FAILED)
    with contextlib.suppress(BrokenPipeError), os.fdopen(tell, "wb") as pipe:
        pipe.write(f"{code}\n".encode())
    ended = os.waitstatus_to_exitcode(os.waitpid(warmer, 0)[1])
    with os.fdopen(took_over, "rb") as pipe:
        if not pipe.read():  # it ended (or was killed) before it took over: this process goes on
            return code
    if ended < 0:  # the session it became died of a signal: so does this process, as the parent sees it
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP keep their default
            signal.signal(-ended, signal.SIG_DFL)
        os.kill(os.getpid(), -ended)
    exit_without_teardown(ended if ended >= 0 else ENGINE_FAILED)


def _processor_known() -> None:
    """Ask Python's `platform` the processor now: it forks `uname -p` the first time (vLLM's platform detection asks,
    in the guards' first run), a fork that copies this process's page tables, far fewer before torch is imported
    (6 ms less on the run's critical path); the processes forked later inherit the answer."""
    with contextlib.suppress(Exception):
        platform.uname().processor  # noqa: B018 - a cached property: read to fill the cache


def _fork() -> int:
    """`os.fork`, with this process's output flushed first, so that the child does not write it again."""
    sys.stdout.flush()
    sys.stderr.flush()
    return os.fork()


def _not_warmed(ws: Workspace) -> str | None:
    """Import the target package (vLLM's `__init__`: most of what the guards import besides torch), refusing every
    module with a site and every kernel module, once the parent has staged the workspace: None once imported, else
    why not."""
    try:
        packages, sites = staged_packages(ws), _sites(ws)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "the workspace is not staged yet"
    return overlay.warm_import(ws, packages, {site.file for site in sites}, PACKAGE)


def _tested(ws: Workspace, run_id: str, rounds: int) -> int:
    """mutmut's `run` on what was generated, and the complete baseline when the clean guards failed (for a suite,
    what its stop means: `suite_stopped`)."""
    collect_from_here()  # the guards and the tests run with the collector on, as in any process
    packages, suite = staged_packages(ws), read_suite(ws.suite_file)
    _environment(ws, run_id, packages, suite, rounds)
    files = sorted(state.read_generation(ws)[1])
    code = run_mutmut(ws, run_id, packages, files, suite, rounds)
    if code != 0 and suite is not None:
        return suite_stopped(ws, files, code)
    if code != 0 and complete_baseline(ws) == UNWRITTEN_STATUS:  # mutmut's stats or clean run could not either
        raise RecordsUnwritten(f"the guards could not write their records in {ws.attribution}")
    if code != 0 and (guarded := _guarded_at_baseline(ws, run_id)):
        # The target leaks at some sites (their guards fail on the unmutated code, and mutmut stopped there): the
        # mutants are tested by the guards of the others, whose verdicts still stand (those sites' are skipped).
        ws.guarded_sites_file.write_text(json.dumps([site.to_json() for site in guarded]), encoding="utf-8")
        print(f"testing the mutants with the guards of the {len(guarded)} site(s) guarded at baseline", flush=True)
        _environment(ws, run_id, packages, suite, rounds, ws.guarded_sites_file)
        forget_collected_tests()  # the failing guards' among them, which the next sessions no longer hold
        code = run_mutmut(ws, run_id, packages, files, suite, rounds)
    return code


def _guarded_at_baseline(ws: Workspace, run_id: str) -> list[Site]:
    """The sites whose guard passed on the unmutated code when some other one failed there (none when every
    guard failed, or none did)."""
    failed = {r.site for s in baseline_sessions(ws.attribution, run_id) for r in s.records if r.failed}
    every = [site for site in _sites(ws) if site.guarded]
    guarded = [site for site in every if site.id not in failed]
    return guarded if failed and len(guarded) < len(every) else []


def suite_stopped(ws: Workspace, files: list[str], code: int) -> int:
    """What mutmut's stop with `code` means for a suite, as the session's exit code: no test collected on the
    unmutated code is `NOTHING_COLLECTED`, a collection that failed `SUITE_BROKEN`; tests that reach no mutated
    function (mutmut stops before the mutants) make every mutant untested, as mutmut's own loop records one (0);
    anything else is mutmut's code."""
    try:
        baseline = read_baseline(ws.suite_baseline)
    except BadRecord:  # mutmut stopped before its stats session ended
        return code
    if baseline.status not in (0, 1, PYTEST_NO_TESTS):
        return SUITE_BROKEN
    if not baseline.collected:
        return NOTHING_COLLECTED
    if not reached_functions():
        state.mark_untested(ws, files)
        return 0
    return code


def main(argv: list[str]) -> int:
    """The session of a run in `argv[0]` (its work root: named so that a session left running is found by it); what
    it works on comes from the run (`launch.assignment`)."""
    bind_to_parent()
    os.register_at_fork(after_in_child=die_with_parent)  # the generator and mutmut's workers die with this process
    _deferred(GENERATION_IMPORTS)
    _warm_up(ENGINE_IMPORTS)  # while the run checks its paths and fingerprints the target
    given = launch.assignment()
    if given is None:  # the run needed no session (its verdicts stood), or ended before it knew its workspace
        return int(ExitCode.INTERRUPTED)
    ws = Workspace(given.workspace.resolve())
    _take_log(ws)
    os.chdir(ws.dir)
    generated = _generated(ws, given.run_id, given.warm_up)
    if generated != 0:  # the generator said why, or was told nothing (the run ended before staging)
        return generated
    return _checked(ws, lambda: _tested(ws, given.run_id, given.rounds))


def _take_log(ws: Workspace) -> None:
    """From here on, this process's output and its children's go to the end of the workspace's log, after what it
    said before (its output's file until then, `launch.start_session`, left empty: the run keeps only what a session
    that never got here said)."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    with ws.log_file.open("ab") as log:
        with contextlib.suppress(OSError):  # not a file (a terminal, a pipe: started by hand): nothing to copy
            os.lseek(1, 0, os.SEEK_SET)
            while chunk := os.read(1, 1 << 16):
                log.write(chunk)
            os.ftruncate(1, 0)
        log.flush()
        for fd in (1, 2):
            os.dup2(log.fileno(), fd)


def _checked(ws: Workspace, work: Callable[[], int | None]) -> int:
    """`work`'s exit code (0 for None), or the one for what it raised: a disk or folder refusing a write is
    `WRITE_REFUSED`."""
    try:
        return work() or 0
    except StagingFailed as err:  # the guards' records refused (RecordsUnwritten)
        return _print_error(str(err), WRITE_REFUSED)
    except GuardError as err:  # e.g. the operator seam moved in a new mutmut
        return _print_error(str(err), err.exit_code)
    except OSError as err:
        if err.errno not in REFUSED_WRITES:
            traceback.print_exc()
            return ENGINE_FAILED
        where = os.fsdecode(err.filename) if isinstance(err.filename, (str, bytes)) else f"in {ws.dir}"
        return _print_error(f"cannot write {where} ({err.strerror})", WRITE_REFUSED)
    except Exception:  # mutmut crashed: Python's own exit status (1) would read as "the clean guards failed"
        traceback.print_exc()
        return ENGINE_FAILED


def _print_error(message: str, code: int) -> int:
    """The session's one line (into its log); the disk may refuse even that."""
    with contextlib.suppress(OSError):
        print(f"warnonce-guard: error: {message}", file=sys.stderr, flush=True)
    return int(code)


# The pipe the run reads this session's exit code from (`launch.ended`), and the one process that may say it there:
# the process the session's code ends in (this one, or the warmer once it took over), never one forked from it that
# returns through this code (a worker mutmut forked that raised, a fork of a guard's).
_end: int | None = None
_ends_here = 0


def _open_end_pipe() -> None:
    """Take the pipe's fd from the environment, keeping it from this session's workers' environment and from the
    programs the guards run; this process says the code (`say_ended`) unless another takes over (`_take_the_end`)."""
    global _end
    with contextlib.suppress(ValueError, OSError, KeyError):
        fd = int(os.environ.pop(protocol.SESSION_END))
        os.set_inheritable(fd, False)
        _end = fd
    _take_the_end()


def _take_the_end() -> None:
    """This process is the one the session's code ends in: it says the exit code."""
    global _ends_here
    _ends_here = os.getpid()


def say_ended(code: int) -> None:
    """Tell the run this session's exit code, its output flushed: the process ends with it next, and the run goes on
    while it (and the one before it) tears down vLLM and torch. Said only by the process the code ends in."""
    _flush()
    if _end is not None and os.getpid() == _ends_here:
        with contextlib.suppress(OSError):  # the run is gone: it is told nothing
            os.write(_end, f"{code & 0xFF}\n".encode())


if __name__ == "__main__":
    _open_end_pipe()
    _code = main(sys.argv[1:])
    say_ended(_code)
    exit_without_teardown(_code)
