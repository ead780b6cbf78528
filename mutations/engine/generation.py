"""The `Pool` mutmut's `create_mutants` generates on, as the session runs it: this process, one file after another.

mutmut 3.8.1's `create_mutants` generates each file in a `multiprocessing.Pool`. The session's generator is a
child of its own (`session._generated`), niced, which ends long before its mutants are needed: forking two pool
workers from it bought no time on two cores busy with the session's imports, and cost 0.14 s of CPU a run (their
forks' page copies and exits). A generator that dies (the OOM killer) is a child the session waits for, which says
so (exit 4); a pool worker that died would have hung mutmut's wait for ever. mutmut's `run` calls `create_mutants`
again once they are made: there it sees that each file's mutants are newer than it, in the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any


class InProcessPool:
    """Stands in for `multiprocessing.Pool` in mutmut's `create_mutants`: its work done here, in order."""

    def __init__(self, processes: int | None = None) -> None:
        del processes

    def __enter__(self) -> InProcessPool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def imap_unordered(self, function: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        return map(function, items)
