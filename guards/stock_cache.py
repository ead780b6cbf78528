"""vLLM's stock `*_once` cache beside the target's: is the target's cache one that renders first, and what would the
stock one have kept?

`renders_first(module)` asks a logger module at run time: a live object passed twice to `warning_once` on a
throwaway logger must be logged once and collected (vLLM's stock cache, an `lru_cache` on `(logger, msg, *args)`,
logs it twice and keeps both). The answer is the module's code's: asked once per module (and its caches) in a
process, so the workers a mutation run forks inherit it, and its collection scans only what the probe made.
`StockOnce` is that stock cache, written once here: a guard whose site passes on a target that renders first drives
it again with its `*_once` calls routed through `StockOnce`, and reports the site `neutralized` when that drive
leaks: the bug is at the site, and only the target's cache keeps it harmless.
"""

from __future__ import annotations

import functools
import gc
import logging
import sys
import types
import weakref
from collections.abc import Callable
from typing import Any

PROBE_LOGGER = "warnonce_guard.cache_probe"
LEVELS = {"debug_once": logging.DEBUG, "info_once": logging.INFO, "warning_once": logging.WARNING}
LEVELS["error_once"] = logging.ERROR
STOCK_MAXSIZE = 128  # functools.lru_cache's default, which vLLM's `@lru_cache` takes


class _Probe:
    """What the probe passes to `warning_once`: a live object, weakly referenceable, rendered the same each time."""

    def __repr__(self) -> str:
        return "<warnonce-guard probe>"


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(record.getMessage())


def logger_module_of(logger: Any) -> types.ModuleType | None:
    """The module that defines a logger's `warning_once` (vLLM's `vllm.logger`, or a plugin's own), if loaded."""
    method = getattr(logger, "warning_once", None)
    name = getattr(getattr(method, "__func__", method), "__module__", None)
    return sys.modules.get(name) if isinstance(name, str) else None


# What `renders_first` found, per logger module: the module's caches (their ids) when it was asked, and the answer.
_ASKED: weakref.WeakKeyDictionary[types.ModuleType, tuple[tuple[int, ...], bool]] = weakref.WeakKeyDictionary()


def renders_first(module: types.ModuleType | None) -> bool:
    """Whether the module's `*_once` methods keep only the rendered message: two live objects rendering the same
    text, passed to `warning_once` of a logger of its `init_logger`, are logged once and both collected. Probed once
    per module and process, again when its caches were replaced since."""
    if module is None:
        return False
    caches = tuple(id(value) for value in vars(module).values() if hasattr(value, "cache_clear"))
    asked = _ASKED.get(module)
    if asked is None or asked[0] != caches:
        asked = _ASKED[module] = (caches, _probe(module))
    return asked[1]


def _probe(module: types.ModuleType) -> bool:
    init = getattr(module, "init_logger", None)
    if not callable(init):
        return False
    probe = init(PROBE_LOGGER)
    collect = _Collect()
    saved = (probe.handlers, probe.propagate, probe.level)
    probe.handlers, probe.propagate = [collect], False
    probe.setLevel(logging.DEBUG)
    gc.freeze()  # what exists now is not scanned (with torch imported a full collection takes about 0.3 s)
    try:
        objects = [_Probe(), _Probe()]
        refs = [weakref.ref(obj) for obj in objects]
        try:
            for obj in objects:
                probe.warning_once("warnonce-guard probes the *_once cache: %r", obj)
        finally:
            del objects, obj
            probe.handlers, probe.propagate = saved[0], saved[1]
            probe.setLevel(saved[2])
        gc.collect()  # a frozen cache still keeps alive what it holds
    finally:
        gc.unfreeze()
    return len(collect.texts) == 1 and all(ref() is None for ref in refs)


def _emit(logger: logging.Logger, level: int, msg: Any, *args: Any) -> None:
    # stacklevel 3: this function, the *_once method of StockOnce, its caller (as vLLM's _print_*_once count it)
    logger.log(level, msg, *args, stacklevel=3)


class StockOnce:
    """vLLM's `*_once` methods (0.25.0 to 0.33.0) over a given logger: one `lru_cache` on `(logger, level, msg,
    *args)` that keeps what it is given until evicted or `clear`ed."""

    def __init__(self) -> None:
        self._print = functools.lru_cache(maxsize=STOCK_MAXSIZE)(_emit)

    def method(self, logger: logging.Logger, name: str) -> Callable[..., None]:
        """The stock `name` (`warning_once`, ...) of `logger`; `scope=` is taken, and in one process changes nothing."""
        level = LEVELS[name]

        def once(msg: Any, *args: Any, scope: str = "local") -> None:
            self._print(logger, level, msg, *args)

        return once

    @property
    def code(self) -> types.CodeType:
        """The code a record emitted through this cache runs (`drive.once_codes`)."""
        return _emit.__code__

    def clear(self) -> None:
        self._print.cache_clear()
