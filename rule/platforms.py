"""Platform plugins: guard any platform class, and list the ones registered with vLLM.

`--platform module:Class` targets the sites of whichever class defines the `import_kernels` the given class runs,
and the guards call them through the given class; code of theirs that tries to end the process is an import failure.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.metadata
import inspect
import os
import reprlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import Any

from warnonce_guard.common.errors import Interrupted, NothingToCheck, PlatformImportFailed, PlatformNotFound
from warnonce_guard.rule.site_row import Site
from warnonce_guard.rule.target import PACKAGE

ENTRY_POINT_GROUP = "vllm.platform_plugins"
IMPORT_KERNELS = "import_kernels"
BASE = (f"{PACKAGE}.platforms.interface", "Platform")  # every vLLM platform class subclasses it (by name: no import)


@dataclass(frozen=True)
class PlatformTarget:
    spec: str  # module:Class, as given
    defining_module: str  # where the import_kernels it runs is defined
    defining_qualname: str  # e.g. Platform.import_kernels
    root: Path  # the directory holding the defining module's top-level package
    file: str  # the defining module's file, relative to root

    @property
    def package(self) -> str:
        return self.defining_module.split(".")[0]


FORM = "give it as module:Class, the module by its full dotted name, e.g. my_plugin.platform:MyPlatform"


def _split(spec: str) -> tuple[str, str]:
    if ":" in spec:
        module, _, name = spec.partition(":")
    else:
        module, _, name = spec.rpartition(".")
    if not _dotted(module) or not _dotted(name):
        raise PlatformNotFound(f"--platform {spec}: {FORM}")
    return module, name


def _dotted(name: str) -> bool:
    """A dotted name (`a.b.C`): not relative (`.foo`), no empty or non-identifier part."""
    return all(part.isidentifier() for part in name.split("."))


class OsExitCalled(BaseException):
    """`os._exit(code)` called by code in a `must_not_exit` block: raised in its place, so the process lives on."""

    def __init__(self, code: int, where: str) -> None:
        super().__init__(code)
        self.code, self.where = code, where  # where: the caller's file:line


@contextlib.contextmanager
def must_not_exit(doing: str, fix: str) -> Iterator[None]:
    """Run the block: code not ours that this process imports or calls (`doing`: "importing x"). A SystemExit it
    raises (any code, 0 too), an `os._exit` it calls, or a KeyboardInterrupt no SIGINT caused (the code's own
    `raise`) would end the process, a pass with nothing checked: it is `PlatformImportFailed` naming `doing` and
    where it was raised, with `fix`. A real Ctrl-C (or SIGTERM) while the block runs stays the interrupt it is."""
    with _sigint_noted() as signalled, _os_exit_raises():
        try:
            yield
        except (SystemExit, KeyboardInterrupt, OsExitCalled) as err:
            if isinstance(err, Interrupted) or (isinstance(err, KeyboardInterrupt) and signalled()):
                raise
            raise PlatformImportFailed(f"{doing} would end the process ({_raised(err)}); {fix}") from None


@contextlib.contextmanager
def _os_exit_raises() -> Iterator[None]:
    """For the block, `os._exit` raises `OsExitCalled` (it would end the process at once, saying nothing)."""

    def raising(code: int) -> None:
        caller = sys._getframe(1)
        raise OsExitCalled(code, f"{caller.f_code.co_filename}:{caller.f_lineno}")

    real, os._exit = os._exit, raising  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit = real


def _raised(err: BaseException) -> str:
    """`SystemExit(0) at file:line`: what was raised and the line of the code that raised it."""
    if isinstance(err, OsExitCalled):
        return f"os._exit({err.code!r}) at {err.where}"
    what = f"SystemExit({err.code!r})" if isinstance(err, SystemExit) else type(err).__name__
    frame = err.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    return f"{what} at {frame.tb_frame.f_code.co_filename}:{frame.tb_lineno}" if frame is not None else what


@contextlib.contextmanager
def _sigint_noted() -> Iterator[Callable[[], bool]]:
    """For the block, whether a SIGINT arrived: its handler (the CLI's, Python's own) is wrapped to note it. Where
    no Python handler runs (SIG_DFL, SIG_IGN) or this is not the main thread, no KeyboardInterrupt comes of one."""
    seen: list[int] = []
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous) or threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return

    def noted(signum: int, frame: FrameType | None) -> Any:
        seen.append(signum)
        return previous(signum, frame)

    signal.signal(signal.SIGINT, noted)
    try:
        yield lambda: bool(seen)
    finally:
        if signal.getsignal(signal.SIGINT) is noted:  # the code may have put its own: that one stays
            signal.signal(signal.SIGINT, previous)


def load_class(spec: str) -> type:
    module_name, name = _split(spec)
    try:
        with must_not_exit(
            f"--platform {spec}: importing {module_name}", "a platform module must not exit when imported"
        ):
            owner: object = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if not _names_the_module(err.name, module_name):  # the plugin is there; something it imports is not
            raise PlatformImportFailed(
                f"--platform {spec}: {module_name} fails to import: {err}; install what it needs here"
            ) from None
        raise PlatformNotFound(f"--platform {spec}: cannot import {module_name} ({err}); install the plugin") from None
    except PlatformImportFailed:
        raise
    except Exception as err:  # the module is there and raises (ImportError, SyntaxError, anything) on import
        raise PlatformImportFailed(
            f"--platform {spec}: {module_name} fails to import: {type(err).__name__}: {err}"
        ) from None
    for part in name.split("."):
        owner = getattr(owner, part, None)
        if owner is None:
            raise PlatformNotFound(f"--platform {spec}: {module_name} has no class {name}")
    if not isinstance(owner, type):
        raise PlatformNotFound(f"--platform {spec}: {name} is not a class")
    return owner


def _names_the_module(missing: str | None, module_name: str) -> bool:
    """The missing module is `module_name` or a package on its way (`no_such_plugin` of `no_such_plugin.x`)."""
    return missing is not None and (module_name == missing or module_name.startswith(f"{missing}."))


def resolve_platform(spec: str) -> PlatformTarget:
    """Which class's `import_kernels` the platform runs, and where that class's source is."""
    cls = load_class(spec)
    if not any((klass.__module__, klass.__qualname__) == BASE for klass in cls.__mro__):
        raise PlatformNotFound(
            f"--platform {spec}: {cls.__module__}.{cls.__qualname__} is not a platform class (not a subclass of "
            f"{'.'.join(BASE)}); pass a vLLM platform class, such as `warnonce-guard platforms` lists"
        )
    definer = next((klass for klass in cls.__mro__ if IMPORT_KERNELS in vars(klass)), None)
    if definer is None:
        raise PlatformNotFound(f"--platform {spec}: {cls.__name__} has no {IMPORT_KERNELS}; is it a vLLM Platform?")
    source = inspect.getsourcefile(definer)
    module = importlib.import_module(definer.__module__)
    if source is None or module.__file__ is None:
        raise PlatformNotFound(f"--platform {spec}: no Python source for {definer.__module__}")
    depth = definer.__module__.count(".") + (1 if Path(module.__file__).name == "__init__.py" else 0)
    root = Path(source).resolve().parents[depth]
    return PlatformTarget(
        spec=f"{cls.__module__}:{cls.__qualname__}",
        defining_module=definer.__module__,
        defining_qualname=f"{definer.__qualname__}.{IMPORT_KERNELS}",
        root=root,
        file=Path(source).resolve().relative_to(root).as_posix(),
    )


def platform_sites(target: PlatformTarget) -> list[Site]:
    """The sites the platform runs, each to be driven through the platform class."""
    from warnonce_guard.rule.sites import sites_in_source  # libcst: a run reading its result back needs none

    source = (target.root / target.file).read_text(encoding="utf-8")
    sites = sites_in_source(source, target.file, target.defining_module, target.package)
    if target.package != PACKAGE:  # a plugin's own kernels, or vLLM's, may be imported there
        sites += [s for s in sites_in_source(source, target.file, target.defining_module, PACKAGE) if s not in sites]
    reached = runs_from(source, target.defining_qualname)
    chosen = [replace(s, driver=target.spec) for s in sites if _within(s.qualname, reached) and s.guarded]
    if not chosen:
        raise NothingToCheck(
            f"platform {target.spec} runs {target.defining_module}.{target.defining_qualname}, "
            "which has no guarded kernel import (a try importing a kernel module, catching ImportError); "
            "nothing to guard"
        )
    return chosen


def runs_from(source: str, start: str) -> set[str]:
    """The qualnames of the file's functions that `start` (`Cls.import_kernels`) runs, by name, itself included: a
    method called as `cls.name`, `self.name` or `Cls.name`, a module function called as `name`, and what those call."""
    functions: dict[str, ast.AST] = {}

    def collect(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions[prefix + node.name] = node
            elif isinstance(node, ast.ClassDef):
                collect(node.body, f"{prefix}{node.name}.")

    collect(ast.parse(source).body, "")
    seen: set[str] = set()
    todo = [start]
    while todo:
        qualname = todo.pop()
        if qualname in seen or qualname not in functions:
            continue
        seen.add(qualname)
        owner = qualname.rpartition(".")[0]
        receivers = ("cls", "self", owner.rpartition(".")[2]) if owner else ()
        for node in ast.walk(functions[qualname]):
            func = node.func if isinstance(node, ast.Call) else None
            if isinstance(func, ast.Name):
                todo.append(func.id)
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in receivers:
                todo.append(f"{owner}.{func.attr}")
    return seen


def _within(qualname: str, functions: set[str]) -> bool:
    """`qualname` is one of `functions`, or a function nested in one."""
    return any(qualname == f or qualname.startswith(f"{f}.") for f in functions)


@dataclass(frozen=True)
class RegisteredPlatform:
    name: str  # the entry point's name
    entry_point: str  # its value, the plugin function
    platform: str | None  # the class path the function returns (None: not available on this machine)
    error: str | None = None  # why it is not usable: its module or function raised, or returned no class path
    ends_process: bool = False  # loading it would end the process (vLLM's start-up too): a failure, not a row
    distribution: str | None = None  # `name==version` of the distribution it comes from, when it says

    def key(self) -> list[str | None]:
        """What of it can change a verdict (the guards load it): no error text, which may hold an address."""
        return [self.name, self.entry_point, self.platform, self.distribution, str(self.error is None)]


def registered_platforms() -> list[RegisteredPlatform]:
    """Platforms registered under vLLM's `vllm.platform_plugins` entry points, with what each resolves to."""
    found = [_registered(entry) for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)]
    return sorted(found, key=lambda p: p.name)


def refuse_ending_plugins(found: list[RegisteredPlatform]) -> None:
    """`PlatformImportFailed` for the first plugin whose loading would end the process: vLLM loads every plugin
    when it resolves its platform, so the guards (in this process or a mutation run's) would end with it."""
    if ending := next((plugin for plugin in found if plugin.ends_process), None):
        raise PlatformImportFailed(f"platform plugin {ending.name}: {ending.error}")


def _registered(entry: importlib.metadata.EntryPoint) -> RegisteredPlatform:
    """What one entry point's `register()` returns: a class path, None (not available here), or why not usable."""
    dist = getattr(entry, "dist", None)
    found = RegisteredPlatform(entry.name, entry.value, None, distribution=dist and f"{dist.name}=={dist.version}")
    try:
        with must_not_exit(f"loading {entry.value}", "a plugin must not exit while vLLM loads it"):
            platform = entry.load()()
    except PlatformImportFailed as err:
        return replace(found, error=str(err), ends_process=True)
    except Exception as err:  # a broken plugin is reported, not fatal
        return replace(found, error=f"{type(err).__name__}: {err}")
    if platform is not None and not isinstance(platform, str):
        returned = f"{reprlib.repr(platform)} ({type(platform).__name__})"
        return replace(found, error=f"its function returned {returned}, not a class path or None")
    return replace(found, platform=platform)
