"""mutmut's mutant generation on a process pool that notices a dead worker.

mutmut 3.8.1's `create_mutants` generates each file in a `multiprocessing.Pool` and waits on
`imap_unordered`. A pool worker killed from outside (the OOM killer) is replaced, but the file it was
generating is lost and the wait never ends. `FailFastPool` is what `create_mutants` uses of a `Pool` (a
context manager with `imap_unordered`) on a `concurrent.futures.ProcessPoolExecutor`, which breaks every
pending result as soon as any worker dies: generation then ends with `GenerationWorkerLost` (exit 4).
mutmut's `run` calls `create_mutants` again once they are made: `InProcessPool` checks them in its process.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from warnonce_guard.common.errors import GenerationWorkerLost


class FailFastPool:
    """Stands in for `multiprocessing.Pool` in mutmut's `create_mutants` (forked workers, as mutmut's)."""

    def __init__(self, processes: int | None = None) -> None:
        self._executor = ProcessPoolExecutor(max_workers=processes, mp_context=multiprocessing.get_context("fork"))

    def __enter__(self) -> FailFastPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)

    def imap_unordered(self, function: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        futures = [self._executor.submit(function, item) for item in items]
        try:
            for future in as_completed(futures):
                yield future.result()
        except BrokenProcessPool:
            raise GenerationWorkerLost(
                "a process generating mutants died (killed from outside, out of memory?); run again"
            ) from None


class InProcessPool:
    """Stands in for mutmut's `Pool` in the `create_mutants` of its `run`, after the generator made the mutants:
    what is left is seeing that each file's are newer than it, done here rather than in two workers forked from a
    process that holds torch (30 ms); a file whose mutants are stale is generated here, one after the other."""

    def __init__(self, processes: int | None = None) -> None:
        del processes

    def __enter__(self) -> InProcessPool:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def imap_unordered(self, function: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        return map(function, items)
