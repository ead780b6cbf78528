"""What strict mode lets into a `*_once` cache: one table of kinds, `KINDS`, the first that matches decides.

A value may go in when the cache adds no lifetime to anything; the reference page's table is generated from it.
"""

from __future__ import annotations

import enum
import functools
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass

PRIMITIVES = (str, int, float, bool, type(None), bytes)
CONTAINERS = (tuple, frozenset)
_FRAMES = (types.FrameType, types.TracebackType, types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
_CALLABLES = (types.FunctionType, types.BuiltinFunctionType)


@dataclass(frozen=True)
class Kind:
    """One row of the contract: what matches, whether it passes, why, and examples (Python expressions)."""

    name: str
    passes: bool
    why: str
    examples: tuple[str, ...]
    matches: Callable[[object], bool]


@dataclass(frozen=True)
class Refusal:
    """A refused value: what it is (`tuple holding ValueError at [1]`) and the kind that refused it."""

    what: str
    kind: Kind


def _held_by_its_module(obj: object) -> bool:
    """`obj` is what its module holds under its `__qualname__`: it lives as long as that module does.

    Read through `vars()`, never `getattr`: a module's `__getattr__` (vLLM's lazy imports) must not run here.
    """
    name, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    module = sys.modules.get(name) if isinstance(name, str) else None
    if module is None or not isinstance(qualname, str) or "<" in qualname:  # <locals>, <lambda>
        return False
    target: object = module
    for part in qualname.split("."):
        namespace = getattr(target, "__dict__", None)
        if not isinstance(namespace, dict | types.MappingProxyType) or part not in namespace:
            return False
        target = namespace[part]
        if isinstance(target, staticmethod):
            target = target.__func__
    return target is obj


def _items(value: tuple[object, ...] | frozenset[object]) -> Iterator[tuple[str, object]]:
    if type(value) is tuple:
        return ((f" at [{index}]", item) for index, item in enumerate(value))
    return (("", item) for item in value)


def _container_refusing(value: object) -> bool:
    return type(value) in CONTAINERS and any(offence(item) is not None for _, item in _items(value))


def _enum_member(value: object) -> bool:
    cls = type(value)
    if not isinstance(value, enum.Enum) or not _held_by_its_module(cls):
        return False
    if cls._member_map_.get(value._name_) is value:
        return True
    try:  # a Flag combination (re.I | re.M) is kept by its class once made
        return cls._value2member_map_.get(value._value_) is value
    except TypeError:  # an unhashable value
        return False


def _bound_method(value: object) -> bool:
    if isinstance(value, types.MethodType | types.MethodWrapperType):
        return True
    return isinstance(value, types.BuiltinMethodType) and not isinstance(value.__self__, types.ModuleType | None)


def _module_held(value: object) -> bool:
    return isinstance(value, types.ModuleType) and sys.modules.get(value.__name__) is value


def _unreachable(value: object) -> bool:
    if isinstance(value, types.ModuleType):
        return True  # not in sys.modules (the kind before took those)
    return isinstance(value, (type, enum.Enum, *_CALLABLES))


def _subclass_instance(value: object) -> bool:
    return isinstance(value, PRIMITIVES + CONTAINERS) and type(value) not in PRIMITIVES + CONTAINERS


HOLDING_REFUSED = Kind(
    "tuple or frozenset holding a refused value",
    False,
    "holds that value, and the cache with it",
    ('("a", ["b"])', '(1, ValueError("v"))', "frozenset({(1, object())})"),
    _container_refusing,
)

KINDS: tuple[Kind, ...] = (
    Kind(
        "immutable primitive",
        True,
        "exactly str, int, float, bool, None or bytes: immutable, holds no other object",
        ('"text"', "3", "2.5", "True", "None", 'b"raw"'),
        lambda value: type(value) in PRIMITIVES,
    ),
    HOLDING_REFUSED,
    Kind(
        "tuple or frozenset of passing values",
        True,
        "exactly tuple or frozenset: immutable, and every item passes these same rules",
        ('("a", (1, None))', 'frozenset({1, "b"})', "(http.HTTPStatus.OK, int)"),
        lambda value: type(value) in CONTAINERS,
    ),
    Kind(
        "enum member",
        True,
        "its enum class, held by its module, holds it for as long as the module lives",
        ("http.HTTPStatus.OK", "re.IGNORECASE | re.MULTILINE", "inspect.Parameter.KEYWORD_ONLY"),
        _enum_member,
    ),
    Kind(
        "module-level class",
        True,
        "its module holds it under its name: the cache adds no lifetime",
        ("int", "logging.Logger", "http.HTTPStatus"),
        lambda value: isinstance(value, type) and _held_by_its_module(value),
    ),
    Kind(
        "module-level function",
        True,
        "its module holds it under its name: the cache adds no lifetime",
        ("len", "os.path.join", "logging.getLogger"),
        lambda value: isinstance(value, _CALLABLES) and not _bound_method(value) and _held_by_its_module(value),
    ),
    Kind(
        "module",
        True,
        "sys.modules holds it under its name",
        ("os", "logging"),
        _module_held,
    ),
    Kind(
        "exception",
        False,
        "an exception keeps its traceback once raised, and through it every frame and its local variables",
        ('ValueError("v")', "KeyboardInterrupt()"),
        lambda value: isinstance(value, BaseException),
    ),
    Kind(
        "frame, traceback, generator or coroutine",
        False,
        "holds a frame and its local variables",
        ("sys._getframe()", "(x for x in ())"),
        lambda value: isinstance(value, _FRAMES),
    ),
    Kind(
        "bound method",
        False,
        "a bound method carries its instance (`__self__`), and everything the instance holds",
        ('logging.getLogger("x").info', "[].append", "(1).__add__"),
        _bound_method,
    ),
    Kind(
        "functools.partial",
        False,
        "a partial carries its function and its arguments",
        ('functools.partial(print, "x")',),
        lambda value: isinstance(value, functools.partial | functools.partialmethod),
    ),
    Kind(
        "class, function, enum member or module not held by name",
        False,
        "made anew each time its definition runs (a lambda, a closure, a local class or function, `type(...)`): "
        "each one is a new cache key, kept with what it carries (a closure its cells)",
        ("lambda: 0", 'type("Local", (), {})', 'enum.Enum("Local", "A").A', 'types.ModuleType("detached")'),
        _unreachable,
    ),
    Kind(
        "instance of a subclass of a primitive, tuple or frozenset",
        False,
        "a subclass instance can carry a `__dict__` holding anything",
        ('type("Text", (str,), {})("x")', 'collections.namedtuple("Point", "x")(1)'),
        _subclass_instance,
    ),
    Kind(
        "any other object",
        False,
        "can hold anything: format it first",
        ('["a"]', '{"k": 1}', "{1}", "object()", 'logging.getLogger("x")'),
        lambda value: True,
    ),
)
OTHER = KINDS[-1]


def classify(value: object) -> Kind:
    """The first kind of KINDS that `value` matches; an object whose inspection fails is `any other object`."""
    try:
        return next(kind for kind in KINDS if kind.matches(value))
    except Exception:  # a broken __class__ or __eq__, a nesting too deep: refused, never raised into vLLM's code
        return OTHER


def offence(value: object) -> Refusal | None:
    """None when `value` may go into a `*_once` cache; else what it is and the kind that refuses it."""
    kind = classify(value)
    if kind.passes:
        return None
    if kind is HOLDING_REFUSED:  # name the first refused item, and refuse by its kind
        for where, item in _items(value):  # type: ignore[arg-type]
            inner = offence(item)
            if inner is not None:
                return Refusal(f"{type(value).__name__} holding {inner.what}{where}", inner.kind)
    return Refusal(_name(value), kind)


def _name(value: object) -> str:
    """How a refused value is named: a class or function by its qualified name, anything else by its type."""
    kind = type(value)  # never isinstance here: a broken `__class__` must not raise
    named = value if issubclass(kind, type) or kind is types.FunctionType else kind
    module, qualname = getattr(named, "__module__", None), getattr(named, "__qualname__", "?")
    path = qualname if module in ("builtins", None) else f"{module}.{qualname}"
    if named is kind:
        return path
    return f"{'class' if issubclass(kind, type) else 'function'} {path}"
