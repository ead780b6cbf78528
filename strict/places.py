"""Where strict mode finds each once-cache of the model (`caches.model`) in the test process, how it puts its checked
stand-ins there, and how it takes them back.

A cache's places are `module:qualname` (`vllm.logger:_print_warning_once`, `logging:Logger.warning_once`) or a
configured dotted name; a place counts only once its module is imported (nothing is imported here) and its object is
there (transformers puts `Logger.warning_once` on `logging.Logger` when it is imported). A cached function is also
replaced where other modules hold it under its name (`from sglang.srt.utils import print_warning_once`).
vLLM's logger is read from its source (`caches.renders_first`): one that renders first keeps only text, and is left
as it is, as is every row that renders first.
"""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field

from warnonce_guard.caches.model import Cache, Model
from warnonce_guard.caches.renders_first import renders_first
from warnonce_guard.strict.calls import LOGGER_MODULE, MARK, Violation, wrap, wrap_cache

CHECKED = "checked"
RENDERS_FIRST = "renders first: only text is kept, nothing to check"


def _namespace(owner: object) -> dict[str, object] | types.MappingProxyType[str, object] | None:
    namespace = getattr(owner, "__dict__", None)  # never getattr on the owner: a module's __getattr__ must not run
    return namespace if isinstance(namespace, dict | types.MappingProxyType) else None


def resolve(place: str) -> tuple[object, str, object] | None:
    """(owner, attribute, the object there) of a place whose module is imported, else None."""
    module_name, colon, qualname = place.partition(":")
    if not colon:  # a dotted name: its longest prefix that is an imported module
        parts = place.split(".")
        prefixes = (n for n in range(len(parts) - 1, 0, -1) if ".".join(parts[:n]) in sys.modules)
        cut = next(prefixes, None)
        if cut is None:
            return None
        module_name, qualname = ".".join(parts[:cut]), ".".join(parts[cut:])
    owner: object = sys.modules.get(module_name)
    *path, attribute = qualname.split(".")
    for part in path:
        namespace = _namespace(owner)
        owner = namespace.get(part) if namespace is not None else None
    namespace = _namespace(owner)
    value = namespace.get(attribute) if namespace is not None else None
    if value is None or isinstance(value, staticmethod | classmethod):
        return None
    return owner, attribute, value


def _own_namespace(value: object) -> dict[str, object] | types.MappingProxyType[str, object] | None:
    """The attributes an object or class keeps itself (never a module's: those are searched in turn), read without
    running any of its code (`__getattr__`, a property)."""
    if issubclass(type(value), types.ModuleType | types.FunctionType | types.BuiltinFunctionType):  # not isinstance:
        return None  # it reads `__class__`, which an object may compute (torch's deprecated `reduce_op` warns)
    try:
        namespace = object.__getattribute__(value, "__dict__")
    except Exception:  # no `__dict__` (slots, a builtin), or one that refuses to be read
        return None
    return namespace if isinstance(namespace, dict | types.MappingProxyType) else None


def _vllm_renders_first(module: types.ModuleType) -> bool:
    """Whether the `vllm.logger` this process runs renders first, read from its source (unreadable: it does not)."""
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return False
    return renders_first(source) is True


@dataclass
class Places:
    """The stand-ins strict mode has put in place, what it found of each cache, and how to undo it all."""

    model: Model
    record: Callable[[Violation], None]
    patches: list[tuple[object, str, object]] = field(default_factory=list)  # (owner, attribute, original)
    present: dict[str, str] = field(default_factory=dict)  # cache key -> what strict mode does with it
    functions: dict[int, tuple[object, object]] = field(default_factory=dict)  # id(original) -> (it, its stand-in)
    scanned: set[str] = field(default_factory=set)  # modules searched for a cached function held under their names
    _vllm: dict[int, bool] = field(default_factory=dict)  # id(vllm.logger module) -> whether it renders first

    @property
    def watched(self) -> frozenset[str]:
        """The modules whose import may bring a cache (the import hook's)."""
        return frozenset(m for cache in self.model.caches for m in (*cache.watched, cache.home) if _dotted(m))

    def patch(self) -> None:
        """Put a stand-in in every place of every cache that is there and not wrapped yet."""
        for cache in self.model.caches:
            for place in cache.runtime:
                self._place(cache, place)
        if self.functions:
            self._held_elsewhere()

    def _renders_first(self, cache: Cache) -> bool:
        if cache.renders_first:
            return True
        module = sys.modules.get(LOGGER_MODULE) if cache.key == "vllm" else None
        if module is None:
            return False
        if id(module) not in self._vllm:
            self._vllm[id(module)] = _vllm_renders_first(module)
        return self._vllm[id(module)]

    def _anothers(self, cache: Cache, place: str) -> bool:
        """A place rows share (`logging:Logger.warning_once`, which transformers and auto-round both patch) is the
        row's whose module is imported, when this row's is not: the summary names the library that patched it."""
        if place.partition(":")[0] == cache.home or cache.home in sys.modules:
            return False
        return any(other.home in sys.modules for other in self.model.caches if place in other.runtime)

    def _place(self, cache: Cache, place: str) -> None:
        if self._anothers(cache, place):
            return
        found = resolve(place)
        if found is None:
            return
        owner, attribute, value = found
        if self._renders_first(cache):
            self.present[cache.key] = RENDERS_FIRST
            return
        self.present[cache.key] = CHECKED
        if getattr(value, MARK, False) or not callable(value):
            return
        vllms = cache.key == "vllm"  # its printers take a stand-in logger that keeps the caller's location
        bound = isinstance(owner, type)  # looked up on a class: called with the instance first
        stand_in = wrap(value, self.record) if vllms else wrap_cache(value, cache, attribute, self.record, bound)
        setattr(owner, attribute, stand_in)
        self.patches.append((owner, attribute, value))
        if isinstance(owner, types.ModuleType):  # imported by name elsewhere, or stored on an object
            self.functions[id(value)] = (value, stand_in)

    def _held_elsewhere(self) -> None:
        """Replace a wrapped function where a module imported since the last search holds it under its name: in its
        namespace (`from x import f`), or on an object or class of it (`logger.warning_once = warning_once`)."""
        for name in [n for n in list(sys.modules) if n not in self.scanned]:
            self.scanned.add(name)
            module = sys.modules.get(name)
            namespace = _namespace(module)
            if not isinstance(namespace, dict):
                continue
            self._replace_in(module, namespace)
            for value in list(namespace.values()):
                held = _own_namespace(value)
                if held is not None:
                    self._replace_in(value, held)

    def _replace_in(self, owner: object, namespace: dict[str, object] | types.MappingProxyType[str, object]) -> None:
        for attribute, value in list(namespace.items()):
            known = self.functions.get(id(value))
            # under its own name, as `from x import f` binds it (not a name a test keeps the original under)
            if known is not None and known[0] is value and attribute == getattr(value, "__name__", None):
                try:
                    setattr(owner, attribute, known[1])
                except Exception:  # an object that refuses (a frozen dataclass): it keeps the original
                    continue
                self.patches.append((owner, attribute, value))

    def undo(self) -> None:
        """Put every original back, the last placed first."""
        for owner, attribute, original in reversed(self.patches):
            setattr(owner, attribute, original)
        self.patches.clear()
        self.functions.clear()
        self.scanned.clear()

    def shown(self, keys: object) -> str:
        """The caches of these keys as strict mode names them (`shown`), in the model's order."""
        names = (shown(cache) for cache in self.model.caches if cache.key in keys)  # type: ignore[operator]
        return ", ".join(dict.fromkeys(names))


def shown(cache: Cache) -> str:
    """How strict mode names a cache: its module (a configured one: its dotted name)."""
    return cache.home if _dotted(cache.home) and cache.home != "configured" else cache.runtime[0]


def _dotted(name: str) -> bool:
    return bool(name) and all(part.isidentifier() for part in name.split("."))
