"""Which site and operator each mutmut mutant is: by the position of the call it changes.

mutmut's own generator, run here with the same operators anchored on the same sites
(`mutations.engine.naming`), gives every mutant mutmut makes, under mutmut's name for it. The site is
the discovered one whose call starts where the mutant's changed call starts (line and column in the
pristine file): naming re-derives nothing discovery already knew. A mutant whose call is no
discovered site's is kept, marked unattributed with the reason, and reported as such (the run goes
on: it is a bug of the site rule, shown, not an abort).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper
from warnonce_guard.common.errors import BadRecord, MutantsUnaccounted
from warnonce_guard.common.files import write_atomic
from warnonce_guard.mutations.engine import naming
from warnonce_guard.mutations.operators import anchors_of, operator_of
from warnonce_guard.mutations.workspace import Workspace
from warnonce_guard.rule.site_rule import log_method, walk
from warnonce_guard.rule.sites import Site, interrupts_kept, positions
from warnonce_guard.rule.target import PACKAGE


@dataclass(frozen=True)
class MutantIdentity:
    mutant_id: str
    site: Site  # the discovered site, or for an unattributed mutant a stand-in at its call's position
    operator: str
    original: str  # the call's source before
    replacement: str  # and after
    unattributed: str = ""  # why no discovered site explains the mutant ("" when one does)

    def named(self) -> NamedMutant:
        orphan = self.site.to_json() if self.unattributed else None
        return NamedMutant(
            self.mutant_id, self.site.id, self.operator, self.original, self.replacement, self.unattributed, orphan
        )


@dataclass(frozen=True)
class NamedMutant:
    """A mutant as identities.json stores it: mutmut's name, its site's id, the operator and the text change."""

    mutant_id: str
    site_id: str
    operator: str
    original: str
    replacement: str
    unattributed: str = ""  # why no discovered site explains it
    orphan: dict[str, Any] | None = None  # the stand-in site of an unattributed mutant

    @property
    def orphan_site(self) -> Site | None:
        return Site.from_json(self.orphan) if self.orphan is not None else None

    @classmethod
    def from_json(cls, data: Any) -> NamedMutant:
        if not isinstance(data, dict) or set(data) != _NAMED_FIELDS:
            raise BadRecord("not a named mutant")
        orphan = data["orphan"]
        if not all(isinstance(data[k], str) for k in _NAMED_FIELDS - {"orphan"}) or not (
            orphan is None or isinstance(orphan, dict)
        ):
            raise BadRecord("a named mutant's field has the wrong type")
        return cls(**data)


_NAMED_FIELDS = frozenset(
    {"mutant_id", "site_id", "operator", "original", "replacement", "unattributed", "orphan"}
)


def changed_call(original: cst.CSTNode, mutated: cst.CSTNode) -> tuple[cst.Call, cst.Call] | None:
    """The first logger call (pre-order) that differs between a mutation's original and mutated nodes."""
    for before, after in zip(walk(original), walk(mutated), strict=False):
        if isinstance(before, cst.Call) and log_method(before) is not None and not before.deep_equals(after):
            return before, after if isinstance(after, cst.Call) else before
        if type(before) is not type(after):
            return None
    return None


def identify_file(
    source: str, file: str, sites: list[Site], packages: Sequence[str] = (PACKAGE,)
) -> list[MutantIdentity]:
    """Every mutant mutmut makes of one site file, named as mutmut names it (same operators, same anchors)."""
    anchors = anchors_of(sites)
    with interrupts_kept():  # mutmut's generator records positions with libcst too
        module, generated = naming.generate(file, source, packages, anchors)
    where_is = positions(MetadataWrapper(module, unsafe_skip_copy=True))
    at = {(site.line, site.column): site for site in sites if site.file == file and site.mutable}
    found: list[MutantIdentity] = []
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
        site = at.get((where.start.line, where.start.column))
        qualname = mutation.qualname
        why = "" if site is not None else f"{file}:{where.start.line}: {qualname} changes a call no discovered site has"
        if site is None:
            site = _stand_in(file, qualname, where, call)
        identity = MutantIdentity(mutation.mutant_id, site, operator, "", "", why)
        found.append(_with_exact_text(identity, source, where, call, mutated_call, module, mutation))
    return found


def _stand_in(file: str, qualname: str, where: CodeRange, call: cst.Call) -> Site:
    """A site record at an unattributed mutant's call, so that the report can show it where it is."""
    module = ".".join(Path(file).with_suffix("").parts)
    return Site(
        file=file,
        module=module,
        qualname=qualname,
        kernel_module=f"unattributed@{where.start.line}",
        occurrence=0,
        line=where.start.line,
        end_line=where.end.line,
        column=where.start.column,
        end_column=where.end.column,
        import_line=where.start.line,
        log_method=log_method(call) or "",
        form="unknown",
        exc_name="",
        message=None,
        message_source="",
        args=(),
        exc_arg_index=-1,
        receiver="",
    )


def _offset(source: str, line: int, column: int) -> int:
    lines = source.splitlines(keepends=True)
    return sum(len(text) for text in lines[: line - 1]) + column


def _with_exact_text(
    identity: MutantIdentity,
    source: str,
    where: CodeRange,
    call: cst.Call,
    mutated_call: cst.Call,
    module: cst.Module,
    mutation: naming.Generated,
) -> MutantIdentity:
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
        return replace(identity, original=before, replacement=empty.code_for_node(mutated_call).replace("\n", indent))
    mutated_source = module.deep_replace(mutation.original, mutation.mutated).code
    tail = len(source) - end
    if source[:start] != mutated_source[:start] or source[end:] != mutated_source[len(mutated_source) - tail :]:
        raise MutantsUnaccounted(f"{identity.mutant_id}: the mutant changes code outside its call")
    return replace(identity, original=before, replacement=mutated_source[start : len(mutated_source) - tail])


def write_identities(ws: Workspace, sites: list[Site], packages: Sequence[str]) -> list[NamedMutant]:
    """Name every mutant of the workspace into identities.json (kept while it validates: same ws, same mutants)."""
    with contextlib.suppress(BadRecord):
        return read_identities(ws)
    named: list[NamedMutant] = []
    with naming.settings(ws.dir):  # mutmut's generator reads its settings from the workspace's setup.cfg
        for file in sorted({site.file for site in sites if site.cached}):
            source = (ws.dir / file).read_text(encoding="utf-8")
            named += [identity.named() for identity in identify_file(source, file, sites, packages)]
    write_atomic(ws.identities_file, json.dumps([asdict(n) for n in named], indent=1))
    return named


def read_identities(ws: Workspace) -> list[NamedMutant]:
    """The named mutants of a workspace; `BadRecord` if the file is missing or does not validate."""
    if not ws.identities_file.is_file():
        raise BadRecord("missing")
    try:
        data = json.loads(ws.identities_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise BadRecord("not valid JSON") from None
    if not isinstance(data, list):
        raise BadRecord("not a list of named mutants")
    return [NamedMutant.from_json(item) for item in data]
