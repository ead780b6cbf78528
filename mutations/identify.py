"""Which site and operator each mutmut mutant is, by re-running mutmut's own generator under our seam.

mutmut names a mutant `<module>.<mangled function>__mutmut_<n>`, numbering the mutations of one
function in the order its generator yields them. Running the same generator (`create_mutations`) with
the same operators reproduces that order, so mutant n is the n-th mutation of its function.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import libcst as cst

from guards.errors import ExitCode, GuardError
from guards.sites import (
    DEFAULT_KERNEL_PATTERN,
    Site,
    handler_name,
    kernel_import,
    log_method,
    logging_calls,
    walk,
)
from mutations.engine.state import BadState, write_atomic
from mutations.operators import PACKAGE, operator_of
from mutations.seam import our_operators
from mutations.workspace import Workspace


class MutantsUnaccounted(GuardError):
    """A mutant mutmut made that no site and operator explain (or the other way round)."""

    exit_code = ExitCode.MUTANTS_UNACCOUNTED


@dataclass(frozen=True)
class MutantIdentity:
    mutant_id: str
    site: Site
    operator: str
    original: str  # the call's source before
    replacement: str  # and after

    def named(self) -> NamedMutant:
        return NamedMutant(self.mutant_id, self.site.id, self.operator, self.original, self.replacement)


@dataclass(frozen=True)
class NamedMutant:
    """A mutant as identities.json stores it: mutmut's name, its site's id, the operator and the text change."""

    mutant_id: str
    site_id: str
    operator: str
    original: str
    replacement: str

    @classmethod
    def from_json(cls, data: Any) -> NamedMutant:
        if not isinstance(data, dict) or set(data) != _NAMED_FIELDS:
            raise BadState("not a named mutant")
        if not all(isinstance(v, str) for v in data.values()):
            raise BadState("a named mutant's field is not text")
        return cls(**data)


_NAMED_FIELDS = frozenset({"mutant_id", "site_id", "operator", "original", "replacement"})


def _calls(node: cst.CSTNode, package: str, pattern: str) -> Iterator[cst.Call]:
    """Cached logging calls at kernel-import sites under `node`, in source order (as discovery sees them)."""
    if isinstance(node, cst.Try) and kernel_import(node, package, package, pattern):
        for handler in node.handlers:
            name = handler_name(handler)
            if name:
                yield from logging_calls(handler, name)
    for child in node.children:
        yield from _calls(child, package, pattern)


def _function_key(function: cst.FunctionDef, module: cst.Module) -> tuple[str | None, str]:
    for stmt in module.body:
        if (
            isinstance(stmt, cst.ClassDef)
            and isinstance(stmt.body, cst.IndentedBlock)
            and any(child is function for child in stmt.body.body)
        ):
            return stmt.name.value, function.name.value
    return None, function.name.value


def identify_file(
    source: str,
    file: str,
    sites: list[Site],
    packages: Sequence[str] = (PACKAGE,),
    pattern: str = DEFAULT_KERNEL_PATTERN,
) -> list[MutantIdentity]:
    """Every mutant mutmut makes of one site file, named as mutmut names it (same operator table)."""
    from mutmut.mutation.file_mutation import create_mutations
    from mutmut.mutation.trampoline_templates import mangle_function_name
    from mutmut.utils.format_utils import get_mutant_name

    with our_operators(packages, pattern):
        module, mutations, _, _ = create_mutations(file, source)
    numbering: dict[int, int] = {}
    found: list[MutantIdentity] = []
    for mutation in mutations:
        function = mutation.contained_by_top_level_function
        if not isinstance(function, cst.FunctionDef):
            raise MutantsUnaccounted(f"{file}: a mutation outside any function or method; mutmut cannot run it")
        class_name, name = _function_key(function, module)
        numbering[id(function)] = numbering.get(id(function), 0) + 1
        mangled = mangle_function_name(name=name, class_name=class_name)
        mutant_id = get_mutant_name(Path(file), f"{mangled}__mutmut_{numbering[id(function)]}")
        package = next(p for p in packages if kernel_import(mutation.original_node, p, p, pattern))
        identity = _identity(mutant_id, mutation, function, class_name, file, sites, package, pattern)
        found.append(_with_exact_text(identity, source, module, mutation))
    return found


def _offset(source: str, line: int, column: int) -> int:
    lines = source.splitlines(keepends=True)
    return sum(len(text) for text in lines[: line - 1]) + column


def _with_exact_text(identity: MutantIdentity, source: str, module: cst.Module, mutation: object) -> MutantIdentity:
    """The call's exact text before and after, indentation as in the file.

    The calls were rendered on their own, so lines inside a multi-line call lack the block's indentation;
    putting it back is exact when it reproduces the original text. Otherwise (an unusual layout) the whole
    mutated module is rendered and cut, which is exact but costs a module copy per mutant.
    """
    site = identity.site
    start, end = _offset(source, site.line, site.column), _offset(source, site.end_line, site.end_column)
    line = source.splitlines()[site.line - 1]
    indent = line[: len(line) - len(line.lstrip())]
    if identity.original.replace("\n", "\n" + indent) == source[start:end]:
        return replace(
            identity, original=source[start:end], replacement=identity.replacement.replace("\n", "\n" + indent)
        )
    mutated_source = module.deep_replace(mutation.original_node, mutation.mutated_node).code  # type: ignore[attr-defined]
    tail = len(source) - end
    if source[:start] != mutated_source[:start] or source[end:] != mutated_source[len(mutated_source) - tail :]:
        raise MutantsUnaccounted(f"{identity.mutant_id}: the mutant changes code outside its site's call")
    return replace(identity, original=source[start:end], replacement=mutated_source[start : len(mutated_source) - tail])


def _identity(
    mutant_id: str,
    mutation: object,
    function: cst.FunctionDef,
    class_name: str | None,
    file: str,
    sites: list[Site],
    package: str,
    pattern: str,
) -> MutantIdentity:
    original, mutated = mutation.original_node, mutation.mutated_node  # type: ignore[attr-defined]
    operator = operator_of(original, mutated, package, pattern)
    before = list(_calls(original, package, pattern))
    after = [n for n in walk(mutated) if isinstance(n, cst.Call) and log_method(n)]
    empty = cst.Module([])
    changed = next((i for i, call in enumerate(before) if i >= len(after) or not call.deep_equals(after[i])), None)
    if operator is None or changed is None:
        raise MutantsUnaccounted(f"{mutant_id}: no operator or changed call explains this mutant")
    call = before[changed]
    kernel = kernel_import(original, package, package, pattern)
    in_function = [c for c in _calls(function, package, pattern) if _kernel_of(c, function, package, pattern) == kernel]
    occurrence = next(i for i, c in enumerate(in_function) if c is call)
    qualname = f"{class_name}.{function.name.value}" if class_name else function.name.value
    site = next(
        (
            s
            for s in sites
            if (s.file, s.qualname, s.kernel_module, s.occurrence) == (file, qualname, kernel, occurrence)
        ),
        None,
    )
    if site is None:
        raise MutantsUnaccounted(f"{mutant_id}: mutates {qualname} ({kernel} #{occurrence}), not a discovered site")
    return MutantIdentity(mutant_id, site, operator, empty.code_for_node(call), empty.code_for_node(after[changed]))


def _kernel_of(call: cst.Call, function: cst.FunctionDef, package: str, pattern: str) -> str | None:
    """The kernel module of the innermost kernel-import `try` whose handler holds `call`."""
    owner = None
    for node in walk(function):
        if (
            isinstance(node, cst.Try)
            and kernel_import(node, package, package, pattern)
            and any(n is call for handler in node.handlers for n in walk(handler))
        ):
            owner = node
    return kernel_import(owner, package, package, pattern) if owner is not None else None



def write_identities(ws: Workspace, sites: list[Site], packages: Sequence[str]) -> list[NamedMutant]:
    """Name every mutant of the workspace into identities.json (kept while it validates: same ws, same mutants)."""
    from mutmut.configuration import reset_config
    from mutmut.utils.file_utils import change_cwd

    with contextlib.suppress(BadState):
        return read_identities(ws)
    named: list[NamedMutant] = []
    with change_cwd(ws.dir):  # mutmut's generator reads its settings from the work directory's setup.cfg
        reset_config()
        try:
            for file in sorted({site.file for site in sites if site.cached}):
                source = (ws.dir / file).read_text(encoding="utf-8")
                named += [identity.named() for identity in identify_file(source, file, sites, packages)]
        finally:
            reset_config()
    write_atomic(ws.identities_file, json.dumps([asdict(n) for n in named], indent=1))
    return named


def read_identities(ws: Workspace) -> list[NamedMutant]:
    """The named mutants of a workspace; `BadState` if the file is missing or does not validate."""
    if not ws.identities_file.is_file():
        raise BadState("missing")
    try:
        data = json.loads(ws.identities_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise BadState("not valid JSON") from None
    if not isinstance(data, list):
        raise BadState("not a list of named mutants")
    return [NamedMutant.from_json(item) for item in data]
