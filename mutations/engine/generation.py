"""mutmut's mutant generation on a process pool that notices a dead worker.

mutmut 3.8.1's `create_mutants` generates each file in a `multiprocessing.Pool` and waits on
`imap_unordered`. A pool worker killed from outside (the OOM killer) is replaced, but the file it was
generating is lost and the wait never ends. `FailFastPool` is what `create_mutants` uses of a `Pool` (a
context manager with `imap_unordered`) on a `concurrent.futures.ProcessPoolExecutor`, which breaks every
pending result as soon as any worker dies: generation then ends with `GenerationWorkerLost` (exit 4).
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
