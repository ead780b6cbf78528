"""What mutmut made of a file, in mutmut's names (mutmut 3.8.1's internals).

A mutant is named as mutmut names it, `<module>.<mangled function>__mutmut_<n>` (n counting the mutations of one
function in the order the generator yields them), and described by the operator that made it and the logger call
it changes (`Made`). The session's generator describes the mutants as mutmut makes them (`seam.each_generation`)
into the workspace's `made/` folder, so that nothing is generated twice; `made_here` does it in this process, for
a file the generator left undescribed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper
from warnonce_guard.common.errors import BadRecord, MutantsUnaccounted
from warnonce_guard.common.files import write_atomic
from warnonce_guard.mutations.engine import state
from warnonce_guard.mutations.engine.seam import lean_generation, our_operators
from warnonce_guard.mutations.operators import Anchors, operator_of
from warnonce_guard.rule.site_row import Site
from warnonce_guard.rule.site_rule import log_method, walk
from warnonce_guard.rule.sites import interrupts_kept, positions


@dataclass(frozen=True)
class Generated:
    """One mutation mutmut makes: its name, the function it is in, and the node before and after."""

    mutant_id: str
    qualname: str  # Class.method, a module function's name, or <module>
    original: cst.CSTNode
    mutated: cst.CSTNode


def _function_key(function: cst.FunctionDef, module: cst.Module) -> tuple[str | None, str]:
    for stmt in module.body:
        if isinstance(stmt, cst.ClassDef) and any(child is function for child in stmt.body.body):
            return stmt.name.value, function.name.value
    return None, function.name.value


def generate(
    file: str, source: str, packages: Sequence[str], anchors: Anchors | None, lines: Collection[int] = ()
) -> tuple[cst.Module, list[Generated]]:
    """mutmut's module and mutations of one file, with our operators in, each with mutmut's name for it; with `lines`
    (its sites' import lines, `operators.site_lines`), only the functions holding one are walked, as the session's
    generator walks them (`seam.lean_generation`)."""
    from mutmut.mutation import file_mutation

    with lean_generation({file: lines} if lines else {}), our_operators(packages, anchors):
        module, mutations, _, _ = file_mutation.create_mutations(file, source)
    return module, named(file, module, mutations)


def named(file: str, module: cst.Module, mutations: Sequence[Any]) -> list[Generated]:
    """mutmut's mutations of one file (its `Mutation`s, in the order it made them), each with mutmut's name."""
    from mutmut.mutation.trampoline_templates import mangle_function_name
    from mutmut.utils.format_utils import get_mutant_name

    numbering: dict[int, int] = {}
    out = []
    for mutation in mutations:
        function = mutation.contained_by_top_level_function
        if function is not None and not isinstance(function, cst.FunctionDef):
            continue  # a statement of a class body (a `try:` beside the methods): mutmut applies no mutant there
        class_name, name = _function_key(function, module) if function is not None else (None, "<module>")
        numbering[id(function)] = numbering.get(id(function), 0) + 1
        mangled = mangle_function_name(name=name, class_name=class_name)
        mutant_id = get_mutant_name(Path(file), f"{mangled}__mutmut_{numbering[id(function)]}")
        qualname = f"{class_name}.{name}" if class_name else name
        out.append(Generated(mutant_id, qualname, mutation.original_node, mutation.mutated_node))
    return out


@dataclass(frozen=True)
class Made:
    """One mutant as made: mutmut's name, its function, the operator, and the logger call it changes (where the
    call starts and ends in the pristine file, and its exact text before and after)."""

    mutant_id: str
    qualname: str
    operator: str  # "unknown" when no operator of ours makes this change
    log_method: str
    line: int
    column: int
    end_line: int
    end_column: int
    original: str
    replacement: str

    @classmethod
    def from_json(cls, data: Any) -> Made:
        if not isinstance(data, dict) or set(data) != _MADE_FIELDS.keys():
            raise BadRecord("not a described mutant")
        if not all(type(data[name]) is kind for name, kind in _MADE_FIELDS.items()):
            raise BadRecord("a described mutant's field has the wrong type")
        return cls(**data)


_MADE_FIELDS = {field.name: {"int": int, "str": str}[str(field.type)] for field in fields(Made)}


def changed_call(original: cst.CSTNode, mutated: cst.CSTNode) -> tuple[cst.Call, cst.Call] | None:
    """The first logger call (pre-order) that differs between a mutation's original and mutated nodes."""
    for before, after in zip(walk(original), walk(mutated), strict=False):
        if isinstance(before, cst.Call) and log_method(before) is not None and not before.deep_equals(after):
            return before, after if isinstance(after, cst.Call) else before
        if type(before) is not type(after):
            return None
    return None


def describe(
    source: str,
    module: cst.Module,
    generated: Sequence[Generated],
    where_is: Mapping[cst.CSTNode, CodeRange],
    packages: Sequence[str],
    anchors: Anchors | None,
) -> list[Made]:
    """Each mutation of `module` (parsed from `source`; `where_is` its positions) as a `Made`."""
    out = []
    for mutation in generated:
        pair = changed_call(mutation.original, mutation.mutated)
        if pair is None:
            raise MutantsUnaccounted(
                f"{mutation.mutant_id}: the mutant changes no logger call; mutmut and the operators differ"
            )
        call, mutated_call = pair
        where = where_is[call]
        operator = next(
            (op for p in packages if (op := operator_of(mutation.original, mutation.mutated, p, anchors))),
            "unknown",
        )
        start, end = where.start, where.end
        out.append(
            Made(
                mutation.mutant_id,
                mutation.qualname,
                operator,
                log_method(call) or "",
                *(start.line, start.column, end.line, end.column),
                *_exact_text(source, where, call, mutated_call, module, mutation),
            )
        )
    return out


def made_here(
    file: str, source: str, packages: Sequence[str], anchors: Anchors | None, lines: Collection[int] = ()
) -> list[Made]:
    """Generate the mutants of one file in this process (walking the functions holding `lines`, as `generate`) and
    describe them."""
    with interrupts_kept():  # mutmut's generator records positions with libcst too
        module, generated = generate(file, source, packages, anchors, lines)
    where_is = positions(MetadataWrapper(module, unsafe_skip_copy=True))
    return describe(source, module, generated, where_is, packages, anchors)


def _offset(source: str, line: int, column: int) -> int:
    lines = source.splitlines(keepends=True)
    return sum(len(text) for text in lines[: line - 1]) + column


def _exact_text(
    source: str, where: CodeRange, call: cst.Call, mutated_call: cst.Call, module: cst.Module, mutation: Generated
) -> tuple[str, str]:
    """The call's exact text before and after, indentation as in the file.

    The calls are rendered on their own, so lines inside a multi-line call lack the block's indentation;
    putting it back is exact when it reproduces the original text. Otherwise (an unusual layout) the whole
    mutated module is rendered and cut, which is exact but costs a module copy.
    """
    start = _offset(source, where.start.line, where.start.column)
    end = _offset(source, where.end.line, where.end.column)
    before = source[start:end]
    line = source.splitlines()[where.start.line - 1]
    indent = "\n" + line[: len(line) - len(line.lstrip())]
    empty = cst.Module([])
    if empty.code_for_node(call).replace("\n", indent) == before:
        return before, empty.code_for_node(mutated_call).replace("\n", indent)
    mutated_source = module.deep_replace(mutation.original, mutation.mutated).code
    tail = len(source) - end
    if source[:start] != mutated_source[:start] or source[end:] != mutated_source[len(mutated_source) - tail :]:
        raise MutantsUnaccounted(f"{mutation.mutant_id}: the mutant changes code outside its call")
    return before, mutated_source[start : len(mutated_source) - tail]


def write_made(path: Path, source: str, made: Sequence[Made]) -> None:
    """The described mutants of one file, with the digest of the source they were made from."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps({"sha256": _digest(source), "mutants": [asdict(m) for m in made]}, indent=1))


def read_made(path: Path, source: str) -> list[Made]:
    """The described mutants of one file made from `source`; `BadRecord` if the file is missing, does not validate
    or was made from another source."""
    data = state.load_json(path)
    if not isinstance(data, dict) or set(data) != {"sha256", "mutants"} or not isinstance(data["mutants"], list):
        raise BadRecord("not a list of described mutants")
    if data["sha256"] != _digest(source):
        raise BadRecord("made from another source")
    return [Made.from_json(item) for item in data["mutants"]]


def _digest(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


def function_keys(sites: Sequence[Site]) -> dict[str, list[str]]:
    """mutmut's key of each function or method holding a site (its mutants' names up to `__mutmut_`), to the ids
    of the sites in it. mutmut mutates top-level functions and the methods of top-level classes: a site's
    qualname `A.b...` is in function `A` or in method `b` of class `A`, whichever the module has."""
    from mutmut.mutation.trampoline_templates import mangle_function_name
    from mutmut.utils.format_utils import get_mutant_name

    out: dict[str, list[str]] = {}
    for site in sites:
        if not site.mutable:
            continue
        parts = site.qualname.split(".")
        mangled = [mangle_function_name(name=parts[0], class_name=None)]
        if len(parts) > 1:
            mangled.append(mangle_function_name(name=parts[1], class_name=parts[0]))
        for name in mangled:
            out.setdefault(get_mutant_name(Path(site.file), name), []).append(site.id)
    return out


@contextlib.contextmanager
def settings(folder: Path) -> Iterator[None]:
    """`folder`'s setup.cfg is mutmut's settings for the block (and mutmut forgets them after)."""
    from mutmut.configuration import reset_config
    from mutmut.utils.file_utils import change_cwd

    with change_cwd(folder):
        reset_config()
        try:
            yield
        finally:
            reset_config()
