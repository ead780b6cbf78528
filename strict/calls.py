"""The checked once-caches: what stands in `vllm.logger` for `_print_*_once` while strict mode is on (`wrap`), and in
the other caches' places (`wrap_cache`: transformers' patched `Logger.warning_once`, optimum's `warn_once`, ...),
and what they record.

A refused argument is recorded as a `Violation`, never raised; the call goes on without the cache ever holding it
(formatted first, or logged by the uncached function once per rendered text), so strict mode pins nothing
(docs/ARCHITECTURE.md, How strict mode works).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warnonce_guard.caches.model import LOGGER, Cache
from warnonce_guard.strict.contract import offence

LOGGER_MODULE = "vllm.logger"
_LOGGERS = (logging.Logger, logging.LoggerAdapter)
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
    call: str = ""  # how the call is shown, when it is not `logger.<method>(...)`: `warn_once(...)`

    def describe(self, root: Path | None = None) -> str:
        filename = self.filename
        if root is not None:
            with contextlib.suppress(ValueError):  # outside the rootdir: keep the full path
                filename = str(Path(filename).resolve().relative_to(root))
        where = f" ({self.context})" if self.context else ""
        call = f"{filename}:{self.lineno}: {self.call or f'logger.{self.method}(...)'}"
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


def _refused(method: str, position: str, value: object, record: Callable[[Violation], None], call: str = "") -> bool:
    """Whether the contract refuses the value; a refusal is recorded."""
    refusal = offence(value)
    if refusal is not None:
        record(Violation(method, *_call_site(), position, refusal.what, refusal.kind.why, call=call))
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


def _checked_arguments(cache: Cache, args: tuple[object, ...], bound: bool) -> list[tuple[int, str, object]]:
    """(index into args, position as a failure names it, value) of each positional argument the cache keeps: not the
    receiver of a method looked up on a class (`bound`: `self`), nor a parameter held for the life of the process (a
    logger) or never cached; a parameter the cache makes a tuple first is checked as that tuple."""
    signature = cache.signature
    skip = cache.held | cache.uncached
    first = 1 if bound else 0
    found = []
    for index, value in enumerate(args[first:]):
        parameter = signature.parameter_at(index) or "?"
        if parameter not in skip:
            found.append((first + index, f"{index + 1} ({parameter})", _as_cached(cache, parameter, value)))
    return found


def _as_cached(cache: Cache, parameter: str, value: object) -> object:
    """What the cache gets of an argument: a list or set given to a `tupled` parameter is made a tuple first."""
    return tuple(value) if parameter in cache.tupled and isinstance(value, list | set | frozenset) else value


def _text(value: object) -> str:
    """A refused value as the text that stands for it in a cache that keeps what it is given."""
    try:
        return str(value)
    except Exception:  # a broken __str__ must not break the logging call
        return _safe_repr(value)


def _key(cache: Cache, method: str, args: tuple[object, ...], kwargs: dict[str, object]) -> tuple[str, ...]:
    """What stands for a call among those strict mode logs itself: text only (its receiver by name)."""
    shown = [f"<logger {arg.name}>" if isinstance(arg, _LOGGERS) else _safe_repr(arg) for arg in args]
    return (cache.key, method, *shown, *(f"{k}={_safe_repr(v)}" for k, v in sorted(kwargs.items())))


def wrap_cache(
    original: Callable[..., object],
    cache: Cache,
    method: str,
    record: Callable[[Violation], None],
    bound: bool | None = None,
) -> Callable[..., object]:
    """`original` (a method or function of `cache`) behind a check that records refused arguments; `bound`: it is
    looked up on a class, so its first argument is the instance (default: a logger row's is).

    A call the contract accepts goes to `original` as it was made. One it refuses never reaches the cache: an
    lru_cache's uncached function (`original.__wrapped__`) logs it, once per rendered text (a set of strings), so the
    record reads as without strict mode (exc_info=e still prints its traceback); any other cache (a set of keys, a
    front that caches further down) gets text in place of each refused value (the message rendered, when the row's
    arguments are its %-arguments), so it keeps only text. A `stacklevel` that reaches past the cache to its caller
    counts the wrapper's frame too.
    """
    bound = cache.kind == LOGGER if bound is None else bound
    call = f"logger.{method}(...)" if cache.kind == LOGGER else f"{method}(...)"
    logged: set[tuple[str, ...]] = set()

    def checked(target: Callable[..., object], uncached: bool) -> Callable[..., object]:
        lru = callable(getattr(target, "cache_info", None)) and callable(getattr(target, "__wrapped__", None))

        @functools.wraps(target)
        def strict_once(*args: object, **kwargs: object) -> object:
            positional = _checked_arguments(cache, args, bound)
            refused = {
                index for index, position, value in positional if _refused(method, position, value, record, call)
            }
            named = {n for n, v in kwargs.items() if n not in cache.held | cache.uncached}
            kept = {n for n in named if _refused(method, repr(n), _as_cached(cache, n, kwargs[n]), record, call)}
            level = kwargs.get("stacklevel", cache.signature.default("stacklevel"))  # lightning's warn: 5 by default
            if cache.caller_stacklevel and isinstance(level, int) and level >= cache.caller_stacklevel:
                kwargs["stacklevel"] = level + 1  # past the cache to its caller: over this frame too
            if uncached or not (refused or kept):
                return target(*args, **kwargs)
            if lru:
                key = _key(cache, method, args, kwargs)
                if key in logged:
                    return None
                logged.add(key)
                return target.__wrapped__(*args, **kwargs)  # type: ignore[attr-defined]
            return target(
                *_texts(cache, args, refused, bound), **{n: _text(v) if n in kept else v for n, v in kwargs.items()}
            )

        setattr(strict_once, MARK, True)
        return strict_once

    wrapped = checked(original, False)
    inner = getattr(original, "__wrapped__", None)
    if callable(inner):
        wrapped.__wrapped__ = checked(inner, True)  # type: ignore[attr-defined]
    for name in ("cache_info", "cache_clear", "cache_parameters"):
        if hasattr(original, name):
            setattr(wrapped, name, getattr(original, name))
    return wrapped


def _texts(cache: Cache, args: tuple[object, ...], refused: set[int], bound: bool) -> tuple[object, ...]:
    """The arguments with text in place of each refused one; a row whose arguments after the message are its
    %-arguments gets the message rendered as logging would, and no arguments after it."""
    first = 1 if bound else 0
    if cache.percent and len(args) > first:
        return (*args[:first], rendered(args[first:]))
    return tuple(_text(value) if index in refused else value for index, value in enumerate(args))
