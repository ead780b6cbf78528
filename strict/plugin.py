"""Strict mode: a pytest plugin that checks the `*_once` cache contract of `vllm.logger` at run time.

`logger.warning_once(msg, *args)` (and `debug_once`, `info_once`, `error_once`) hands its arguments to an
`functools.lru_cache`, which keeps them for the life of the process. Only immutable primitives belong
there: an exception, a list or any other object is pinned, with everything it references, and each new
one is a new key, so the "once" message repeats. With `pytest --warnonce-strict` (or the ini option
`warnonce_strict = true`) this plugin wraps `vllm.logger._print_{debug,info,warning,error}_once` for the
whole session and fails every test that passes anything else, naming the call site, the argument's
position and its type. Off by default: loading the plugin (entry point, `-p warnonce_guard.strict.plugin`) does nothing.

Choices:
- Allowed are values whose type is exactly str, int, float, bool, NoneType or bytes, and tuples or
  frozensets of those, recursively. Subclasses are refused (a subclass instance can carry a `__dict__`
  that pins anything), and so are enum members, paths, dtypes and the like: format them first.
- Nothing is raised inside vLLM's code path (the code under test could swallow it). A violation is
  recorded, and the test's report for that phase (setup, call or teardown) is turned into a failure.
  Calls made outside any test (e.g. at collection) fail the session and are listed in its summary.
- The offending call still goes through to the real cache, formatted first: the message is rendered
  exactly as logging would have rendered the call (`msg % args`), and that string is what the cache
  keeps. The record reads as it would have, and strict mode itself pins nothing.
- vLLM may be imported at any time: the functions are wrapped at configure time if `vllm.logger` is
  already imported, by an import hook as soon as it is, and again at each test's setup if they are not.
  The originals are put back at unconfigure. `cache_info()`, `cache_clear()` and `cache_parameters()`
  of a wrapper are the real cache's.
- Records keep the caller's file and line: vLLM's printers log with `stacklevel=3`, counted from their
  own frame, and the wrapper is one frame more; so the printer is handed, in place of the logger, a
  stand-in (one per logger, so cache keys stay stable) whose `debug/info/warning/error` add the two
  frames (the wrapper's and the stand-in's) to `stacklevel`.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

LOGGER_MODULE = "vllm.logger"
ONCE_FUNCTIONS = ("_print_debug_once", "_print_info_once", "_print_warning_once", "_print_error_once")
PRIMITIVES = (str, int, float, bool, type(None), bytes)
CONTAINERS = (tuple, frozenset)
_MARK = "__warnonce_strict__"


def offence(value: object) -> str | None:
    """None when `value` is an immutable primitive (or a tuple/frozenset of them); else what is wrong."""
    kind = type(value)
    if kind in PRIMITIVES:
        return None
    if kind in CONTAINERS:
        items = enumerate(value) if kind is tuple else ((None, item) for item in value)
        for index, item in items:
            inner = offence(item)
            if inner is not None:
                where = "" if index is None else f" at [{index}]"
                return f"{kind.__name__} holding {inner}{where}"
        return None
    return f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__qualname__


@dataclass(frozen=True)
class Violation:
    """One refused argument: where the `*_once` call was made and what it passed (strings only)."""

    method: str
    filename: str
    lineno: int
    position: str
    offence: str

    def describe(self, root: Path | None = None) -> str:
        filename = self.filename
        if root is not None:
            with contextlib.suppress(ValueError):  # outside the rootdir: keep the full path
                filename = str(Path(filename).resolve().relative_to(root))
        return (
            f"{filename}:{self.lineno}: logger.{self.method}(...) argument {self.position} is {self.offence}, "
            "not an immutable primitive"
        )


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
    """`(msg, *values)` as logging renders a record's message (`LogRecord.getMessage`): `str(msg) % values`."""
    msg, values = args[0] if args else "", args[1:]
    try:
        text = str(msg)
        return text % values if values else text
    except Exception:  # a format that does not fit: keep every part visible, as text
        return " ".join(_safe_repr(part) for part in args)


_FRAMES_ADDED = 2  # the wrapper's frame and the stand-in's, between the printer and vLLM's `*_once` method


class _Located:
    """Stands in for a logger inside the printer: its records keep the location the printer meant.

    Each method calls the logger itself (no helper in between), so the frames added are exactly two.
    """

    def __init__(self, logger: Any) -> None:
        self._logger = logger

    def debug(self, msg: object, *args: object, stacklevel: int = 1, **kwargs: Any) -> None:
        self._logger.debug(msg, *args, stacklevel=stacklevel + _FRAMES_ADDED, **kwargs)

    def info(self, msg: object, *args: object, stacklevel: int = 1, **kwargs: Any) -> None:
        self._logger.info(msg, *args, stacklevel=stacklevel + _FRAMES_ADDED, **kwargs)

    def warning(self, msg: object, *args: object, stacklevel: int = 1, **kwargs: Any) -> None:
        self._logger.warning(msg, *args, stacklevel=stacklevel + _FRAMES_ADDED, **kwargs)

    def error(self, msg: object, *args: object, stacklevel: int = 1, **kwargs: Any) -> None:
        self._logger.error(msg, *args, stacklevel=stacklevel + _FRAMES_ADDED, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._logger, name)


def wrap(original: Callable[..., object], record: Callable[[Violation], None]) -> Callable[..., object]:
    """`original` (an lru_cached `_print_*_once`) behind a check that records refused arguments."""
    method = original.__name__.removeprefix("_print_")
    stand_ins: dict[int, tuple[object, _Located]] = {}

    def located(logger: object) -> _Located:
        known = stand_ins.get(id(logger))
        if known is None or known[0] is not logger:
            known = stand_ins[id(logger)] = (logger, _Located(logger))
        return known[1]

    @functools.wraps(original)
    def strict_once(logger: object, *args: object, **kwargs: object) -> object:
        refused = False
        for index, value in enumerate(args):
            what = offence(value)
            if what is not None:
                position = "1 (msg)" if index == 0 else f"{index + 1} (args[{index - 1}])"
                record(Violation(method, *_call_site(), position, what))
                refused = True
        for name, value in kwargs.items():
            what = offence(value)
            if what is not None:
                record(Violation(method, *_call_site(), repr(name), what))
                kwargs[name] = _safe_repr(value)
        if refused:  # cache the message logging would have shown, not the objects
            return original(located(logger), rendered(args), **kwargs)
        return original(located(logger), *args, **kwargs)

    for name in ("cache_info", "cache_clear", "cache_parameters"):
        if hasattr(original, name):
            setattr(strict_once, name, getattr(original, name))
    setattr(strict_once, _MARK, True)
    return strict_once


class _ExecThenPatch:
    """Loader wrapper: runs the real loader, then calls `after(module)`; everything else is delegated."""

    def __init__(self, inner: object, after: Callable[[ModuleType], None]):
        self._inner = inner
        self._after = after

    def create_module(self, spec: object) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        self._after(module)

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


class _ImportHook:
    """Meta-path finder that patches `vllm.logger` as soon as it is imported (found by the other finders)."""

    def __init__(self, after: Callable[[ModuleType], None]):
        self._after = after

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> object:
        if fullname != LOGGER_MODULE:
            return None
        for finder in [finder for finder in sys.meta_path if finder is not self]:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ExecThenPatch(spec.loader, self._after)
                return spec
        return None


class StrictMode:
    """The active plugin: owns the patches, the import hook and the violations not yet reported."""

    def __init__(self, config: pytest.Config):
        self.root = config.rootpath
        self.patches: list[tuple[ModuleType, str, Callable[..., object]]] = []
        self.pending: list[Violation] = []
        self.outside: list[Violation] = []
        self.in_test = False
        self.hook = _ImportHook(self.patch)

    def record(self, violation: Violation) -> None:
        (self.pending if self.in_test else self.outside).append(violation)

    def patch(self, module: ModuleType | None = None) -> None:
        """Wrap the `*_once` functions of `vllm.logger` that are not wrapped yet (no-op before its import)."""
        module = module if module is not None else sys.modules.get(LOGGER_MODULE)
        if module is None:
            return
        for name in ONCE_FUNCTIONS:
            original = getattr(module, name, None)
            if original is None or getattr(original, _MARK, False):
                continue
            setattr(module, name, wrap(original, self.record))
            self.patches.append((module, name, original))

    def install(self) -> None:
        sys.meta_path.insert(0, self.hook)
        self.patch()

    def uninstall(self) -> None:
        if self.hook in sys.meta_path:
            sys.meta_path.remove(self.hook)
        for module, name, original in reversed(self.patches):
            setattr(module, name, original)
        self.patches.clear()

    def explain(self, violations: list[Violation]) -> str:
        lines = [f"  {violation.describe(self.root)}" for violation in violations]
        return "\n".join(
            [
                f"warnonce strict: {len(violations)} argument(s) to a *_once logger call would be kept alive "
                "by its lru_cache:",
                *lines,
                'Pass only str/int/float/bool/None/bytes (or tuples of them): format first, e.g. "%s", repr(e).',
            ]
        )

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        self.in_test = True
        try:
            return (yield)
        finally:
            self.in_test = False

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self.patch()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
        report = yield
        violations, self.pending = self.pending, []
        if violations:
            text = self.explain(violations)
            if report.passed:
                report.outcome = "failed"
                report.longrepr = text
            else:
                report.sections.append(("warnonce strict", text))
        return report

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.outside and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: object) -> None:
        if self.outside:
            terminalreporter.write_sep("=", "warnonce strict: *_once calls outside any test", red=True)
            terminalreporter.write_line(self.explain(self.outside))


_PLUGIN_NAME = "warnonce-strict-mode"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("warnonce-strict")
    group.addoption(
        "--warnonce-strict",
        action="store_true",
        default=False,
        help="fail tests that pass anything but immutable primitives to vllm's logger *_once methods",
    )
    parser.addini("warnonce_strict", type="bool", default=False, help="as --warnonce-strict")


def pytest_configure(config: pytest.Config) -> None:
    if not (config.getoption("warnonce_strict") or config.getini("warnonce_strict")):
        return
    strict = StrictMode(config)
    strict.install()
    config.pluginmanager.register(strict, _PLUGIN_NAME)


def pytest_unconfigure(config: pytest.Config) -> None:
    strict = config.pluginmanager.get_plugin(_PLUGIN_NAME)
    if isinstance(strict, StrictMode):
        strict.uninstall()
        config.pluginmanager.unregister(strict)
