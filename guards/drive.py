"""Drive one site as a user meets it: an owner's __init__ calls the platform's kernel import, twice.

`drive()` imports the site's module (stubbing kernel modules it imports at module level), blocks the
site's kernel import, steers the branches, takes every log record (`observe.records`), builds and drops two
`LLMStandIn`s, collects garbage and returns an `Observation` of plain values. Everything it touches
(caches, handlers, levels, sys.modules, sys.meta_path, patched attributes) is restored afterwards.
"""

from __future__ import annotations

import functools
import gc
import importlib
import inspect
import logging
import sys
import types
import weakref
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from warnonce_guard.common import protocol
from warnonce_guard.common.errors import PlatformImportFailed, PlatformNotFound
from warnonce_guard.guards.blocker import BLOCK_MESSAGE, BlockedKernelImport, blocking, stubbing
from warnonce_guard.guards.observe import Observation, Record, blocked, in_function, records
from warnonce_guard.guards.steering import CannotSteer, steered
from warnonce_guard.guards.stock_cache import LEVELS, StockOnce
from warnonce_guard.rule.platforms import IMPORT_KERNELS, load_class, must_not_exit
from warnonce_guard.rule.site_row import Site
from warnonce_guard.rule.site_rule import is_kernel_module
from warnonce_guard.rule.target import PACKAGE

CALLS = 2
# The referrer chain behind a finding walks the whole heap (about 0.3 s with torch imported). The mutation
# run records only which detectors fired, so its guards skip it (`protocol.EVIDENCE`).
_EVIDENCE = protocol.settings().evidence


class CannotDrive(Exception):
    """The guard cannot bring execution to the site (reported as `unreached`)."""


class LLMStandIn:
    """Stands in for `vllm.LLM`: holds a buffer, as an engine holds its memory, and imports kernels from its
    __init__. What finds it pinned is a weak reference, not its size: 64 KiB comes from the allocator's heap, where
    the 1 MiB it held was mapped afresh and zeroed page by page in each forked mutant's run (2 ms of its 15)."""

    def __init__(self, import_kernels: Callable[[], Any]):
        self.device_buffer = bytearray(1 << 16)
        import_kernels()


def import_platform_module(name: str, *packages: str) -> types.ModuleType:
    """Import a platform module once; kernel modules it imports at module level are stubbed meanwhile."""
    if name in sys.modules:
        return sys.modules[name]
    try:
        with (
            stubbing(kernel_modules_of(packages)),
            must_not_exit(f"importing {name}", "a module of the target must not exit when imported"),
        ):
            return importlib.import_module(name)
    except ImportError as err:
        if isinstance(err, ModuleNotFoundError) and err.name:
            top = err.name.split(".")[0]
            raise PlatformImportFailed(
                f"importing {name} failed: no module named {err.name!r}; install it where the guards run "
                f"(pip install {top})"
            ) from None
        raise PlatformImportFailed(f"importing {name} failed: {err}; fix the guard environment") from None


def kernel_modules_of(packages: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a module name is a kernel module of any of `packages` (what is stubbed, then blocked)."""
    packages = tuple(dict.fromkeys(packages))
    return lambda name: _kernel_module_of(name, packages)


def inside(packages: tuple[str, ...]) -> tuple[str, ...]:
    """The prefixes every name `kernel_modules_of(packages)` accepts starts with (`is_kernel_module`'s)."""
    return tuple(f"{package}." for package in packages)


@functools.lru_cache(maxsize=1 << 14)
def _kernel_module_of(name: str, packages: tuple[str, ...]) -> bool:
    """Kept per name: each drive asks it of every module of its packages in sys.modules, twice."""
    return any(is_kernel_module(name, package) for package in packages)


def site_callable(site: Site, module: types.ModuleType) -> Callable[[], Any]:
    """The function the site lives in, callable without arguments (classmethods bound to their class).

    A site with a `driver` is reached through that platform class's `import_kernels` (which inherits or overrides
    the site's, or calls the function the site stands in).
    """
    if site.driver:
        try:
            return getattr(load_class(site.driver), IMPORT_KERNELS)
        except PlatformNotFound as err:
            raise CannotDrive(str(err)) from None
    if site.qualname == "<module>":
        raise CannotDrive("the site runs at import time, not in a function")
    owner: Any = module
    *path, name = _outermost_function(site.qualname.split("."), module)
    try:
        for part in path:
            owner = getattr(owner, part)
        raw = inspect.getattr_static(owner, name)
    except AttributeError as err:
        raise CannotDrive(f"{site.module}.{site.qualname} not found: {err}") from None
    if isinstance(owner, type) and inspect.isfunction(raw):
        return getattr(owner(), name)  # a plain method: call it on a fresh instance
    return getattr(owner, name)


def _outermost_function(parts: list[str], module: types.ModuleType) -> list[str]:
    """The qualname of the module function or method a site's function is nested in (itself when it is none): the
    guard calls that, and the witness sees the nested function run (`observe.in_function`)."""
    owner: Any = module
    for depth, part in enumerate(parts):
        if not isinstance(owner, (type, types.ModuleType)):
            return parts[:depth]
        owner = inspect.getattr_static(owner, part, None)
    return parts


# What evaluating a site's arguments may call: the formatting builtins the liveness policy knows.
_FORMATTING_BUILTINS = {f.__name__: f for f in (repr, str, ascii, format, type, len, int, float, bool, tuple)}


def expected_text(site: Site) -> tuple[str | None, str]:
    """The message the site's own code renders for the blocked exception, and a fragment it must contain.

    The message and arguments are evaluated as written, with the exception bound to a blocked import
    like the guard's (`"...: %s", repr(e)`, `f"...: {e!r}"`, `"...: %r", e` all render its repr). When
    they use more than the exception and the formatting builtins, only the fragment is checked: the
    blocked import's own message, which every rendering of the exception contains.
    """
    error = BlockedKernelImport(BLOCK_MESSAGE.format(name=site.kernel_module), name=site.kernel_module)
    # an `except*` handler's name is the group Python wraps the import's exception in (made here as Python makes
    # it); its str() holds none of the exception's text (its repr does), so no fragment is required of it
    bound = _grouped(error) if site.grouped else error
    try:
        return rendered_text(site, bound), str(error) if site.logs_exception and not site.grouped else ""
    finally:
        error.__traceback__ = bound.__traceback__ = None
        del error, bound


def _grouped(error: BaseException) -> BaseException:
    """The group an `except*` handler of `error` is given: Python's own, not one built to look like it."""
    given: list[BaseException] = []
    try:
        raise error
    except* BaseException as group:  # an `except*` block may not `return`
        given.append(group)
    return given[0]


def rendered_text(site: Site, error: BaseException) -> str | None:
    """The text the site logs with `error` bound to its exception name; None when its message or arguments use
    more than the exception and the formatting builtins, or the format does not apply."""
    namespace: dict[str, Any] = {"__builtins__": _FORMATTING_BUILTINS, site.exc_name: error}
    if not site.message_source:  # a helper's message: it stands in the helper, not in the handler
        return None
    try:
        message = eval(site.message_source, namespace)  # the target's own source, as the guard imports it
        values = tuple(eval(arg, namespace) for arg in site.args)
        return str(message) % values if values else str(message)
    except Exception:  # a name the guard cannot bind, or a format that does not apply
        return None
    finally:
        del namespace


def once_caches(*packages: str) -> list[Any]:
    """The lru_caches behind each `<package>.logger`'s `*_once` methods, and the sets or dicts of what they logged
    (`export-fix`'s `_once_logged`)."""
    caches = []
    for package in dict.fromkeys(packages):
        logger_module = sys.modules.get(f"{package}.logger")
        if logger_module is not None:
            caches += [
                value
                for name, value in vars(logger_module).items()
                if "once" in name and (hasattr(value, "cache_clear") or isinstance(value, dict | set))
            ]
    return caches


def clear_once_caches(*packages: str) -> None:
    for cache in once_caches(*packages):
        cache.cache_clear() if hasattr(cache, "cache_clear") else cache.clear()


def _describe(obj: Any) -> str:
    if isinstance(obj, types.FrameType):
        return f"frame {obj.f_code.co_qualname}"
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    module = getattr(obj, "__module__", None)
    label = type(obj).__name__
    return f"{label} {module}.{name}" if name and module else label


def _callables_first(referrer: Any) -> tuple[bool, bool]:
    return (not callable(referrer) or isinstance(referrer, type), isinstance(referrer, list))


def holders(obj: Any, depth: int = 9, rank: Callable[[Any], Any] = _callables_first) -> list[str]:
    """A chain of referrers from `obj` towards what keeps it alive (strings only); at each step the referrer `rank`
    puts first (by default a function, such as an lru_cache wrapper, then anything but a list), until a function."""
    chain: list[str] = []
    seen = {id(chain)}
    current = obj
    frame = sys._getframe()
    for _ in range(depth):
        refs = [r for r in gc.get_referrers(current) if id(r) not in seen and r is not frame]
        seen.add(id(refs))
        if not refs:
            break
        preferred = sorted(refs, key=rank)
        current = preferred[0]
        seen.add(id(current))
        chain.append(_describe(current))
        del refs, preferred
        if callable(current) and not isinstance(current, type):
            break
    del current, frame
    return chain


def once_codes(*packages: str, stock: StockOnce | None = None) -> frozenset[types.CodeType]:
    """The code of every function behind a `*_once` cache of the packages' logger modules (and of the stock cache's,
    when a drive routes through it): a record emitted with one on the stack went through a once-cache."""
    wrapped = [getattr(cache, "__wrapped__", None) for cache in once_caches(*packages)]
    codes = {code for fn in wrapped if (code := getattr(fn, "__code__", None)) is not None}
    return frozenset(codes | ({stock.code} if stock is not None else set()))


@contextmanager
def _stock_routed(module: types.ModuleType, stock: StockOnce | None) -> Iterator[None]:
    """With `stock`, the `*_once` methods of the module's loggers go through vLLM's stock cache meanwhile."""
    loggers = [obj for obj in vars(module).values() if isinstance(obj, logging.Logger)] if stock else []
    saved = [(logger, name, vars(logger).get(name)) for logger in loggers for name in LEVELS]
    for logger, name, _ in saved:
        setattr(logger, name, stock.method(logger, name))  # type: ignore[union-attr]
    try:
        yield
    finally:
        for logger, name, before in saved:
            if before is None:
                delattr(logger, name)
            else:
                setattr(logger, name, before)


def _site_records(site: Site, found: list[Record]) -> list[str]:
    """The texts of the site's records: those emitted while its blocked import was handled; for a call after the
    handler, those emitted after it (of the call's literal message, when it has one)."""
    if site.place != "after":
        return [r.text for r in found if r.handling]
    return [r.text for r in found if not r.handling and (site.message is None or r.msg == site.message)]


def drive(site: Site, package: str = PACKAGE, calls: int = CALLS, stock_cache: bool = False) -> Observation:
    """Run the site `calls` times from `LLMStandIn.__init__`, then observe what survived.

    Kernel modules of `package` and of the site's own package (a platform plugin's) are blocked, and
    the `*_once` caches of both are cleared before and after. Every record any logger emits meanwhile is taken, as
    text (`observe.records`), whatever call the handler wrote. With `stock_cache`, the `*_once` methods of the
    module's loggers go through vLLM's stock cache (`guards.stock_cache.StockOnce`) instead of the target's.
    """
    packages = (package, site.package)
    module = import_platform_module(site.module, *packages)
    target = site_callable(site, module)
    expected, fragment = expected_text(site)
    obs = Observation(site.id, calls, expects_once=site.cached, expected_message=expected, expected_fragment=fragment)
    clear_once_caches(*packages)
    owners: list[weakref.ReferenceType[LLMStandIn]] = []
    stock = StockOnce() if stock_cache else None
    witness = in_function(site.function_name)
    with _young_objects_only():
        with ExitStack() as stack:
            stack.enter_context(_stock_routed(module, stock))
            found = stack.enter_context(records(site.kernel_module, once_codes(*packages, stock=stock)))
            try:
                patches = stack.enter_context(steered(site.conditions, module))
            except CannotSteer as err:
                raise CannotDrive(str(err)) from None
            blocker = stack.enter_context(blocking(kernel_modules_of(packages), witness, inside(packages)))
            for _ in range(calls):
                owner = LLMStandIn.__new__(LLMStandIn)
                owners.append(weakref.ref(owner))
                try:
                    owner.__init__(target)  # type: ignore[misc]
                except Exception as err:  # what escapes is dropped here; what the site kept is judged below
                    _escaped(err, site)
                del owner
        del target
        gc.collect()
    try:
        obs.imports_blocked = blocker.witnessed.count(site.kernel_module)
        obs.emitted, obs.steered = _site_records(site, found), dict(patches.calls)
        obs.once_emitted = [r.text for r in found if r.once]
        alive = blocker.alive()
        obs.exceptions_raised = len(blocker.raised)
        obs.exceptions_alive = len(alive)
        obs.exception_holders = holders(alive[0]) if alive and _EVIDENCE else []
        del alive
        pinned = [o for ref in owners if (o := ref()) is not None]
        obs.owners_alive = len(pinned)
        obs.owner_holders = holders(pinned[0]) if pinned and _EVIDENCE else []
        del pinned
    finally:
        clear_once_caches(*packages)  # what the cache pinned is garbage from here; the next collection takes it
        if stock is not None:
            stock.clear()
    return obs


def _escaped(err: Exception, site: Site) -> None:
    """An exception out of the site's function: one its handler raised on purpose (`raise X from e`, `from None`)
    while handling the blocked import is the site's answer (a user's `LLM()` fails; nothing is kept by that), the
    blocked import itself means no handler caught it (`CannotDrive`), anything else (a handler that crashed) is
    raised again."""
    if blocked(err, site.kernel_module):  # the import itself, or the group an `except*` raised again
        raise CannotDrive(
            f"the blocked import of {site.kernel_module} escaped {site.qualname} uncaught (the guard's blocked import "
            "is an ImportError, not a ModuleNotFoundError); catch ImportError in its handler"
        ) from None
    if err.__cause__ is None and not err.__suppress_context__:
        raise err
    cause: BaseException | None = err.__cause__ or err.__context__
    for _ in range(16):  # `__context__` chains are short; a cycle must not loop
        if cause is None:
            raise err
        if blocked(cause):  # an `except*` handler's cause is the group that holds it
            return
        cause = cause.__cause__ or cause.__context__
    raise err


@contextmanager
def _young_objects_only() -> Iterator[None]:
    """Freeze every object that exists now, so `gc.collect()` inside scans only what the site created.

    With torch imported a full collection takes about 0.3 s; a frozen object still keeps alive what it
    refers to (the lru_cache's dict does), so retention is seen exactly as before. Unfrozen on exit,
    before `holders()` walks referrers (gc.get_referrers does not search frozen objects).
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
