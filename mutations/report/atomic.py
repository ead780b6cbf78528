"""Write a directory whole or not at all: build it in a temporary sibling, then rename it into place."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def replace_dir(target: Path) -> Iterator[Path]:
    """Yield an empty sibling of `target` to fill; on success it replaces `target` whole.

    On an exception the sibling is removed and `target` is left as it was. POSIX cannot rename a
    directory over a non-empty one, so the swap is two renames (old aside, new in); between them
    `target` is briefly absent, never half-written, and a failed second rename puts the old one back.
    """
    target = Path(target)
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    building = parent / f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    building.mkdir()  # not mkdtemp: that makes 0700, a report should get the mode any mkdir would
    try:
        yield building
        _swap(building, target)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise


def _swap(new: Path, target: Path) -> None:
    if not target.exists() and not target.is_symlink():
        os.replace(new, target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    os.replace(target, old / target.name)
    try:
        os.replace(new, target)
    except BaseException:
        os.replace(old / target.name, target)
        old.rmdir()
        raise
    shutil.rmtree(old, ignore_errors=True)
