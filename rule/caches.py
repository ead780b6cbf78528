"""Every once-cache the audit and strict mode know: one row per cache, `CACHES`, read from each library's own code.

A row says where the cache lives, what it keys on and how large it is, the call's signature (which keywords it
takes, which of its parameters reach the cache) and whether it renders the message before caching (then nothing but
text is kept). `docs/rules.md` shows the table. Users add rows in `[tool.warnonce-guard]` (`user_caches`), and a
module-level `functools.lru_cache`'d function whose name ends in `_once` is a row of its own in the file that
defines it (`cached_function`).
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

LOGGER = "logger"  # the cache is behind `*_once` methods of logger objects: `logger.warning_once(...)`
FUNCTION = "function"  # the cache is a function called by name: `warn_once(logger, msg)`
KINDS = (LOGGER, FUNCTION)
# logging.Logger's own keywords (`Logger._log`): what a `*_once` method that forwards `**kwargs` to it takes.
LOGGING_KEYWORDS = "exc_info=None, extra=None, stack_info=False, stacklevel=1"
# Decorators that make a function an lru_cache: `functools.lru_cache` (128 entries by default) and `functools.cache`.
_LRU_CACHES = frozenset({"lru_cache", "functools.lru_cache"})
_CACHES = frozenset({"cache", "functools.cache"})
DEFAULT_MAXSIZE = 128  # functools.lru_cache's


class BadSignature(ValueError):
    """A signature that is not a Python parameter list."""


@dataclass(frozen=True)
class Signature:
    """A call's parameters as a `def` writes them (without the logger a method is bound to)."""

    text: str  # `(msg, *args, scope='local')`
    positional: tuple[str, ...]  # positional-or-keyword parameters, in order (positional-only ones included)
    positional_only: int  # how many of them are positional-only
    varargs: str | None
    keyword_only: tuple[str, ...]
    varkw: str | None

    @classmethod
    def parse(cls, text: str) -> Signature:
        """`(a, b=1, *args, c, **kw)` -> a Signature; `BadSignature` for anything that is not a parameter list."""
        try:
            tree = ast.parse(f"def f{text.strip()}: pass")
        except SyntaxError as err:
            raise BadSignature(f"{text!r} is not a parameter list such as '(msg, *args)' ({err.msg})") from None
        (function,) = tree.body
        assert isinstance(function, ast.FunctionDef)
        return cls.of(function.args, text.strip())

    @classmethod
    def of(cls, args: ast.arguments, text: str | None = None) -> Signature:
        """The signature of a parsed `def`."""
        positional = tuple(a.arg for a in (*args.posonlyargs, *args.args))
        return cls(
            text if text is not None else f"({ast.unparse(args)})",
            positional,
            len(args.posonlyargs),
            args.vararg.arg if args.vararg else None,
            tuple(a.arg for a in args.kwonlyargs),
            args.kwarg.arg if args.kwarg else None,
        )

    @property
    def names(self) -> frozenset[str]:
        return frozenset(n for n in (*self.positional, self.varargs, *self.keyword_only, self.varkw) if n)

    def takes_keyword(self, name: str) -> bool:
        """Whether `name=` binds a parameter (or lands in `**kwargs`)."""
        by_keyword = self.positional[self.positional_only :] + self.keyword_only
        return name in by_keyword or self.varkw is not None

    def parameter_at(self, index: int) -> str | None:
        """The parameter a positional argument at `index` binds (None: one too many, the call raises TypeError)."""
        if index < len(self.positional):
            return self.positional[index]
        return self.varargs

    def parameter_named(self, name: str) -> str | None:
        """The parameter `name=` binds (its own, or `**kwargs`), None when the call refuses it."""
        if name in self.positional[self.positional_only :] or name in self.keyword_only:
            return name
        return self.varkw


@dataclass(frozen=True)
class Cache:
    """One once-cache: what the audit checks a call of it against, and where strict mode finds it at run time."""

    key: str  # short and unique: `vllm`, `transformers`, ...
    label: str  # how a message names it: "vLLM's logger *_once lru_cache"
    home: str  # the module it lives in (`vllm.logger`), or where it is written
    kind: Literal["logger", "function"]
    names: tuple[str, ...]  # logger: factories and instances of loggers with the methods; function: its dotted names
    signature: Signature  # the call's parameters (for a logger's method, without the logger)
    keys_on: str  # what the cache keys on, in words
    maxsize: int | None  # None: unbounded
    source: str  # where it is written, with the version read: `vllm 0.33.0 vllm/logger.py:114-135`
    methods: tuple[str, ...] = ()  # logger: the `*_once` methods
    packages: tuple[str, ...] = ()  # logger: a logger imported from a module of these packages is one of these
    message: str | None = "msg"  # the parameter holding the message (what `--fix` formats when it is not a str)
    percent: bool = True  # the arguments after the message are its %-arguments (`--fix` rewrites their placeholders)
    held: frozenset[str] = frozenset()  # parameters that reach the cache but live as long as the process (a logger)
    uncached: frozenset[str] = frozenset()  # parameters that never reach the cache
    renders_first: bool = False  # it renders the message first and keeps only text: nothing live can stay
    runtime: tuple[str, ...] = ()  # where strict mode wraps it: `module:qualname` (or a dotted name) of each callable
    caller_stacklevel: int | None = None  # the stacklevel forwarded to logging that names the call's caller

    @property
    def bounded(self) -> bool:
        return self.maxsize is not None

    @property
    def size(self) -> str:
        return "unbounded" if self.maxsize is None else f"{self.maxsize} entries"

    @property
    def watched(self) -> tuple[str, ...]:
        """The modules whose import may make it present (strict mode's import hook), in order, once each: a place's
        module, or every prefix of a dotted name (which of them is the module is known only once imported)."""
        modules = []
        for place in self.runtime:
            module, colon, _ = place.partition(":")
            parts = module.split(".")
            modules += [module] if colon else [".".join(parts[:n]) for n in range(1, len(parts))]
        return tuple(dict.fromkeys(modules))

    def takes(self, method: str) -> bool:
        """Whether a call of `method` on one of its loggers reaches it (a name ending in one of its methods, as
        `self._warning_once` may be one, counts)."""
        return self.kind == LOGGER and any(method.endswith(own) for own in self.methods)

    def describe(self) -> str:
        """Its cache in a message: "vLLM's logger *_once lru_cache (vllm.logger, 128 entries)"."""
        what = "renders the message first and keeps only its text" if self.renders_first else self.size
        return f"{self.label} ({self.home}, {what})"


_VLLM_METHODS = ("debug_once", "info_once", "warning_once", "error_once")

CACHES: tuple[Cache, ...] = (
    Cache(
        "vllm",
        "vLLM's logger *_once lru_cache",
        "vllm.logger",
        LOGGER,
        ("vllm.logger.init_logger", "vllm.logger.logger"),
        Signature.parse("(msg, *args, scope='local')"),
        "(logger, msg, *args): `scope` only picks a process",
        DEFAULT_MAXSIZE,
        "vllm 0.33.0 vllm/logger.py:114-135 (`@lru_cache` on `_print_*_once`), 163-195 (`_VllmLogger.*_once`), 328",
        methods=_VLLM_METHODS,
        packages=("vllm",),
        uncached=frozenset({"scope"}),
        runtime=tuple(f"vllm.logger:_print_{method}" for method in _VLLM_METHODS),
    ),
    Cache(
        "transformers",
        "transformers' patched Logger.warning_once/info_once lru_cache",
        "transformers.utils.logging",
        LOGGER,
        (
            "logging.getLogger",
            "logging.Logger",
            "logging.root",
            "transformers.utils.logging.get_logger",
            "transformers.logging.get_logger",
            "diffusers.utils.logging.get_logger",
            "diffusers.utils.get_logger",
            "huggingface_hub.utils.logging.get_logger",
        ),
        Signature.parse(f"(msg, *args, {LOGGING_KEYWORDS})"),
        "(logger, *args, **kwargs): every argument and keyword, as given",
        None,
        "transformers 5.25.0 transformers/utils/logging.py:331-343, 346-358 (`functools.lru_cache(None)`, assigned "
        "to `logging.Logger`: every logger of the process once transformers is imported)",
        methods=("warning_once", "info_once"),
        # their modules' loggers are plain logging.Logger objects (`logging.getLogger`, `get_logger` over it)
        packages=(
            "transformers",
            "diffusers",
            "sentence_transformers",
            "unsloth",
            "unsloth_zoo",
            "huggingface_hub",
            "sglang",
        ),
        runtime=("logging:Logger.warning_once", "logging:Logger.info_once"),
        caller_stacklevel=2,
    ),
    Cache(
        "accelerate",
        "accelerate's MultiProcessAdapter.warning_once lru_cache",
        "accelerate.logging",
        LOGGER,
        ("accelerate.logging.get_logger", "accelerate.logging.MultiProcessAdapter"),
        Signature.parse(f"(msg, *args, main_process_only=True, in_order=False, {LOGGING_KEYWORDS})"),
        "(adapter, *args, **kwargs): every argument and keyword, as given",
        None,
        "accelerate 1.16.0 accelerate/logging.py:123-132 (`functools.lru_cache(None)` on the method; `log`, 91-120, "
        "takes main_process_only and in_order)",
        methods=("warning_once",),
        packages=("accelerate",),
        runtime=("accelerate.logging:MultiProcessAdapter.warning_once",),
        caller_stacklevel=3,
    ),
    Cache(
        "sglang-multimodal",
        "sglang's multimodal logger *_once set",
        "sglang.multimodal_gen.runtime.utils.logging_utils",
        LOGGER,
        ("sglang.multimodal_gen.runtime.utils.logging_utils.init_logger",),
        Signature.parse("(msg, *args)"),
        "a set of (logger name, level, msg % args): text only",
        None,
        "sglang 0.5.23 sglang/multimodal_gen/runtime/utils/logging_utils.py:72-98 (`_log_once_guard` renders "
        "`msg % args` into a set), 221-222 (bound by `init_logger`)",
        methods=("warning_once", "info_once"),
        packages=("sglang.multimodal_gen",),
        renders_first=True,
        runtime=(
            "sglang.multimodal_gen.runtime.utils.logging_utils:_print_warning_once",
            "sglang.multimodal_gen.runtime.utils.logging_utils:_print_info_once",
        ),
    ),
    Cache(
        "optimum",
        "optimum's warn_once lru_cache",
        "optimum.utils.logging",
        FUNCTION,
        ("optimum.utils.logging.warn_once",),
        Signature.parse("(logger, msg)"),
        "(logger, msg)",
        None,
        "optimum 2.3.0 optimum/utils/logging.py:272-274 (`lru_cache(None)`)",
        percent=False,
        held=frozenset({"logger"}),
        runtime=("optimum.utils.logging:warn_once",),
    ),
    Cache(
        "torchtune",
        "torchtune's log_once lru_cache",
        "torchtune.utils._logging",
        FUNCTION,
        ("torchtune.utils._logging.log_once",),
        Signature.parse("(logger, msg, level=logging.INFO)"),
        "(logger, msg, level)",
        None,
        "torchtune 0.6.1 torchtune/utils/_logging.py:41-54 (`lru_cache(None)`)",
        percent=False,
        held=frozenset({"logger"}),
        runtime=("torchtune.utils._logging:log_once",),
    ),
    Cache(
        "sglang",
        "sglang's print_warning_once/print_info_once lru_cache",
        "sglang.srt.utils.common",
        FUNCTION,
        (
            "sglang.srt.utils.common.print_warning_once",
            "sglang.srt.utils.common.print_info_once",
            "sglang.srt.utils.print_warning_once",
            "sglang.srt.utils.print_info_once",
        ),
        Signature.parse("(msg)"),
        "(msg)",
        None,
        "sglang 0.5.23 sglang/srt/utils/common.py:2930-2938 (`functools.lru_cache(None)`; re-exported by "
        "sglang/srt/utils/__init__.py's `from sglang.srt.utils.common import *`)",
        percent=False,
        runtime=("sglang.srt.utils.common:print_warning_once", "sglang.srt.utils.common:print_info_once"),
    ),
)
VLLM = CACHES[0]
BY_KEY = {cache.key: cache for cache in CACHES}


def decorator_maxsize(decorator: ast.expr) -> tuple[bool, int | None]:
    """(whether `decorator` makes an lru_cache, its maxsize): `@lru_cache` 128, `@lru_cache(None)` and `@cache`
    unbounded, `@lru_cache(maxsize=N)` N."""
    call = decorator if isinstance(decorator, ast.Call) else None
    name = _dotted(call.func if call else decorator)
    if name in _CACHES and call is None:
        return True, None
    if name not in _LRU_CACHES:
        return False, None
    if call is None:
        return True, DEFAULT_MAXSIZE
    given = [*call.args[:1], *(k.value for k in call.keywords if k.arg == "maxsize")]
    if not given:
        return True, DEFAULT_MAXSIZE
    value = given[0]
    if isinstance(value, ast.Constant) and (value.value is None or isinstance(value.value, int)):
        return True, None if value.value is None or value.value < 0 else value.value
    return True, None  # a size not written as a literal: taken as unbounded, the stricter reading


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def cache_decorator(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[bool, int | None]:
    """Whether a `def` is lru_cache'd (by any of its decorators), and the cache's maxsize."""
    for decorator in function.decorator_list:
        cached, maxsize = decorator_maxsize(decorator)
        if cached:
            return True, maxsize
    return False, None


def cached_function(function: ast.FunctionDef | ast.AsyncFunctionDef, module: str | None, line: int) -> Cache | None:
    """The row of an lru_cache'd module-level function whose name ends in `_once` (None for any other `def`), as
    the audit recognises one in the file it reads: every parameter reaches the cache, a `logger` one is held."""
    cached, maxsize = cache_decorator(function)
    if not cached or not function.name.endswith("_once"):
        return None
    signature = Signature.of(function.args)
    dotted = f"{module}.{function.name}" if module else function.name
    return Cache(
        f"local:{dotted}",
        f"{function.name}'s lru_cache",
        module or "this module",
        FUNCTION,
        (dotted,),
        signature,
        f"({', '.join(signature.positional)})",
        maxsize,
        f"line {line} of this file",
        message=next((p for p in signature.positional if p in ("msg", "message")), None),
        percent=False,
        held=frozenset(p for p in signature.positional if p == "logger"),
    )


# ---- rows from the settings (`[tool.warnonce-guard]`'s `cache` entries) ---------------------------------------------

USER_KEYS = ("name", "kind", "signature", "maxsize", "held", "uncached", "renders-first", "loggers", "methods")


class BadCacheEntry(ValueError):
    """A `cache` entry of the settings that cannot be a row (the message names the entry and the key)."""


def _strings(entry: Mapping[str, object], key: str, where: str) -> tuple[str, ...]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise BadCacheEntry(f"{where}: {key} must be a list of non-empty strings, not {value!r}")
    return tuple(value)


def _dotted_name(value: object, where: str, key: str) -> str:
    if not isinstance(value, str) or not all(part.isidentifier() for part in value.split(".")) or "." not in value:
        raise BadCacheEntry(f"{where}: {key} must be a dotted name such as 'my_plugin.log.warn_once', not {value!r}")
    return value


def user_cache(entry: object, where: str) -> Cache:
    """One `[[tool.warnonce-guard.cache]]` entry as a row:

    name = "my_plugin.log.warn_once"     # the cached callable: a function, or Class.method for kind "logger"
    kind = "function"                    # or "logger": a method of the loggers `loggers` make
    signature = "(logger, msg, *args)"   # the call's parameters (for kind "logger", without self)
    maxsize = 128                        # optional: the lru_cache's size (default: unbounded, the stricter)
    held = ["logger"]                    # optional: parameters that live as long as the process
    uncached = []                        # optional: parameters that never reach the cache
    renders-first = false                # optional: it keeps only the rendered text
    loggers = ["my_plugin.log.get_logger"]   # kind "logger": factories or instances of such loggers
    methods = ["warning_once"]           # kind "logger": default, the last part of name
    """
    if not isinstance(entry, dict):
        raise BadCacheEntry(f"{where}: each cache entry must be a table, not {entry!r}")
    unknown = sorted(set(entry) - set(USER_KEYS))
    if unknown:
        raise BadCacheEntry(f"{where}: unknown key {unknown[0]!r} in a cache entry (known: {', '.join(USER_KEYS)})")
    for required in ("name", "kind", "signature"):
        if required not in entry:
            raise BadCacheEntry(f"{where}: a cache entry needs {required} (name, kind and signature)")
    name = _dotted_name(entry["name"], where, "name")
    where = f"{where} cache {name!r}"
    kind = entry["kind"]
    if kind not in KINDS:
        raise BadCacheEntry(f"{where}: kind must be one of {', '.join(map(repr, KINDS))}, not {kind!r}")
    text = entry["signature"]
    if not isinstance(text, str):
        raise BadCacheEntry(f"{where}: signature must be a string such as '(msg, *args)', not {text!r}")
    try:
        signature = Signature.parse(text)
    except BadSignature as err:
        raise BadCacheEntry(f"{where}: signature {err}") from None
    maxsize = entry.get("maxsize")
    if maxsize is not None and (not isinstance(maxsize, int) or isinstance(maxsize, bool) or maxsize < 1):
        raise BadCacheEntry(f"{where}: maxsize must be a positive integer (leave it out: unbounded), not {maxsize!r}")
    flag = entry.get("renders-first", False)
    if not isinstance(flag, bool):
        raise BadCacheEntry(f"{where}: renders-first must be true or false, not {flag!r}")
    held, uncached = _strings(entry, "held", where), _strings(entry, "uncached", where)
    strays = sorted(set(held + uncached) - signature.names)
    if strays:
        raise BadCacheEntry(f"{where}: {strays[0]!r} is not a parameter of {signature.text}")
    loggers = tuple(_dotted_name(n, where, "loggers") for n in _strings(entry, "loggers", where))
    methods = _strings(entry, "methods", where)
    if kind == FUNCTION and (loggers or methods):
        raise BadCacheEntry(f"{where}: loggers and methods are for kind 'logger', not 'function'")
    owner, _, attribute = name.rpartition(".")
    if kind == LOGGER:
        names = (*loggers, owner)  # `Class.method`: calling the class makes one of its loggers
        methods = methods or (attribute,)
    else:
        names = (name,)
    return Cache(
        f"user:{name}",
        f"{name}'s cache",
        "configured",
        kind,
        names,
        signature,
        signature.text,
        maxsize,
        where,
        methods=methods,
        message=next((p for p in signature.positional if p in ("msg", "message")), None),
        percent=kind == LOGGER and signature.varargs is not None,
        held=frozenset(held),
        uncached=frozenset(uncached),
        renders_first=flag,
        runtime=(name,),
    )


def user_caches(entries: object, where: str) -> tuple[Cache, ...]:
    """The `cache` entries of the settings as rows; `BadCacheEntry` for the first that is not one."""
    if not isinstance(entries, list):
        raise BadCacheEntry(f"{where}: cache must be an array of tables ([[tool.warnonce-guard.cache]]), not {entries}")
    rows = tuple(user_cache(entry, where) for entry in entries)
    seen: set[str] = set()
    for row in rows:
        if row.key in seen:
            raise BadCacheEntry(f"{where}: cache {row.key.removeprefix('user:')!r} is given twice")
        seen.add(row.key)
    return rows


# ---- the model: the rows in use ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Model:
    """The rows an audit or a strict session uses: the table's, with vLLM's as the target's source says, and the
    configured ones (which take a name before the table's)."""

    caches: tuple[Cache, ...] = CACHES

    def with_rows(self, rows: Iterable[Cache]) -> Model:
        return Model((*rows, *self.caches))

    def with_vllm(self, renders_first: bool, source: str) -> Model:
        """vLLM's row as the target's `vllm/logger.py` is written (`renders_first`, read from `source`)."""
        if not renders_first:
            return self
        fixed = dataclasses.replace(
            BY_KEY["vllm"],
            renders_first=True,
            keys_on="(logger, rendered text): the patched `_print_*_once` renders `msg % args` first",
            source=source,
        )
        return Model(tuple(fixed if c.key == "vllm" else c for c in self.caches))

    @property
    def vllm(self) -> Cache:
        return next(c for c in self.caches if c.key == "vllm")

    def named(self, dotted: str) -> Cache | None:
        """The row a dotted name is (a factory or instance of its loggers, or the cached function), else None."""
        return next((c for c in self.caches if dotted in c.names), None)

    def of_package(self, module: str) -> Cache | None:
        """The logger row whose loggers a module of this package makes (the longest package that matches)."""
        best: tuple[int, Cache] | None = None
        for cache in self.caches:
            for package in cache.packages:
                if (module == package or module.startswith(f"{package}.")) and (best is None or len(package) > best[0]):
                    best = (len(package), cache)
        return best[1] if best else None

    def with_method(self, method: str) -> tuple[Cache, ...]:
        """The logger rows a call of `method` on a logger not known here may reach."""
        return tuple(c for c in self.caches if c.takes(method))

    @property
    def methods(self) -> frozenset[str]:
        return frozenset(m for c in self.caches for m in c.methods)

    @property
    def function_names(self) -> frozenset[str]:
        """The last part of each cached function's name (what a file calling one must hold: the scan's prefilter)."""
        return frozenset(n.rpartition(".")[2] for c in self.caches if c.kind == FUNCTION for n in c.names)


DEFAULT_MODEL = Model()
