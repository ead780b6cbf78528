"""mutmut's state in a workspace, read back with suspicion: validated, and discarded when it does not validate.

mutmut writes its `.meta` files in place; the session writes them atomically, and a `generation.json` manifest
once every mutant is made; `validate` discards what does not match it, `reset` clears exit codes no record backs.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warnonce_guard.common.errors import BadRecord
from warnonce_guard.common.files import write_atomic
from warnonce_guard.mutations.engine import layout
from warnonce_guard.mutations.workspace import Workspace

# A `.meta` document's keys (mutmut 3.8.1's), each to the attribute of mutmut's SourceFileMutationData it saves.
META_ATTRIBUTES = {
    "exit_code_by_key": "exit_code_by_key",
    "hash_by_function_name": "hash_by_function_name",
    "type_check_error_by_key": "type_check_error_by_key",
    "durations_by_key": "durations_by_key",
    "estimated_durations_by_key": "estimated_time_of_tests_by_mutant",
}
META_KEYS = frozenset(META_ATTRIBUTES)

# mutmut-stats.json: what mutmut 3.8.1's save_stats writes; its load_stats needs the first three and
# crashes on anything else (a KeyError, or an assertion on a key it does not know), run after run.
STATS_REQUIRED = frozenset({"tests_by_mangled_function_name", "duration_by_test", "stats_time"})
NO_TESTS_CODE = 33  # mutmut's exit code for a mutant whose function no test reaches (mutmut.stats)
STATS_KEYS = STATS_REQUIRED | {
    "function_hashes",
    "function_dependencies",
    "config_fingerprint",
    "watched_file_hashes",
    "git_commit",
}


@dataclass(frozen=True)
class Meta:
    """The part of a `.meta` file a verdict needs."""

    exit_codes: dict[str, int | None]
    durations: dict[str, float]


@dataclass(frozen=True)
class Discarded:
    """A piece of state thrown away, and why (printed as one line)."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"discarded {self.path} ({self.reason})"


def load_json(path: Path) -> Any:
    """A JSON file's data; `BadRecord` if it is missing, not UTF-8, empty or not JSON (another OSError passes)."""
    if not path.is_file():
        raise BadRecord("missing")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise BadRecord("not UTF-8 text") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise BadRecord("empty" if not text.strip() else f"not valid JSON: {err.msg}") from None


def parse_meta(data: Any) -> Meta:
    """Validate a `.meta` document (mutmut 3.8.1's keys and types)."""
    if not isinstance(data, dict) or set(data) != META_KEYS:
        raise BadRecord("not a mutmut 3.8.1 .meta document")
    codes, durations = data["exit_code_by_key"], data["durations_by_key"]
    if not isinstance(codes, dict) or not all(
        isinstance(k, str) and (v is None or type(v) is int) for k, v in codes.items()
    ):
        raise BadRecord("exit_code_by_key is not a map of mutant names to exit codes")
    if not isinstance(durations, dict) or not all(
        isinstance(k, str) and isinstance(v, (int, float)) for k, v in durations.items()
    ):
        raise BadRecord("durations_by_key is not a map of mutant names to seconds")
    return Meta(dict(codes), {k: float(v) for k, v in durations.items()})


def parse_stats(data: Any) -> None:
    """Validate a `mutmut-stats.json` document (mutmut 3.8.1's keys and the types its loader relies on)."""
    if not isinstance(data, dict) or not set(data) >= STATS_REQUIRED or not set(data) <= STATS_KEYS:
        raise BadRecord("not a mutmut 3.8.1 stats document")
    if not isinstance(data["tests_by_mangled_function_name"], dict) or not isinstance(data["duration_by_test"], dict):
        raise BadRecord("not a mutmut 3.8.1 stats document")


def read_meta(ws: Workspace, file: str) -> Meta:
    """The `.meta` of one site file; `BadRecord` if it is missing or does not validate."""
    return parse_meta(load_json(layout.meta(ws, file)))


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_generation(ws: Workspace, run: str, files: Iterable[str]) -> None:
    """Record what mutmut generated for each site file (called in the session, after generation)."""
    entry = {
        file: {"sha256": file_digest(layout.mutated(ws, file)), "mutants": sorted(read_meta(ws, file).exit_codes)}
        for file in sorted(files)
    }
    write_atomic(ws.generation_file, json.dumps({"run": run, "files": entry}, indent=1))


def read_generation(ws: Workspace) -> tuple[str, dict[str, dict[str, Any]]]:
    """(run id, per-file entries) of the generation manifest; `BadRecord` if missing or invalid."""
    data = load_json(ws.generation_file)
    if not isinstance(data, dict) or not isinstance(data.get("run"), str) or not isinstance(data.get("files"), dict):
        raise BadRecord("not a generation manifest")
    files = data["files"]
    for file, entry in files.items():
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("sha256"), str)
            or not isinstance(entry.get("mutants"), list)
        ):
            raise BadRecord(f"bad entry for {file}")
    return data["run"], files


def _mutmut_owns(ws: Workspace, file: str) -> bool:
    """mutmut has written its own copy of the site file (not a hard link to the pristine copy)."""
    mutated = layout.mutated(ws, file)
    pristine = ws.dir / file
    return mutated.is_file() and not (pristine.exists() and os.path.samefile(mutated, pristine))


def _problem(ws: Workspace, file: str, generation: dict[str, dict[str, Any]] | None) -> tuple[Path, str] | None:
    owned, has_meta = _mutmut_owns(ws, file), layout.meta(ws, file).exists()
    if not owned and not has_meta:
        return None  # never generated: nothing to check
    if not owned:
        return layout.meta(ws, file), "its mutants file is missing"
    if generation is None or file not in generation:
        return layout.mutated(ws, file), "mutant generation did not finish"
    try:
        meta = read_meta(ws, file)
    except BadRecord as err:
        return layout.meta(ws, file), str(err)
    entry = generation[file]
    if file_digest(layout.mutated(ws, file)) != entry["sha256"]:
        return layout.mutated(ws, file), "it differs from what mutmut generated"
    if sorted(meta.exit_codes) != entry["mutants"]:
        return layout.meta(ws, file), "its mutants differ from what mutmut generated"
    return None


def validate(ws: Workspace, files: Iterable[str]) -> list[Discarded]:
    """Discard the mutmut state of every site file that does not match the generation manifest."""
    try:
        _, generation = read_generation(ws)
    except BadRecord:
        generation = None
    discarded = []
    for file in sorted(set(files)):
        problem = _problem(ws, file, generation)
        if problem is None:
            continue
        discarded.append(Discarded(*problem))
        for path in (layout.mutated(ws, file), layout.meta(ws, file), layout.spans(ws, file)):
            path.unlink(missing_ok=True)
    if layout.stats(ws).exists():
        try:
            parse_stats(load_json(layout.stats(ws)))
        except BadRecord as err:
            discarded.append(Discarded(layout.stats(ws), str(err)))
            layout.stats(ws).unlink()
    if discarded:
        ws.generation_file.unlink(missing_ok=True)
        ws.identities_file.unlink(missing_ok=True)
    return discarded


def read_exit_codes(ws: Workspace, files: Iterable[str]) -> tuple[dict[str, int | None], dict[str, float]]:
    """Every mutant's exit code and duration, from validated `.meta` files (`BadRecord` names the bad one)."""
    codes: dict[str, int | None] = {}
    durations: dict[str, float] = {}
    for file in sorted(set(files)):
        try:
            meta = read_meta(ws, file)
        except BadRecord as err:
            raise BadRecord(f"{layout.meta(ws, file)}: {err}") from None
        codes.update(meta.exit_codes)
        durations.update(meta.durations)
    return codes, durations


def reset(ws: Workspace, files: Iterable[str], mutants: Mapping[str, object]) -> int:
    """Clear the exit codes of `mutants` (mutmut tests them again); returns how many were cleared."""
    cleared = 0
    for file in sorted(set(files)):
        path = layout.meta(ws, file)
        data = load_json(path)
        parse_meta(data)
        codes = data["exit_code_by_key"]
        hit = [name for name in codes if name in mutants and codes[name] is not None]
        if not hit:
            continue
        for name in hit:
            codes[name] = None
            data["durations_by_key"].pop(name, None)
        write_atomic(path, json.dumps(data, indent=4))
        cleared += len(hit)
    return cleared


def mark_untested(ws: Workspace, files: Iterable[str]) -> int:
    """Give every mutant of `files` without an exit code mutmut's own for one no test reaches (`NO_TESTS_CODE`),
    as its loop does when it gets to it; returns how many."""
    marked = 0
    for file in sorted(set(files)):
        path = layout.meta(ws, file)
        data = load_json(path)
        parse_meta(data)
        codes = data["exit_code_by_key"]
        untested = [name for name, code in codes.items() if code is None]
        if untested:
            codes.update(dict.fromkeys(untested, NO_TESTS_CODE))
            write_atomic(path, json.dumps(data, indent=4))
            marked += len(untested)
    return marked
