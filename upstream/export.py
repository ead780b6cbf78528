"""`warnonce-guard export-test`: the module (or a patch adding it) to stdout or `--out`, or `--check` of a file.

`--out` writes only a new file or an earlier export (its header says so: `render.MARKER`), through a symlink to
its target, whole (a temporary sibling renamed over it); anything else is refused before discovery starts.
`--check FILE` compares FILE with what an export writes now and says, in one line, the first thing that differs
by case (a site new, gone or moved) or that the text alone differs.
"""

from __future__ import annotations

import ast
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from warnonce_guard.common.errors import PathRefused, PathUnusable
from warnonce_guard.common.files import write_atomic
from warnonce_guard.upstream.words import MARKER

if TYPE_CHECKING:
    from warnonce_guard.upstream.cases import Case, Export

_HEAD_LINES = 8  # the marker is within a file's (or a patch's) first lines
_HEAD_BYTES = 4096


def destination(path: Path) -> Path:
    """Where writing `path` lands: the final target of a symlink (of a chain of them), else `path`."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _head(path: Path) -> str:
    with path.open("rb") as file:
        return file.read(_HEAD_BYTES).decode("utf-8", errors="replace")


def is_export(head: str, marker: str = MARKER) -> bool:
    """Whether a text's first lines carry our header (a patch's as added lines); `marker`: export-fix's."""
    return any(line.removeprefix("+").startswith(marker) for line in head.splitlines()[:_HEAD_LINES])


def _regular_file(path: Path, option: str) -> bool:
    """Whether `path` is a regular file (False: nothing there); `PathUnusable` for anything else."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return False
    except OSError as err:
        raise PathUnusable(f"{option} {path}: {err.strerror or err}; pass another path") from None
    if stat.S_ISDIR(mode):
        raise PathUnusable(f"{option} {path}: a directory; pass the path of the file to write")
    if not stat.S_ISREG(mode):
        raise PathUnusable(f"{option} {path}: not a regular file; pass the path of a file")
    return True


def check_out(out: Path, marker: str = MARKER) -> Path:
    """The file `--out` writes (a symlink's target), refused before any work unless it is new or ours (its first
    lines carry `marker`)."""
    target = destination(out)
    shown = f"{out} (-> {target})" if target != out else str(out)
    if _regular_file(target, "--out"):
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
    if not _regular_file(target, "--check"):
        raise PathUnusable(f"--check {path}: no such file; pass an exported module")
    try:
        text = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise PathUnusable(f"--check {path}: cannot read it ({err})") from None
    if marker is not None and not is_export(text[:_HEAD_BYTES], marker):
        raise PathUnusable(f"--check {path}: not an export (no `{marker}` header); pass a file export-test wrote")
    return text


@dataclass(frozen=True)
class Listed:
    """A case as an exported file lists it."""

    id: str
    site: str
    kernel: str


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
            assert isinstance(param, ast.Call)
            site, _, kernel = (ast.literal_eval(arg) for arg in param.args[:3])
            (ident,) = (ast.literal_eval(k.value) for k in param.keywords if k.arg == "id")
            found.append(Listed(ident, site, kernel))
    except (AssertionError, ValueError, TypeError):
        return None
    return found


def difference(text: str, wanted: str, export: Export) -> str | None:
    """What differs between an exported file's text and what an export writes now, in one line; None if nothing."""
    if text == wanted:
        return None
    listed = listed_cases(text)
    if listed is None:
        return "its case table cannot be read; re-export"
    old = {case.id: case for case in listed}
    new: dict[str, Case] = {case.id: case for case in export.cases}
    changes = [f"{case.site} `{case.kernel}` is new" for ident, case in new.items() if ident not in old]
    changes += [f"{case.site} `{case.kernel}` is gone" for ident, case in old.items() if ident not in new]
    changes += [
        f"{old[ident].site} `{case.kernel}` moved to {case.site}"
        for ident, case in new.items()
        if ident in old and old[ident].site != case.site
    ]
    if not changes:
        return "its text differs from a fresh export (the same cases); re-export"
    return f"{', '.join(changes)}; re-export"
