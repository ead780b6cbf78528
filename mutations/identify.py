"""Which site and operator each mutmut mutant is: by the position of the call it changes.

A mutant whose call is no discovered site's is kept, marked unattributed with the reason.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warnonce_guard.common.errors import BadRecord
from warnonce_guard.common.files import write_atomic
from warnonce_guard.mutations.engine import state
from warnonce_guard.mutations.workspace import Workspace
from warnonce_guard.rule.site_row import Site

if TYPE_CHECKING:  # libcst: a run that reads its verdicts back imports neither
    from warnonce_guard.mutations.engine import naming


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


_NAMED_FIELDS = frozenset(field.name for field in fields(NamedMutant))


def attribute(file: str, made: Sequence[naming.Made], sites: list[Site]) -> list[MutantIdentity]:
    """Each mutant made of one site file, as the discovered site whose call starts where the mutant's changed call
    starts; a mutant no site explains is kept, at a stand-in site, with the reason."""
    at = {(site.line, site.column): site for site in sites if site.file == file and site.mutable}
    found: list[MutantIdentity] = []
    for mutant in made:
        site = at.get((mutant.line, mutant.column))
        why = "" if site else f"{file}:{mutant.line}: {mutant.qualname} changes a call no discovered site has"
        site = site or _stand_in(file, mutant)
        found.append(MutantIdentity(mutant.mutant_id, site, mutant.operator, mutant.original, mutant.replacement, why))
    return found


def _stand_in(file: str, mutant: naming.Made) -> Site:
    """A site record at an unattributed mutant's call, so that the report can show it where it is."""
    module = ".".join(Path(file).with_suffix("").parts)
    return Site(
        file=file,
        module=module,
        qualname=mutant.qualname,
        kernel_module=f"unattributed@{mutant.line}",
        line=mutant.line,
        end_line=mutant.end_line,
        column=mutant.column,
        end_column=mutant.end_column,
        import_line=mutant.line,
        log_method=mutant.log_method,
        form="unknown",
        exc_name="",
        message=None,
        message_source="",
        args=(),
        exc_arg_index=-1,
        receiver="",
    )


def write_identities(ws: Workspace, sites: list[Site], packages: Sequence[str]) -> list[NamedMutant]:
    """Name every mutant of the workspace into identities.json (kept while it validates: same ws, same mutants),
    from what the session's generator described of each file as mutmut made it (`Workspace.made`); a file it left
    undescribed (or described in a file that does not validate) is generated again here."""
    with contextlib.suppress(BadRecord):
        return read_identities(ws)
    from warnonce_guard.mutations.engine import naming
    from warnonce_guard.mutations.operators import anchors_of, site_lines

    named: list[NamedMutant] = []
    anchors, lines = anchors_of(sites), site_lines(sites)  # as the session's generator walked each file
    for file in sorted({site.file for site in sites if site.cached}):
        source = (ws.dir / file).read_text(encoding="utf-8")
        try:
            made = naming.read_made(ws.made(file), source)
        except BadRecord:
            with naming.settings(ws.dir):  # mutmut's generator reads its settings from the workspace's setup.cfg
                made = naming.made_here(file, source, packages, anchors, lines.get(file, ()))
        named += [identity.named() for identity in attribute(file, made, sites)]
    write_atomic(ws.identities_file, json.dumps([asdict(n) for n in named], indent=1))
    return named


def read_identities(ws: Workspace) -> list[NamedMutant]:
    """The named mutants of a workspace; `BadRecord` if the file is missing or does not validate."""
    data = state.load_json(ws.identities_file)
    if not isinstance(data, list):
        raise BadRecord("not a list of named mutants")
    return [NamedMutant.from_json(item) for item in data]
