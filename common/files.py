"""Write a file whole or not at all: the one way every record, manifest and table of this tool is written."""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

# `.<name>.<pid>-<8 hex>.<suffix>`: what `temporary` names, so a later run can tell a killed run's leftovers
_TEMPORARY = re.compile(r"\..+\.[0-9]+-[0-9a-f]{8}\.(partial|old)")


def temporary(path: Path, suffix: str = "partial") -> Path:
    """A hidden sibling of `path` for writing it (or moving it aside), unique per process and call."""
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.{suffix}")


def is_temporary(name: str) -> bool:
    """Whether `name` is one `temporary` gives: in a directory no live run writes to, a killed run's leftover."""
    return _TEMPORARY.fullmatch(name) is not None


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to a temporary sibling (unique per process and call), then rename it over `path`.

    A reader sees the old file or the new one, never half of one; a failed write (disk full, a signal)
    leaves no temporary file behind, and two processes writing the same path never share one. An error names
    the file even when the system call that failed did not (a full disk refuses a `write`, not the `open`):
    whose disk refused is then known (the work directory's, not stdout's).
    """
    partial = temporary(path)
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except OSError as err:
        if err.filename is None:
            err.filename = str(partial)
        raise
    finally:
        partial.unlink(missing_ok=True)
