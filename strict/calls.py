"""The checked `_print_*_once`: what stands in `vllm.logger` while strict mode is on, and what it records.

A refused argument is recorded as a `Violation`, never raised; the call goes on formatted first, so strict mode
pins nothing (docs/ARCHITECTURE.md, How strict mode works).
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warnonce_guard.strict.contract import offence

LOGGER_MODULE = "vllm.logger"
MARK = "__warnonce_strict__"  # set on every function this module makes, so that nothing is wrapped twice


@dataclass(frozen=True)
class Violation:
    """One refused argument: where the `*_once` call was made and what it passed (strings only).

    `context` says, for a call no test is charged with, where it came from (a thread and the test that
    started it); it is empty for a call charged to the test that made it.
    """

    method: str
    filename: str
    lineno: int
    position: str
    offence: str
    why: str
    context: str = ""

    def describe(self, root: Path | None = None) -> str:
        filename = self.filename
        if root is not None:
            with contextlib.suppress(ValueError):  # outside the rootdir: keep the full path
                filename = str(Path(filename).resolve().relative_to(root))
        where = f" ({self.context})" if self.context else ""
        call = f"{filename}:{self.lineno}: logger.{self.method}(...)"
        return f"{call} argument {self.position} is {self.offence}: {self.why}{where}"


def _call_site() -> tuple[str, int]:
    """The first frame outside vllm/logger.py and this module: the code that called `logger.*_once`."""
    frame = sys._getframe(1)
    try:
        while frame is not None and frame.f_globals.get("__name__") in (LOGGER_MODULE, __name__):
            frame = frame.f_back
        if frame is None:
            return "<unknown>", 0
        return frame.f_code.co_filename, frame.f_lineno
    finally:
        del frame


def _safe_repr(value: object) -> str:
    try:
        return repr(value)
    except Exception:  # a broken __repr__ must not break the logging call
        return f"<{type(value).__qualname__} object>"


def rendered(args: tuple[object, ...]) -> str:
    """`(msg, *values)` as logging renders a record's message (`LogRecord.getMessage`): `str(msg) % values`,
    a single non-empty mapping being the values (`"%(name)s", {"name": x}`), as `LogRecord` takes it."""
    msg, values = args[0] if args else "", args[1:]
    if len(values) == 1 and isinstance(values[0], Mapping) and values[0]:
        values = values[0]
    try:
        text = str(msg)
        return text % values if values else text
    except Exception:  # a format that does not fit: keep every part visible, as text
        return " ".join(_safe_repr(part) for part in args)


_FRAMES_ADDED = 2  # the wrapper's frame and the stand-in's, between the printer and vLLM's `*_once` method


def _forwarding(level: str) -> Callable[..., None]:
    def log(self: _Located, msg: object, *args: object, stacklevel: int = 1, **kwargs: Any) -> None:
        getattr(self._logger, level)(msg, *args, stacklevel=stacklevel + _FRAMES_ADDED, **kwargs)

    log.__name__ = log.__qualname__ = level
    return log


class _Located:
    """Stands in for a logger inside the printer: its records keep the location the printer meant.

    Each method calls the logger itself (no helper in between), so the frames added are exactly two.
    """

    def __init__(self, logger: Any) -> None:
        self._logger = logger

    debug, info, warning, error = map(_forwarding, ("debug", "info", "warning", "error"))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._logger, name)


def _refused(method: str, position: str, value: object, record: Callable[[Violation], None]) -> bool:
    """Whether the contract refuses the value; a refusal is recorded."""
    refusal = offence(value)
    if refusal is not None:
        record(Violation(method, *_call_site(), position, refusal.what, refusal.kind.why))
    return refusal is not None


def wrap(original: Callable[..., object], record: Callable[[Violation], None]) -> Callable[..., object]:
    """`original` (an lru_cached `_print_*_once`) behind a check that records refused arguments."""
    method = original.__name__.removeprefix("_print_")
    stand_ins: dict[int, tuple[object, _Located]] = {}

    def located(logger: object) -> _Located:
        known = stand_ins.get(id(logger))
        if known is None or known[0] is not logger:
            known = stand_ins[id(logger)] = (logger, _Located(logger))
        return known[1]

    def checked(target: Callable[..., object]) -> Callable[..., object]:
        @functools.wraps(target)
        def strict_once(logger: object, *args: object, **kwargs: object) -> object:
            refused = [
                _refused(method, f"{index + 1} (args[{index - 1}])" if index else "1 (msg)", value, record)
                for index, value in enumerate(args)
            ]
            for name, value in kwargs.items():
                if _refused(method, repr(name), value, record):
                    kwargs[name] = _safe_repr(value)
            if any(refused):  # cache the message logging would have shown, not the objects
                return target(located(logger), rendered(args), **kwargs)
            return target(located(logger), *args, **kwargs)

        setattr(strict_once, MARK, True)
        return strict_once

    cached = checked(original)
    uncached = getattr(original, "__wrapped__", None)
    if callable(uncached):
        cached.__wrapped__ = checked(uncached)  # type: ignore[attr-defined]
    for name in ("cache_info", "cache_clear", "cache_parameters"):
        if hasattr(original, name):
            setattr(cached, name, getattr(original, name))
    return cached
