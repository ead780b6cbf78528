"""Every change the engine makes to mutmut 3.8.1, in one place, and the check that every mutmut internal it relies
on is still there (`check_seam`)."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warnonce_guard.common.errors import SeamMismatch
from warnonce_guard.rule.target import PACKAGE

if TYPE_CHECKING:
    from warnonce_guard.mutations.operators import Anchors

PINNED_MUTMUT = "3.8.1"
SEAM_MODULE = "mutmut.mutation.file_mutation"
SEAM_ATTRIBUTE = "mutation_operators"
# mutmut's protocol with the tests it runs, passed on to the guards' conftest by the session (common.protocol):
MUTANT_VARIABLE = "MUTANT_UNDER_TEST"  # the mutant a test process runs; mutmut sets it before each session
STATS_PHASE = "stats"  # its value for the session that finds which tests reach which function (the whole suite)
BASELINE_PHASES = ("", STATS_PHASE)  # its values for runs of the unmutated code (clean run, coverage stats)
MUTANT_MARK = "__mutmut_"  # in every mutant's name (its other phases, "fail", "list_all_tests", have none)
# The methods of mutmut's fork-server runner that run a session in a child, each through `_run_in_child` or
# `_exit_code_from_child`: engine.pristine's runner takes them for a suite (`check_seam` checks they still do).
FORKED = ("collect_stats", "run_clean_tests", "run_forced_fail", "list_all_tests")
# What engine.collected mirrors of mutmut's runner (checked by `check_seam`): method -> a line of its source.
COLLECTED_SEAM = {
    "PytestRunner.execute_pytest": 'params = ["--rootdir=.", "--tb=native"] + params + self._pytest_add_cli_args',
    "PytestRunner._pytest_args_regular_run": 'pytest_args = ["-x", "-q", "-p", "no:randomly", "-p", "no:random-order"]',
    "ForkRunner.submit": "result = self.test_runner.run_tests(mutant_name=mutant_name, tests=tests_sorted)",
}


# Every name of mutmut's the engine uses, by module. `check_seam` fails loudly if one moves.
ENGINE_NAMES: dict[str, tuple[str, ...]] = {
    "mutmut.__main__": (
        "_run",
        "copy_src_dir",
        "create_mutants",
        "mutate_file_contents",
        "_register_mutant_result",
        "Pool",
        "get_mutant_runner",
        "git_head",
    ),
    "mutmut.configuration": ("reset_config",),
    "mutmut.mutation.data": ("SourceFileMutationData",),
    "mutmut.mutation.file_mutation": (
        "create_mutations",
        "compute_function_hashes",
        "get_ignored_lines",
        SEAM_ATTRIBUTE,
        "MetadataWrapper",
        "MutationVisitor",
        "OuterFunctionProvider",
        "OuterFunctionVisitor",
    ),
    "mutmut.mutation.pragma_handling": ("IgnoredCode", "get_lines_ignored_by_pattern", "_parse_pragma_token"),
    "mutmut.mutation.trampoline": ("set_mutant_under_test", "get_mutant_under_test"),
    "mutmut.mutation.trampoline_templates": ("mangle_function_name",),
    "mutmut.stats": ("status_by_exit_code", "load_stats", "save_stats"),
    "mutmut.utils.file_utils": ("change_cwd", "copy_src_dir"),
    "mutmut.utils.format_utils": ("get_mutant_name",),
    "mutmut.workers.isolation": (
        "MutantResult",
        "ForkRunner",
        "ForkServerRunner",
        "run_in_fork",
        "run_in_fork_with_result",
    ),
    "mutmut.state": ("state",),
    # last: importing it imports mutmut.stats' names
    "mutmut.runners.harness": ("PytestRunner", "BadTestExecutionCommandsException"),
}


def check_seam() -> None:
    """Raise `SeamMismatch` unless mutmut is 3.8.1 and every internal the engine relies on is where it was."""
    import importlib

    version = metadata.version("mutmut")
    if version != PINNED_MUTMUT:
        raise SeamMismatch(
            f"mutmut {version} is installed but the engine targets {PINNED_MUTMUT}; "
            f"install mutmut=={PINNED_MUTMUT} or re-check mutations/engine against the new mutmut"
        )
    for module_name, names in ENGINE_NAMES.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError as err:  # it imports a name of mutmut's that moved
            moved = f"{module_name} cannot be imported ({err}): the engine's seam moved; re-check mutmut"
            raise SeamMismatch(moved) from None
        for name in names:
            if not hasattr(module, name):
                raise SeamMismatch(f"{module_name} has no `{name}`: the engine's seam moved; re-check mutmut")
    inspected = _inspected()
    if inspected not in _SOURCES_CHECKED:  # the source of a loaded function cannot change: read once per process
        _check_sources()
        _SOURCES_CHECKED.add(inspected)


# The objects whose sources `_check_sources` read and found as the engine needs them (with the `inspect.getsource`
# that read them): a swapped one (a test's, another mutmut's) is read again. Held, so no id is reused.
_SOURCES_CHECKED: set[tuple[Any, ...]] = set()


def _inspected() -> tuple[Any, ...]:
    """Every object `_check_sources` reads, as it finds them now (a dataclass as its fields)."""
    import inspect

    import mutmut.__main__ as mutmut_main
    from mutmut.mutation import data, file_mutation, pragma_handling, trampoline
    from mutmut.runners.harness import PytestRunner
    from mutmut.state import MutmutState
    from mutmut.utils import file_utils
    from mutmut.workers import isolation

    classes = {"PytestRunner": PytestRunner, "ForkRunner": isolation.ForkRunner}
    fields = [
        (cls, tuple(getattr(cls, "__dataclass_fields__", ())))
        for cls in (file_mutation.MutatedFile, isolation.MutantResult, MutmutState)
    ]
    return (
        inspect.getsource,
        inspect.unwrap(file_mutation.create_mutations),  # under `lean_generation`, mutmut's own
        file_mutation.MutationVisitor._create_mutations,
        pragma_handling._parse_pragma_token,
        trampoline.set_mutant_under_test,
        mutmut_main.write_all_mutants_to_file,
        file_utils.copy_src_dir,
        data.SourceFileMutationData.load,
        PytestRunner.__init__,
        PytestRunner.execute_pytest,
        *(getattr(isolation.ForkServerRunner, name, None) for name in FORKED),
        *(getattr(classes[method.split(".")[0]], method.split(".")[1], None) for method in COLLECTED_SEAM),
        *fields,
    )


def _check_sources() -> None:
    """`SeamMismatch` unless the source of every mutmut function the engine swaps or mirrors still reads as it did."""
    import inspect

    import mutmut.__main__ as mutmut_main
    from mutmut.mutation import data, file_mutation, pragma_handling, trampoline
    from mutmut.utils import file_utils
    from mutmut.workers import isolation
    from warnonce_guard.mutations.engine.state import META_KEYS

    create = inspect.unwrap(file_mutation.create_mutations)  # under `lean_generation`, mutmut's own
    code = getattr(create, "__code__", None)
    if code is None or SEAM_ATTRIBUTE not in code.co_names:
        raise SeamMismatch(
            f"{SEAM_MODULE}.create_mutations no longer reads the global `{SEAM_ATTRIBUTE}`; "
            "swapping it would leave mutmut's stock operators on"
        )
    if "get_ignored_lines(filename, code, metadata_wrapper" not in inspect.getsource(create):
        raise SeamMismatch(
            f"{SEAM_MODULE}.create_mutations no longer hands its metadata wrapper to `get_ignored_lines`; "
            "re-check seam.each_generation"
        )
    for call in ("metadata_wrapper = MetadataWrapper(module)", "visitor = MutationVisitor("):
        if call not in inspect.getsource(create):
            raise SeamMismatch(f"{SEAM_MODULE}.create_mutations no longer calls `{call}...`; re-check lean_generation")
    marking = "self.get_metadata(OuterFunctionProvider, node, None)"  # by the module's global name, if at all
    if marking not in inspect.getsource(file_mutation.MutationVisitor._create_mutations):
        raise SeamMismatch(f"mutmut's MutationVisitor no longer reads `{marking}`; re-check lean_generation")
    if '"no mutate" not in text' not in inspect.getsource(pragma_handling._parse_pragma_token):
        raise SeamMismatch("mutmut reads a pragma without `no mutate` in it; re-check seam.lean_generation")
    if MUTANT_VARIABLE not in inspect.getsource(trampoline.set_mutant_under_test):
        raise SeamMismatch(f"mutmut no longer names the mutant under test in ${MUTANT_VARIABLE}; re-check the engine")
    # The session swaps these module globals; each must still be looked up by name where mutmut calls it.
    source = inspect.getsource(mutmut_main)
    # and the session generates as `_run` does, before it: copy the files to mutate, then make their mutants
    calls = ("_register_mutant_result(result, ", "with Pool(", "copy_src_dir()", "create_mutants(max_children)")
    for call in (*calls, "get_mutant_runner(max_children)"):
        if call not in source:
            raise SeamMismatch(f"mutmut.__main__ no longer calls `{call}...`; re-check mutations/engine/session.py")
    written = inspect.getsource(mutmut_main.write_all_mutants_to_file)
    for call in ("mutated_file = mutate_file_contents(", "out.write(mutated_file.code)"):
        if call not in written or "code" not in getattr(file_mutation.MutatedFile, "__dataclass_fields__", {}):
            raise SeamMismatch(f"mutmut no longer writes a file it mutates with `{call}`; re-check lean_generation")
    for name in FORKED:  # a suite's sessions on the unmutated code each run in a child (engine.pristine)
        method = inspect.getsource(getattr(isolation.ForkServerRunner, name, lambda: None))
        if "self._run_in_child(" not in method and "self._exit_code_from_child(" not in method:
            raise SeamMismatch(
                f"mutmut's ForkServerRunner.{name} no longer runs in a child; re-check engine/pristine.py"
            )
    fields = getattr(isolation.MutantResult, "__dataclass_fields__", {})
    if not {"mutant_name", "exit_code"} <= set(fields):
        raise SeamMismatch("mutmut's MutantResult changed; re-check mutations/engine/workers.py")
    # The overlay imports each site module from mutmut's copy, mutants/<file> (engine.layout, engine.overlay).
    if 'Path("mutants") / root / name' not in inspect.getsource(file_utils.copy_src_dir):
        raise SeamMismatch("mutmut no longer copies a file it mutates to mutants/<file>; re-check engine/overlay.py")
    from mutmut.runners.harness import PytestRunner
    from mutmut.state import MutmutState

    if "_stats" not in getattr(MutmutState, "__dataclass_fields__", {}):
        raise SeamMismatch("mutmut's state no longer gathers trampoline hits in `_stats`; re-check suite_plugin.py")
    if "self._pytest_add_cli_args_test_selection" not in inspect.getsource(PytestRunner.__init__):
        raise SeamMismatch("mutmut's PytestRunner no longer keeps its test selection; re-check engine/pristine.py")
    if "pytest.main(params" not in inspect.getsource(PytestRunner.execute_pytest):
        raise SeamMismatch("mutmut's PytestRunner.execute_pytest no longer runs pytest.main; re-check tests_run_in")
    # engine.collected collects the guards with the arguments of mutmut's sessions, and runs a mutant's in the
    # collected session only where mutmut runs them: in the worker it forked for the mutant
    classes = {"PytestRunner": PytestRunner, "ForkRunner": isolation.ForkRunner}
    for method, code in COLLECTED_SEAM.items():
        owner, name = method.split(".")
        if code not in inspect.getsource(getattr(classes[owner], name, lambda: None)):
            raise SeamMismatch(f"mutmut's {method} no longer has `{code}`; re-check engine/collected.py")
    saved = inspect.getsource(data.SourceFileMutationData.load)
    if not all(f'"{key}"' in saved for key in META_KEYS):
        raise SeamMismatch("mutmut's .meta format changed (SourceFileMutationData.load); re-check engine/state.py")


@contextmanager
def our_operators(packages: Sequence[str] = (PACKAGE,), anchors: Anchors | None = None) -> Iterator[None]:
    """Within the block, mutmut makes only our mutants (stock operators off); restored on exit.

    Several packages (vLLM and a platform plugin) give one block of operators each, in that order.
    With `anchors` (`operators.anchors_of(sites)`) they fire only in the tries of those sites.
    """
    check_seam()
    from mutmut.mutation import file_mutation
    from warnonce_guard.mutations.operators import operators_for

    stock = getattr(file_mutation, SEAM_ATTRIBUTE)
    table = [pair for p in packages for pair in operators_for(p, anchors)]
    setattr(file_mutation, SEAM_ATTRIBUTE, table)
    try:
        yield
    finally:
        setattr(file_mutation, SEAM_ATTRIBUTE, stock)


@contextmanager
def lean_generation(site_lines: Mapping[str, Collection[int]]) -> Iterator[None]:
    """Within the block, mutmut's generation of a file skips the work whose result our anchored operators never use
    (half the CPU on vLLM's platform files). Every generator of a run uses it (the session's,
    `naming.generate`'s), so they agree; the file and mutants are those of a whole walk wherever every try an anchor
    matches is a site's (a platform's anchors also match the same try in a method its `import_kernels` never runs,
    whose mutants would change a call no site has):
    - a file it writes (`mutate_file_contents`, in mutmut's `__main__`) is generated from its outline
      (`engine.outline`: what holds no site stubbed out, line for line), then the stubs are put back as written;
    - its module is not copied for the metadata (nothing else holds the module it just parsed);
    - pragma comments are read only in a source with a `no mutate` in it (else there are none to find);
    - a function or class holding none of `site_lines` (the lines of its sites' imports, by file as mutmut names
      it) is not walked for mutations: our operators change only a site's `try`; nor is it marked with the
      top-level function each of its nodes is in (`OuterFunctionProvider`: mutmut reads it only for a node it
      mutates; marking every function was about a fifth of the generation's CPU). A file not in `site_lines` is
      walked and marked whole."""
    check_seam()
    import mutmut.__main__ as mutmut_main
    from libcst import ClassDef, FunctionDef, IndentedBlock
    from libcst.metadata import PositionProvider
    from mutmut.mutation import file_mutation, pragma_handling
    from warnonce_guard.mutations.engine.outline import outline

    mutate = mutmut_main.mutate_file_contents

    create, ignored, wrapper, visitor, outer = (
        file_mutation.create_mutations,
        file_mutation.get_ignored_lines,
        file_mutation.MetadataWrapper,
        file_mutation.MutationVisitor,
        file_mutation.OuterFunctionProvider,
    )
    lines: list[Collection[int] | None] = [None]

    def walked(dependent: Any, node: Any) -> bool:
        """Whether the lean walk enters `node` (a function or class): it holds a site's line, or nothing is lean."""
        where = dependent.get_metadata(PositionProvider, node, None)
        return where is None or lines[0] is None or any(where.start.line <= n <= where.end.line for n in lines[0])

    class SiteOuterFunctions(outer):  # type: ignore[misc,valid-type]
        METADATA_DEPENDENCIES = (PositionProvider,)

        @classmethod
        def get_inherited_dependencies(cls) -> Any:
            return frozenset({PositionProvider})  # not the cache libcst keeps on mutmut's provider, inherited

        def visit_Module(self, node: Any) -> bool:
            """mutmut's marking (`OuterFunctionProvider.visit_Module`) of what `SiteVisitor` walks: a function
            holding a site; in a class holding one, each method or nested class holding one, and every other
            statement of its body (a class-level `try`, walked whatever it holds)."""
            for child in node.body:
                inner = child.body.body if isinstance(child, ClassDef) and isinstance(child.body, IndentedBlock) else ()
                if inner and not walked(self, child):
                    continue
                for top in [child] if isinstance(child, FunctionDef) else inner:
                    if not isinstance(top, FunctionDef | ClassDef) or walked(self, top):
                        top.visit(file_mutation.OuterFunctionVisitor(self, top))
            return False

    class SiteVisitor(visitor):  # type: ignore[misc,valid-type]
        @classmethod
        def get_inherited_dependencies(cls) -> Any:
            return frozenset({PositionProvider, SiteOuterFunctions})  # not mutmut's provider beside ours

        def on_visit(self, node: Any) -> bool:
            if not super().on_visit(node):
                return False
            return not isinstance(node, FunctionDef | ClassDef) or walked(self, node)

    @functools.wraps(create)
    def create_mutations(filename: str, code: str, *args: Any, **kwargs: Any) -> Any:
        lines[0] = site_lines.get(Path(filename).as_posix())
        return create(filename, code, *args, **kwargs)

    def ignored_lines(filename: str, source: str, metadata_wrapper: Any, *args: Any, **kwargs: Any) -> Any:
        if "no mutate" in source or any(args) or any(kwargs.values()):  # a pragma, or coverage's excluded lines
            return ignored(filename, source, metadata_wrapper, *args, **kwargs)
        patterns = pragma_handling.get_lines_ignored_by_pattern(source)
        return pragma_handling.IgnoredCode(
            no_mutate_lines=set(), ignore_node_lines=set(), ignore_pattern_lines=patterns
        )

    def uncopied(module: Any) -> Any:
        return wrapper(module, unsafe_skip_copy=True)

    @functools.wraps(mutate)
    def outlined(filename: str, code: str, *args: Any, **kwargs: Any) -> Any:
        shape = None if any(args) or any(kwargs.values()) else outline(code, site_lines.get(Path(filename).as_posix()))
        if shape is not None:
            _SOURCES[shape.code] = code
            try:
                made = mutate(filename, shape.code, *args, **kwargs)
            finally:
                del _SOURCES[shape.code]
            if (restored := shape.restore(made.code)) is not None:  # and the hashes of the file's own functions:
                hashes = file_mutation.compute_function_hashes(code, accept=made.hash_by_function_name.__contains__)
                return dataclasses.replace(made, code=restored, hash_by_function_name=hashes)  # a redefinition's too
        return mutate(filename, code, *args, **kwargs)

    swapped = (create_mutations, ignored_lines, uncopied, SiteVisitor, SiteOuterFunctions)
    names = ("create_mutations", "get_ignored_lines", "MetadataWrapper", "MutationVisitor", "OuterFunctionProvider")
    for name, value in zip(names, swapped, strict=True):
        setattr(file_mutation, name, value)
    mutmut_main.mutate_file_contents = outlined
    try:
        yield
    finally:
        for name, value in zip(names, (create, ignored, wrapper, visitor, outer), strict=True):
            setattr(file_mutation, name, value)
        mutmut_main.mutate_file_contents = mutate


# The file's own source of each outline mutmut is generating from (under `lean_generation`), in this process.
_SOURCES: dict[str, str] = {}

# What `each_generation` hands on of one `create_mutations` call: the file's name and its own source, the source
# mutmut parsed (the file's outline under `lean_generation`: the same lines where there are mutants), mutmut's
# module and `Mutation`s, and where each node of that module is (the positions mutmut resolved for its pragmas).
Generation = Callable[[str, str, str, Any, Sequence[Any], Mapping[Any, Any]], None]


@contextmanager
def each_generation(record: Generation) -> Iterator[None]:
    """Within the block, every call of mutmut's `create_mutations` also hands its result to `record` before
    returning it, with no work done twice: the positions are those mutmut's own metadata wrapper resolved (it hands
    the wrapper to `get_ignored_lines`)."""
    check_seam()
    from libcst.metadata import PositionProvider
    from mutmut.mutation import file_mutation

    create, ignored = file_mutation.create_mutations, file_mutation.get_ignored_lines
    wrappers: list[Any] = []

    def ignored_lines(filename: str, source: str, metadata_wrapper: Any, *args: Any, **kwargs: Any) -> Any:
        wrappers.append(metadata_wrapper)
        return ignored(filename, source, metadata_wrapper, *args, **kwargs)

    @functools.wraps(create)
    def create_mutations(filename: str, code: str, *args: Any, **kwargs: Any) -> Any:
        wrappers.clear()
        result = create(filename, code, *args, **kwargs)
        module, mutations = result[0], result[1]
        if len(wrappers) == 1 and wrappers[0].module is module:  # else its positions are not this module's
            record(filename, _SOURCES.get(code, code), code, module, mutations, wrappers[0].resolve(PositionProvider))
        return result

    file_mutation.create_mutations, file_mutation.get_ignored_lines = create_mutations, ignored_lines
    try:
        yield
    finally:
        file_mutation.create_mutations, file_mutation.get_ignored_lines = create, ignored


def reached_functions() -> set[str]:
    """The mutated functions some test reaches, as mutmut's stats found them (mutmut names them as it mangles)."""
    from mutmut.state import state

    return {name for name, tests in state().tests_by_mangled_function_name.items() if tests}


def forget_collected_tests() -> None:
    """Forget which tests reach which function, as mutmut's stats session found them before it stopped (it adds to
    what it holds): its next run collects them afresh, from the tests it runs then."""
    from mutmut.state import state

    state().tests_by_mangled_function_name.clear()
    state().duration_by_test.clear()


def mutmut_hits(clear: bool = False) -> set[str]:
    """The mutated functions mutmut's trampolines saw run since its last look (a test's teardown), emptied when
    `clear`: what a suite's plugin takes from the test mutmut would credit them to."""
    from mutmut.state import state

    hits = set(state()._stats)
    if clear:
        state()._stats.clear()
    return hits


@contextmanager
def tests_run_in(root: Path | None) -> Iterator[None]:
    """Within the block (and its forked workers), mutmut runs each pytest session in `root`, a suite's folder,
    rather than in `mutants/`: its `--rootdir=.` is then that folder, its settings and conftest.py files apply, and
    the node ids mutmut records and passes back are relative to it, as pytest takes them. Nothing when `root` is
    None (the guards, which mutmut finds in `mutants/`)."""
    if root is None:
        yield
        return
    check_seam()
    from mutmut.runners.harness import PytestRunner
    from mutmut.utils.file_utils import change_cwd

    execute = PytestRunner.execute_pytest

    def execute_in_root(self: Any, params: list[str], **kwargs: Any) -> int:
        with change_cwd(root):
            return execute(self, params, **kwargs)

    PytestRunner.execute_pytest = execute_in_root  # type: ignore[method-assign]
    try:
        yield
    finally:
        PytestRunner.execute_pytest = execute  # type: ignore[method-assign]


def patched_main(
    pool: type,
    record_generation: Callable[[Callable[..., Any]], Callable[..., Any]],
    register_result: Callable[[Callable[..., Any]], Callable[..., Any]] | None = None,
    get_runner: Callable[[int], Any] | None = None,
) -> Any:
    """mutmut's `__main__` as the session runs it: its `.meta` files written atomically (in this process and its
    forks), generation on `pool`, `create_mutants` wrapped by `record_generation` and, when given, the one place it
    stores a worker's exit code (`_register_mutant_result`) by `register_result`, and its runner (`get_mutant_runner`)
    made by `get_runner` (engine.pristine's for a suite)."""
    import mutmut.__main__ as mutmut_main
    from mutmut.mutation.data import SourceFileMutationData
    from warnonce_guard.common.files import write_atomic
    from warnonce_guard.mutations.engine.state import META_ATTRIBUTES

    def save(self: Any) -> None:
        document = {key: getattr(self, attribute) for key, attribute in META_ATTRIBUTES.items()}
        write_atomic(Path(self.meta_path), json.dumps(document, indent=4))

    SourceFileMutationData.save = save  # type: ignore[method-assign]
    mutmut_main.Pool = pool
    mutmut_main.create_mutants = record_generation(mutmut_main.create_mutants)
    if register_result is not None:
        mutmut_main._register_mutant_result = register_result(mutmut_main._register_mutant_result)
    if get_runner is not None:
        mutmut_main.get_mutant_runner = get_runner
    # mutmut records HEAD for its git change detection, which the settings turn off (engine.config): the workspace's
    # fingerprint decides. Asked anyway, it forks `git` from the process that imported vLLM, on the critical path.
    mutmut_main.git_head = _no_commit
    return mutmut_main


def _no_commit() -> None:
    """mutmut's `git_head` in the session: no commit recorded (mutmut keeps it only for its git change detection)."""
    return None
