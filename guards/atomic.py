"""Write a file whole or not at all: the one way every record, manifest and table of this tool is written."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to a temporary sibling (unique per process and call), then rename it over `path`.

    A reader sees the old file or the new one, never half of one; a failed write (disk full, a signal)
    leaves no temporary file behind, and two processes writing the same path never share one.
    """
    partial = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
