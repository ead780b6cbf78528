"""`warnonce-guard export-test`: the module (or a patch adding it) to stdout or `--out`, or `--check` of a file.

`--out` writes only a new file or an earlier export (its header says so: `render.MARKER`), through a symlink to
its target, whole (a temporary sibling renamed over it); anything else is refused before discovery starts.
`--check FILE` compares FILE with what an export writes now and says, in one line, each case (by id) new, gone or
changed (which of its values), or that the text differs outside the cases.
"""

from __future__ import annotations

import ast
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from warnonce_guard.common.errors import PathRefused, PathUnusable
from warnonce_guard.common.files import destination, regular_file, write_atomic
from warnonce_guard.upstream.words import MARKER

_HEAD_LINES = 8  # the marker is within a file's (or a patch's) first lines
_HEAD_BYTES = 4096


def _head(path: Path) -> str:
    with path.open("rb") as file:
        return file.read(_HEAD_BYTES).decode("utf-8", errors="replace")


def is_export(head: str, marker: str = MARKER) -> bool:
    """Whether a text's first lines carry our header (a patch's as added lines); `marker`: export-fix's."""
    return any(line.removeprefix("+").startswith(marker) for line in head.splitlines()[:_HEAD_LINES])


def check_out(out: Path, marker: str = MARKER) -> Path:
    """The file `--out` writes (a symlink's target), refused before any work unless it is new or ours (its first
    lines carry `marker`)."""
    target = destination(out)
    shown = f"{out} (-> {target})" if target != out else str(out)
    if regular_file(target, "--out"):
        try:
            ours = is_export(_head(target), marker)
        except OSError as err:
            raise PathUnusable(f"--out {shown}: cannot read it ({err.strerror or err})") from None
        if not ours:
            raise PathRefused(
                f"--out {shown}: not an earlier export (no `{marker}` header); pass a new path or move it away"
            )
    elif not target.parent.is_dir():
        raise PathUnusable(f"--out {shown}: {target.parent} is not a directory; pass a path in an existing one")
    if not os.access(target.parent, os.W_OK | os.X_OK):
        raise PathUnusable(f"--out {shown}: {target.parent} is not writable; pass a path on a writable disk")
    return target


def write(target: Path, text: str) -> None:
    """Write the file whole (its mode kept when it is replaced)."""
    try:
        mode = stat.S_IMODE(target.stat().st_mode) if target.is_file() else None
        write_atomic(target, text)
        if mode is not None:
            os.chmod(target, mode)
    except OSError as err:
        raise PathUnusable(f"--out {target}: cannot write it ({err.strerror or err})") from None


def read_check(path: Path, marker: str | None = MARKER) -> str:
    """The text of a `--check` FILE: an earlier export (`PathUnusable` for a missing file or another's); with
    `marker` None, any UTF-8 text file (export-fix checks a patched module too, which carries no header)."""
    target = destination(path)
    if not regular_file(target, "--check"):
        raise PathUnusable(f"--check {path}: no such file; pass an exported module")
    try:
        text = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise PathUnusable(f"--check {path}: cannot read it ({err})") from None
    if marker is not None and not is_export(text[:_HEAD_BYTES], marker):
        raise PathUnusable(f"--check {path}: not an export (no `{marker}` header); pass a file export-test wrote")
    return text


# What each argument of a case's `pytest.param(...)` is, in the order the module's parametrize names them.
CASE_FIELDS = ("site", "call", "kernel", "warning", "steer")


@dataclass(frozen=True)
class Listed:
    """A case as an exported file lists it: its id, site and kernel, and every argument as source (`CASE_FIELDS`)."""

    id: str
    site: str
    kernel: str
    values: tuple[str, ...] = ()


def listed_cases(text: str) -> list[Listed] | None:
    """The cases of an exported module's `CASES` (or a patch's): None when the table cannot be read."""
    if text.startswith("diff --git"):
        text = "\n".join(line[1:] for line in text.splitlines() if line.startswith("+") and not line.startswith("+++"))
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    table = next(
        (
            node.value
            for node in tree.body
            if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["CASES"]
        ),
        None,
    )
    if not isinstance(table, ast.List):
        return None
    found = []
    try:
        for param in table.elts:
            assert isinstance(param, ast.Call) and len(param.args) == len(CASE_FIELDS)
            site, _, kernel = (ast.literal_eval(arg) for arg in param.args[:3])
            (ident,) = (ast.literal_eval(k.value) for k in param.keywords if k.arg == "id")
            found.append(Listed(ident, site, kernel, tuple(ast.unparse(arg) for arg in param.args)))
    except (AssertionError, ValueError, TypeError):
        return None
    return found


def _changed(old: Listed, new: Listed) -> str:
    """What differs between two listings of one case: `its site (a.py:1 -> a.py:2), its warning`."""
    fields = [name for name, was, now in zip(CASE_FIELDS, old.values, new.values, strict=True) if was != now]
    return ", ".join(f"its site ({old.site} -> {new.site})" if name == "site" else f"its {name}" for name in fields)


def difference(text: str, wanted: str) -> str | None:
    """What differs between an exported file's text and what an export writes now (`wanted`), in one line naming
    each case new, gone or changed by its id; None if nothing."""
    if text == wanted:
        return None
    listed = listed_cases(text)
    if listed is None:
        return "its case table cannot be read; re-export"
    old = {case.id: case for case in listed}
    new = {case.id: case for case in listed_cases(wanted) or []}
    changes = [f"case {ident} is new ({case.site})" for ident, case in new.items() if ident not in old]
    changes += [f"case {ident} is gone ({case.site})" for ident, case in old.items() if ident not in new]
    changes += [
        f"case {ident} changed: {_changed(old[ident], case)}"
        for ident, case in new.items()
        if ident in old and old[ident].values != case.values
    ]
    if not changes:
        return "its text differs from a fresh export outside its cases; re-export"
    return f"{'; '.join(changes)}; re-export"
