"""mutmut's own generator and names, for naming mutants in our process (mutmut 3.8.1's internals).

`generate` runs mutmut's `create_mutations` on one file with our operators in (the same table the
session uses), and names each mutation as mutmut does: `<module>.<mangled function>__mutmut_<n>`,
n counting the mutations of one function in the order the generator yields them. `settings` makes a
workspace's setup.cfg current, as mutmut's generator reads its settings from the current directory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import libcst as cst
from warnonce_guard.mutations.engine.seam import our_operators
from warnonce_guard.mutations.operators import Anchors
from warnonce_guard.rule.sites import Site


@dataclass(frozen=True)
class Generated:
    """One mutation mutmut makes: its name, the function it is in, and the node before and after."""

    mutant_id: str
    qualname: str  # Class.method, a module function's name, or <module>
    original: cst.CSTNode
    mutated: cst.CSTNode


def _function_key(function: cst.FunctionDef, module: cst.Module) -> tuple[str | None, str]:
    for stmt in module.body:
        if (
            isinstance(stmt, cst.ClassDef)
            and isinstance(stmt.body, cst.IndentedBlock)
            and any(child is function for child in stmt.body.body)
        ):
            return stmt.name.value, function.name.value
    return None, function.name.value


def generate(
    file: str, source: str, packages: Sequence[str], anchors: Anchors | None
) -> tuple[cst.Module, list[Generated]]:
    """mutmut's module and mutations of one file, with our operators in, each with mutmut's name for it."""
    from mutmut.mutation.file_mutation import create_mutations
    from mutmut.mutation.trampoline_templates import mangle_function_name
    from mutmut.utils.format_utils import get_mutant_name

    with our_operators(packages, anchors):
        module, mutations, _, _ = create_mutations(file, source)
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
    return module, out


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
