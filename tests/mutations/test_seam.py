"""The seam into mutmut 3.8.1: with it, mutmut makes exactly our mutants on vLLM's real sources."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import os
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import libcst as cst
import pytest
from mutmut.mutation import data, file_mutation, trampoline
from mutmut.mutation.file_mutation import Mutation
from warnonce_guard.common.errors import SeamMismatch
from warnonce_guard.mutations.engine import naming, seam
from warnonce_guard.mutations.engine.seam import COLLECTED_SEAM, ENGINE_NAMES, check_seam, our_operators
from warnonce_guard.mutations.operators import OPERATORS, anchors_of, operator_of, site_lines
from warnonce_guard.rule.platforms import PlatformTarget, platform_sites
from warnonce_guard.rule.sites import sites_in_source

from tests.toy import apply_operator, mutmut_settings

# Kernel-import sites per platform file in vLLM 0.33.0, all `"...: %s", repr(e)`: one mutant per site and
# operator that fits that form.
SITES_PER_FILE = {"cpu.py": 4, "cuda.py": 1, "interface.py": 1, "rocm.py": 0}
CREATE_MUTATIONS = file_mutation.create_mutations
FITTING = [name for name in OPERATORS if apply_operator(name, OPERATORS["eager-repr-revert"].examples[0].before)]


def _platforms() -> Path:
    """vllm/platforms of the installed vLLM, found without importing it."""
    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("vLLM is not installed in this environment")
    return Path(next(iter(spec.submodule_search_locations))) / "platforms"


@pytest.fixture(scope="module")
def platforms() -> Path:
    return _platforms()


@pytest.fixture(autouse=True)
def _settings(mutmut_config: Path) -> None:
    """Every test here runs with a throwaway mutmut config current."""


@pytest.fixture(scope="module")
def seam_mutations(platforms: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Mutation]]:
    """What mutmut makes of each platform file with our operators in (parsed once per module: libcst is slow)."""
    with mutmut_settings(tmp_path_factory.mktemp("mutmut")), our_operators():
        return {file: mutations_of(platforms / file) for file in SITES_PER_FILE}


def mutations_of(path: Path) -> list[Mutation]:
    _, mutations, _, _ = file_mutation.create_mutations(str(path), path.read_text(encoding="utf-8"))
    return mutations


@pytest.mark.parametrize("file", list(SITES_PER_FILE))
def test_with_the_seam_mutmut_makes_one_mutant_per_site_and_operator(
    seam_mutations: dict[str, list[Mutation]], file: str
) -> None:
    mutations = seam_mutations[file]
    per_operator = Counter(operator_of(m.original_node, m.mutated_node) for m in mutations)
    expected = SITES_PER_FILE[file]
    assert per_operator == Counter({name: expected for name in FITTING if expected})
    assert len(mutations) == len(FITTING) * expected


def test_the_seams_mutants_match_discovery_and_live_in_functions(
    platforms: Path, seam_mutations: dict[str, list[Mutation]]
) -> None:
    for file, mutations in seam_mutations.items():
        source = (platforms / file).read_text(encoding="utf-8")
        sites = sites_in_source(source, f"vllm/platforms/{file}", f"vllm.platforms.{file[:-3]}")
        once_dropped = [m for m in mutations if operator_of(m.original_node, m.mutated_node) == "once-dropped"]
        assert len(once_dropped) == sum(s.cached for s in sites), file
        # mutmut only applies mutations inside a top-level function or method; others would be dropped.
        assert all(m.contained_by_top_level_function is not None for m in mutations), file


def test_mutmut_builds_a_mutated_file_from_our_mutants(platforms: Path) -> None:
    with our_operators():
        mutated = file_mutation.mutate_file_contents("cpu.py", (platforms / "cpu.py").read_text())
    assert len(mutated.mutant_names) == len(FITTING) * SITES_PER_FILE["cpu.py"]
    compile(mutated.code, "cpu.py", "exec")


def test_without_the_seam_stock_mutmut_makes_many_mutants(platforms: Path) -> None:
    assert len(mutations_of(platforms / "cpu.py")) > 50


def test_the_seam_restores_the_stock_operators_on_exit_even_after_an_error() -> None:
    stock = file_mutation.mutation_operators
    with pytest.raises(RuntimeError), our_operators():
        assert file_mutation.mutation_operators is not stock
        raise RuntimeError("boom")
    assert file_mutation.mutation_operators is stock


def test_check_seam_passes_on_the_pinned_mutmut() -> None:
    check_seam()


def test_check_seam_reads_mutmuts_sources_once_until_one_of_them_is_swapped(monkeypatch: pytest.MonkeyPatch) -> None:
    check_seam()
    read: list[str] = []
    monkeypatch.setattr(seam, "_check_sources", lambda: read.append("read"))
    check_seam()
    assert read == []  # the same functions: read already
    from mutmut.mutation import pragma_handling

    parse = pragma_handling._parse_pragma_token
    monkeypatch.setattr(pragma_handling, "_parse_pragma_token", lambda comment: parse(comment))
    check_seam()
    assert read == ["read"]


@pytest.mark.parametrize(
    ("module", "name"), [(m, n) for m, names in ENGINE_NAMES.items() for n in names], ids=lambda x: str(x)
)
def test_check_seam_raises_when_any_internal_the_engine_uses_is_gone(
    monkeypatch: pytest.MonkeyPatch, module: str, name: str
) -> None:
    monkeypatch.delattr(importlib.import_module(module), name)
    with pytest.raises(SeamMismatch, match=name):
        check_seam()


def test_check_seam_raises_when_mutmut_stops_naming_the_mutant_in_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    def set_mutant_under_test(name: str) -> None:
        os.environ["SOMETHING_ELSE"] = name

    monkeypatch.setattr(trampoline, "set_mutant_under_test", set_mutant_under_test)
    with pytest.raises(SeamMismatch, match="MUTANT_UNDER_TEST"):
        check_seam()


def test_check_seam_raises_when_the_meta_format_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    def load(self: object) -> None:
        return None

    monkeypatch.setattr(data.SourceFileMutationData, "load", load)
    with pytest.raises(SeamMismatch, match=r"\.meta format"):
        check_seam()


def test_check_seam_raises_when_create_mutations_stops_reading_the_global(monkeypatch: pytest.MonkeyPatch) -> None:
    def create_mutations(filename: str, code: str) -> None:
        return None

    monkeypatch.setattr(file_mutation, "create_mutations", create_mutations)
    with pytest.raises(SeamMismatch, match="create_mutations"):
        check_seam()


def test_check_seam_raises_on_another_mutmut_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seam.metadata, "version", lambda _: "3.9.0")
    with pytest.raises(SeamMismatch, match=r"3\.9\.0"):
        check_seam()
    with pytest.raises(SeamMismatch), our_operators():
        pass  # the seam refuses to swap anything on an unknown mutmut


def test_only_the_engine_imports_mutmut() -> None:
    import ast

    from warnonce_guard import guards, mutations

    offenders = []
    for package in (guards, mutations):
        for path in Path(package.__file__).parent.rglob("*.py"):
            if "engine" in path.relative_to(Path(mutations.__file__).parent.parent).parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                offenders += [f"{path.name}: {name}" for name in names if name.split(".")[0] == "mutmut"]
    assert offenders == []


def test_each_generation_describes_what_mutmut_makes_as_a_fresh_generation_would(platforms: Path) -> None:
    """The generator describes each file from mutmut's own call (its module, mutations and positions): the same
    descriptions as generating the file again, under the names mutmut gives the mutants it writes."""
    file, source = "vllm/platforms/cpu.py", (platforms / "cpu.py").read_text(encoding="utf-8")
    anchors = anchors_of(sites_in_source(source, file, "vllm.platforms.cpu"))
    described: dict[str, list[naming.Made]] = {}

    def record(
        name: str, code: str, parsed: str, module: Any, mutations: Sequence[Any], where_is: Mapping[Any, Any]
    ) -> None:
        assert parsed == code  # no outline: mutmut parsed the file itself
        generated = naming.named(name, module, mutations)
        described[name] = naming.describe(parsed, module, generated, where_is, ["vllm"], anchors)

    with our_operators(["vllm"], anchors), seam.each_generation(record):
        written = file_mutation.mutate_file_contents(file, source).mutant_names

    assert file_mutation.create_mutations is CREATE_MUTATIONS  # restored
    assert sorted(m.mutant_id.rpartition(".")[2] for m in described[file]) == sorted(written)
    assert len(written) == SITES_PER_FILE["cpu.py"] * len(FITTING)
    assert described[file] == naming.made_here(file, source, ["vllm"], anchors)


def test_check_seam_raises_when_create_mutations_stops_handing_its_wrapper_on(monkeypatch: pytest.MonkeyPatch) -> None:
    def create_mutations(filename: str, code: str) -> object:
        return mutation_operators  # type: ignore[name-defined]  # noqa: F821 - reads the global, hands nothing on

    monkeypatch.setattr(file_mutation, "create_mutations", create_mutations)
    with pytest.raises(SeamMismatch, match="metadata wrapper"):
        check_seam()


def _made(file: str, source: str, anchors: Mapping[str, str], lean: Mapping[str, frozenset[int]] | None) -> Any:
    """mutmut's whole result for one file with our anchored operators, as its generator writes the file (from the
    outline, under `lean_generation(lean)` when given)."""
    import mutmut.__main__ as mutmut_main

    with contextlib.ExitStack() as stack:
        if lean is not None:
            stack.enter_context(seam.lean_generation(lean))
        stack.enter_context(our_operators(["vllm"], anchors))
        return mutmut_main.mutate_file_contents(file, source)


@pytest.mark.parametrize("file", ["cpu.py", "cuda.py", "interface.py"])
def test_lean_generation_makes_the_same_file_and_mutants(platforms: Path, file: str) -> None:
    """vLLM's platform files, walked only in their site functions: the same mutated file, names, spans and hashes."""
    name, source = f"vllm/platforms/{file}", (platforms / file).read_text(encoding="utf-8")
    sites = sites_in_source(source, name, f"vllm.platforms.{file[:-3]}")
    anchors = anchors_of(sites)
    lean = _made(name, source, anchors, site_lines(sites))
    assert lean.mutant_names  # the sites' mutants are there
    assert lean == _made(name, source, anchors, None)
    assert file_mutation.create_mutations is CREATE_MUTATIONS  # restored


STATEMENTS = {"SimpleStatementLine", "If", "Try", "For", "While", "With", "ClassDef", "EmptyLine"}


@pytest.mark.parametrize("file", ["cpu.py", "interface.py"])
def test_lean_generation_marks_only_the_functions_holding_a_site(
    platforms: Path, file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mutmut's `OuterFunctionProvider` marks every function's nodes with it; lean, of the functions only a site's
    (and the other statements of its class, which the walk enters)."""
    name, source = f"vllm/platforms/{file}", (platforms / file).read_text(encoding="utf-8")
    sites = sites_in_source(source, name, f"vllm.platforms.{file[:-3]}")
    marked: list[str] = []
    stock = file_mutation.OuterFunctionVisitor

    class Marking(stock):  # type: ignore[misc, valid-type]
        def __init__(self, provider: Any, top: Any) -> None:
            marked.append(top.name.value if isinstance(top, cst.FunctionDef) else type(top).__name__)
            super().__init__(provider, top)

    monkeypatch.setattr(file_mutation, "OuterFunctionVisitor", Marking)
    _made(name, source, anchors_of(sites), None)
    every = len(marked)
    marked.clear()
    _made(name, source, anchors_of(sites), site_lines(sites))
    functions = [name for name in marked if name not in STATEMENTS]
    assert functions == sorted({site.qualname.split(".")[-1] for site in sites}) and every > 10 * len(functions)


CLASS_LEVEL_TRY = """\
from vllm.logger import init_logger

logger = init_logger(__name__)


class A:
    def import_kernels(self):
        try:
            import vllm._C  # noqa
        except ImportError as e:
            logger.warning_once("Failed to import from vllm._C: %r", e)

    try:
        import vllm._C  # noqa
    except ImportError as e:
        logger.warning_once("Failed to import from vllm._C: %r", e)
"""


def test_lean_generation_marks_a_class_level_statement_it_walks_as_mutmut_does() -> None:
    """With only the method's site kept (a platform's reach), the same try at class level is still walked and its
    mutant made: mutmut's top-level node for it is the statement itself, never None (which names no mutant mutmut
    makes, and fails the run as unattributed)."""
    file = "vllm/platforms/x.py"
    sites = [s for s in sites_in_source(CLASS_LEVEL_TRY, file, "vllm.platforms.x") if s.qualname == "A.import_kernels"]
    anchors = anchors_of(sites)

    def tops(lean: Mapping[str, frozenset[int]] | None) -> list[str]:
        with contextlib.ExitStack() as stack:
            if lean is not None:
                stack.enter_context(seam.lean_generation(lean))
            stack.enter_context(our_operators(["vllm"], anchors))
            _, mutations, *_ = file_mutation.create_mutations(file, CLASS_LEVEL_TRY)
        return [type(m.contained_by_top_level_function).__name__ for m in mutations]

    assert tops(site_lines(sites)) == tops(None) == ["FunctionDef", "Try"]


TWO_TRIES = """\
from vllm.logger import init_logger

logger = init_logger(__name__)


def first():
    try:
        import vllm._C
    except ImportError as e:
        logger.warning_once("Failed to import from vllm._C: %s", repr(e))


def second():
    try:
        import vllm._C
    except ImportError as e:
        logger.warning_once("Failed to import from vllm._C: %s", repr(e))
"""


def test_lean_generation_walks_only_the_functions_holding_a_site_line() -> None:
    """Two identical site tries: with only the first's import line given, only `first` gets mutants; a file not
    named is walked whole; and a source with a `no mutate` pragma has it read (the line keeps its code)."""
    file = "vllm/platforms/toy.py"
    anchors = anchors_of(sites_in_source(TWO_TRIES, file, "vllm.platforms.toy"))
    plain = _made(file, TWO_TRIES, anchors, None)
    assert {n.split("__mutmut_")[0] for n in plain.mutant_names} == {"x_first", "x_second"}
    only_first = _made(file, TWO_TRIES, anchors, {file: frozenset({8})})
    assert {n.split("__mutmut_")[0] for n in only_first.mutant_names} == {"x_first"}
    assert _made(file, TWO_TRIES, anchors, {"vllm/other.py": frozenset({8})}) == plain
    pragma = TWO_TRIES.replace("repr(e))\n\n\ndef second", "repr(e))  # pragma: no mutate\n\n\ndef second")
    assert _made(file, pragma, anchors, {file: frozenset({8, 15})}) == _made(file, pragma, anchors, None)
    assert {n.split("__mutmut_")[0] for n in _made(file, pragma, anchors, None).mutant_names} == {"x_second"}


def hide_in_source(monkeypatch: pytest.MonkeyPatch, text: str, of: Callable[[Any], bool]) -> None:
    """`inspect.getsource` without `text` in the source of each object `of` accepts: mutmut changed there."""
    real = inspect.getsource

    def source(obj: Any) -> str:
        found = real(obj)
        return found.replace(text, "") if of(obj) else found

    monkeypatch.setattr(inspect, "getsource", source)


@pytest.mark.parametrize("call", ["metadata_wrapper = MetadataWrapper(module)", "visitor = MutationVisitor("])
def test_check_seam_raises_when_create_mutations_stops_making_what_lean_generation_swaps(
    monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    hide_in_source(monkeypatch, call, lambda obj: obj is CREATE_MUTATIONS)
    with pytest.raises(SeamMismatch, match="lean_generation"):
        check_seam()


@pytest.mark.parametrize("method", sorted(COLLECTED_SEAM))
def test_check_seam_raises_when_mutmuts_runner_changes_what_the_collected_session_mirrors(
    monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    hide_in_source(monkeypatch, COLLECTED_SEAM[method], lambda obj: getattr(obj, "__qualname__", "") == method)
    with pytest.raises(SeamMismatch, match=rf"{re.escape(method)} no longer has .*engine/collected\.py"):
        check_seam()


def test_check_seam_raises_when_mutmut_reads_the_outer_function_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    visitor = file_mutation.MutationVisitor._create_mutations
    hide_in_source(monkeypatch, "get_metadata(OuterFunctionProvider, node, None)", lambda obj: obj is visitor)
    with pytest.raises(SeamMismatch, match=r"OuterFunctionProvider.*lean_generation"):
        check_seam()


def test_check_seam_raises_when_mutmut_reads_pragmas_without_no_mutate(monkeypatch: pytest.MonkeyPatch) -> None:
    from mutmut.mutation import pragma_handling

    monkeypatch.setattr(pragma_handling, "_parse_pragma_token", lambda comment: None)
    with pytest.raises(SeamMismatch, match="no mutate"):
        check_seam()


def test_check_seam_passes_inside_lean_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    """The session enters it before the other swaps, each of which checks the seam first (mutmut's sources read
    there, under the swaps, not taken from an earlier check)."""
    read: list[str] = []
    real = seam._check_sources

    def check_sources() -> None:
        read.append("read")
        real()

    monkeypatch.setattr(seam, "_SOURCES_CHECKED", set())
    monkeypatch.setattr(seam, "_check_sources", check_sources)
    with seam.lean_generation({}), our_operators(), seam.each_generation(lambda *args: None):
        seam._SOURCES_CHECKED.clear()
        check_seam()
    assert read == ["read", "read"]  # by lean_generation, then under every swap


PLUGIN = """\
from vllm.logger import init_logger

logger = init_logger(__name__)


class MyPlatform:
    @classmethod
    def import_kernels(cls) -> None:
        try:
            import my_plugin._C  # noqa: F401
        except ImportError as e:
            logger.warning_once("Failed to import from my_plugin._C: %s", repr(e))

    def check_kernels(self) -> None:
        try:
            import my_plugin._C  # noqa: F401
        except ImportError as e:
            logger.warning_once("Failed to import from my_plugin._C: %s", repr(e))
"""


def test_a_platform_runs_mutants_only_in_what_its_import_kernels_runs_in_both_generators(tmp_path: Path) -> None:
    """`--platform` keeps the sites its `import_kernels` runs: the same try in a method it never calls has the same
    anchor, but no mutant (one there would change a call no site has), in the session's generation and in the
    parent's (`naming.made_here`, when the session left the file undescribed) alike."""
    file = "my_plugin/platform.py"
    (tmp_path / "my_plugin").mkdir()
    (tmp_path / file).write_text(PLUGIN, encoding="utf-8")
    target = PlatformTarget(
        "my_plugin.platform:MyPlatform", "my_plugin.platform", "MyPlatform.import_kernels", tmp_path, file
    )
    sites = platform_sites(target)
    assert [site.qualname for site in sites] == ["MyPlatform.import_kernels"]
    anchors, packages = anchors_of(sites), ["my_plugin", "vllm"]

    with seam.lean_generation(site_lines(sites)), our_operators(packages, anchors):
        session = file_mutation.mutate_file_contents(file, PLUGIN).mutant_names
    parent = naming.made_here(file, PLUGIN, packages, anchors, site_lines(sites)[file])

    assert {name.split("__mutmut_")[0] for name in session} == {"xǁMyPlatformǁimport_kernels"}
    assert sorted(m.mutant_id.rpartition(".")[2] for m in parent) == sorted(session)
