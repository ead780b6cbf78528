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
import functools
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

LOGGER = "logger"  # the cache is behind `*_once` methods of logger objects: `logger.warning_once(...)`
FUNCTION = "function"  # the cache is a function called by name: `warn_once(logger, msg)`
KINDS = (LOGGER, FUNCTION)
ONCE = "_once"  # what a method name ends with to be checked on any logger (`Model.with_method`)
# logging.Logger's own keywords (`Logger._log`): what a `*_once` method that forwards `**kwargs` to it takes.
LOGGING_KEYWORDS = "exc_info=None, extra=None, stack_info=False, stacklevel=1"
# Decorators that make a function an lru_cache: `functools.lru_cache` (128 entries by default) and `functools.cache`,
# by the last part of their name, as written or imported (`lru_cache`, `functools.lru_cache`, `ft.lru_cache`).
_LRU_CACHE, _CACHE = "lru_cache", "cache"
DEFAULT_MAXSIZE = 128  # functools.lru_cache's
Resolve = Callable[[ast.expr], "str | None"]  # what a name stands for through its module's imports


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
    defaults: tuple[tuple[str, object], ...] = ()  # (parameter, its default) of each default written as a literal

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
        given = [*zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True)]
        given += [(a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
        return cls(
            text if text is not None else f"({ast.unparse(args)})",
            positional,
            len(args.posonlyargs),
            args.vararg.arg if args.vararg else None,
            tuple(a.arg for a in args.kwonlyargs),
            args.kwarg.arg if args.kwarg else None,
            tuple((name, d.value) for name, d in given if isinstance(d, ast.Constant)),
        )

    def default(self, name: str) -> object:
        """The literal default of a parameter (None: none, or not a literal)."""
        return dict(self.defaults).get(name)

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
    tupled: frozenset[str] = frozenset()  # parameters made a tuple before the cache gets them (a list is fine)
    renders_first: bool = False  # it renders the message first and keeps only text: nothing live can stay
    runtime: tuple[str, ...] = ()  # where strict mode wraps it: `module:qualname` (or a dotted name) of each callable
    caller_stacklevel: int | None = None  # the stacklevel forwarded to logging that names the call's caller
    replaces: tuple[str, ...] = ()  # a configured row: the keys of the table's rows it stands for (`replace = true`)
    name: str = ""  # the cached callable as its entry names it (`Class.method` for a logger's)

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

    @property
    def claims(self) -> frozenset[str]:
        """The dotted names of what it caches (each method of its loggers' class, each function, each place): a
        configured row claiming one of a table row's names that row."""
        owner = self.name.rpartition(".")[0]
        methods = {f"{owner}.{m}" for m in self.methods} if self.kind == LOGGER else set(self.names)
        return frozenset({self.name, *methods, *(place.replace(":", ".") for place in self.runtime)} - {""})

    def takes(self, method: str) -> bool:
        """Whether a call of `method` on one of its loggers reaches it: one of its methods (or its private name:
        `self._warning_once`), never another method that merely ends the same way (cutlass's `print_warning_once`)."""
        return self.kind == LOGGER and (method in self.methods or method.removeprefix("_") in self.methods)

    def describe(self) -> str:
        """Its cache in a message: "vLLM's logger *_once lru_cache (vllm.logger, 128 entries)"."""
        what = "renders the message first and keeps only its text" if self.renders_first else self.size
        return f"{self.label} ({self.home}, {what})"


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def imports_of(tree: ast.Module) -> Resolve:
    """What a name stands for through the names the module's top-level imports bind with `as` (`memo` after `from
    functools import lru_cache as memo`: `lru_cache`), for `decorator_maxsize`'s `resolve`; None for any other."""
    imported = {
        alias.asname: alias.name
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
        if alias.asname
    }
    return lambda node: imported.get(node.id) if isinstance(node, ast.Name) else None


def decorator_maxsize(decorator: ast.expr, resolve: Resolve = _dotted) -> tuple[bool, int | None]:
    """(whether `decorator` makes an lru_cache that keeps what it is given, its maxsize): `@lru_cache` 128,
    `@lru_cache(None)` and `@cache` unbounded, `@lru_cache(maxsize=N)` N (none for 0). By the last part of its name
    as written, or as `resolve` names it through the module's imports (`memo` after `from functools import
    lru_cache as memo`), whatever module it is from: the stricter reading."""
    call = decorator if isinstance(decorator, ast.Call) else None
    func = call.func if call else decorator
    names = {str(name).rpartition(".")[2] for name in (_dotted(func), resolve(func))}
    if _CACHE in names and call is None:
        return True, None
    if _LRU_CACHE not in names:
        return False, None
    if call is None:
        return True, DEFAULT_MAXSIZE
    given = [*call.args, *(k.value for k in call.keywords if k.arg == "maxsize")]  # (maxsize, typed), or maxsize=
    if not given:
        return True, DEFAULT_MAXSIZE
    value = given[0]
    if isinstance(value, ast.Constant) and (value.value is None or isinstance(value.value, int)):
        # `lru_cache(0)` calls through and keeps nothing: no cache. A literal int is never negative: `-1` is an
        # operation, read as the line below
        return value.value != 0, value.value
    return True, None  # a size not written as a literal: taken as unbounded, the stricter reading


def cache_decorator(
    function: ast.FunctionDef | ast.AsyncFunctionDef, resolve: Resolve = _dotted
) -> tuple[bool, int | None]:
    """Whether a `def` is lru_cache'd (by any of its decorators, `resolve`d as in `decorator_maxsize`), and the
    cache's maxsize."""
    for decorator in function.decorator_list:
        cached, maxsize = decorator_maxsize(decorator, resolve)
        if cached:
            return True, maxsize
    return False, None


def cached_function(
    function: ast.FunctionDef | ast.AsyncFunctionDef, module: str | None, line: int, resolve: Resolve = _dotted
) -> Cache | None:
    """The row of an lru_cache'd module-level function whose name ends in `_once` (None for any other `def`), as
    the audit recognises one in the file it reads: every parameter reaches the cache, a `logger` one is held."""
    cached, maxsize = cache_decorator(function, resolve)
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


# ---- rows: the table's (caches/caches.toml) and the settings' (`[[tool.warnonce-guard.cache]]`), one validator -------

# What every entry may say (`row`'s docstring); a table row must say KEY, LABEL and SOURCE too, and only a settings'
# entry says `replace`.
KEYS = (
    *("name", "kind", "signature", "maxsize", "held", "uncached", "tupled", "renders-first", "loggers", "methods"),
    *("also", "packages", "places", "key", "label", "home", "keys-on", "source", "caller-stacklevel", "replace"),
)
TABLE_ONLY = ("key", "label", "source")
TABLE = Path(__file__).with_name("caches.toml")


class BadCacheEntry(ValueError):
    """A cache entry that cannot be a row (the message names the entry and the key)."""


def _strings(entry: Mapping[str, object], key: str, where: str) -> tuple[str, ...]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise BadCacheEntry(f"{where}: {key} must be a list of non-empty strings, not {value!r}")
    return tuple(value)


def _dotted_name(value: object, where: str, key: str) -> str:
    if not isinstance(value, str) or not all(part.isidentifier() for part in value.split(".")) or "." not in value:
        raise BadCacheEntry(f"{where}: {key} must be a dotted name such as 'my_plugin.log.warn_once', not {value!r}")
    return value


def _text(entry: Mapping[str, object], key: str, where: str, default: str) -> str:
    value = entry.get(key, default)
    if not isinstance(value, str) or not value.strip():
        raise BadCacheEntry(f"{where}: {key} must be a non-empty string, not {value!r}")
    return value


def _flag(entry: Mapping[str, object], key: str, where: str) -> bool:
    value = entry.get(key, False)
    if not isinstance(value, bool):
        raise BadCacheEntry(f"{where}: {key} must be true or false, not {value!r}")
    return value


def _size(entry: Mapping[str, object], key: str, where: str, leave_out: str) -> int | None:
    value = entry.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise BadCacheEntry(f"{where}: {key} must be a positive integer ({leave_out}), not {value!r}")
    return value


def row(entry: object, where: str, table: bool) -> Cache:
    """One cache entry as a row, the table's (`table`) or the settings':

    name = "my_plugin.log.warn_once"     # the cached callable: a function, or Class.method for kind "logger"
    kind = "function"                    # or "logger": a method of the loggers `loggers` make
    signature = "(logger, msg, *args)"   # the call's parameters (for kind "logger", without self)
    maxsize = 128                        # optional: the lru_cache's size (default: unbounded, the stricter)
    held = ["logger"]                    # optional: parameters that live as long as the process
    uncached = []                        # optional: parameters that never reach the cache
    tupled = []                          # optional: parameters made a tuple before the cache gets them
    renders-first = false                # optional: it keeps only the rendered text
    loggers = ["my_plugin.log.get_logger"]   # kind "logger": factories or instances of such loggers
    methods = ["warning_once"]           # kind "logger": default, the last part of name
    also = []                            # kind "function": more dotted names of it
    packages = []                        # kind "logger": a logger imported from these packages' modules is one
    places = []                          # where strict mode wraps it (`module:qualname`); default: name (each method)
    replace = false                      # a settings' entry naming a cache of the table: use it instead
    key, label, home, keys-on, source, caller-stacklevel: how the table names and cites its rows
    """
    if not isinstance(entry, dict):
        raise BadCacheEntry(f"{where}: each cache entry must be a table, not {entry!r}")
    known = [k for k in KEYS if k != "replace"] if table else [k for k in KEYS if k not in TABLE_ONLY]
    unknown = sorted(set(entry) - set(known))
    if unknown:
        raise BadCacheEntry(f"{where}: unknown key {unknown[0]!r} in a cache entry (known: {', '.join(known)})")
    required = ("name", "kind", "signature", *(TABLE_ONLY if table else ()))
    for key in required:
        if key not in entry:
            raise BadCacheEntry(f"{where}: a cache entry needs {key} ({', '.join(required)})")
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
    maxsize = _size(entry, "maxsize", where, "leave it out: unbounded")
    stacklevel = _size(entry, "caller-stacklevel", where, "the stacklevel that names the caller")
    held, uncached = _strings(entry, "held", where), _strings(entry, "uncached", where)
    tupled = _strings(entry, "tupled", where)
    strays = sorted(set(held + uncached + tupled) - signature.names)
    if strays:
        raise BadCacheEntry(f"{where}: {strays[0]!r} is not a parameter of {signature.text}")
    loggers = tuple(_dotted_name(n, where, "loggers") for n in _strings(entry, "loggers", where))
    methods = _strings(entry, "methods", where)
    packages, places = _strings(entry, "packages", where), _strings(entry, "places", where)
    also = tuple(_dotted_name(n, where, "also") for n in _strings(entry, "also", where))
    if kind == FUNCTION and (loggers or methods or packages):
        raise BadCacheEntry(f"{where}: loggers, methods and packages are for kind 'logger', not 'function'")
    if kind == LOGGER and also:
        raise BadCacheEntry(f"{where}: also is for kind 'function' (a logger's are its loggers)")
    owner, _, attribute = name.rpartition(".")
    if kind == LOGGER:
        methods = methods or (attribute,)
        names = tuple(dict.fromkeys((*loggers, owner)))  # `Class.method`: calling the class makes one of its loggers
        places = places or tuple(f"{owner}.{method}" for method in methods)
    else:
        names = (name, *also)
        places = places or names
    return Cache(
        _text(entry, "key", where, f"user:{name}"),
        _text(entry, "label", where, f"{name}'s cache"),
        _text(entry, "home", where, "configured"),
        kind,
        names,
        signature,
        _text(entry, "keys-on", where, signature.text),
        maxsize,
        _text(entry, "source", where, where),
        methods=methods,
        packages=packages,
        message=next((p for p in signature.positional if p in ("msg", "message")), None),
        percent=signature.varargs is not None and signature.positional[:1] == ("msg",),
        held=frozenset(held),
        uncached=frozenset(uncached),
        tupled=frozenset(tupled),
        renders_first=_flag(entry, "renders-first", where),
        runtime=places,
        caller_stacklevel=stacklevel,
        replaces=("?",) if _flag(entry, "replace", where) else (),
        name=name,
    )


def rows(entries: object, where: str, table: bool = False) -> tuple[Cache, ...]:
    """Cache entries as rows; `BadCacheEntry` for the first that is not one, or a key given twice."""
    if not isinstance(entries, list):
        raise BadCacheEntry(f"{where}: cache must be an array of tables ([[tool.warnonce-guard.cache]]), not {entries}")
    found = tuple(row(entry, where, table) for entry in entries)
    seen: set[str] = set()
    for cache in found:
        if cache.key in seen:
            raise BadCacheEntry(f"{where}: cache {cache.key.removeprefix('user:')!r} is given twice")
        seen.add(cache.key)
    return found


def user_caches(entries: object, where: str) -> tuple[Cache, ...]:
    """The settings' `cache` entries as rows: one that names a cache of the table (`CACHES`) is refused unless it says
    `replace = true`, and then replaces the rows it names; `replace` naming none is refused too."""
    found = []
    for cache in rows(entries, where):
        named = tuple(t.key for t in CACHES if t.claims & cache.claims)
        shown = ", ".join(repr(key) for key in named)
        if named and not cache.replaces:
            raise BadCacheEntry(
                f"{where} cache {cache.runtime[0]!r}: it names the built-in cache {shown}; say replace = true to use "
                "this entry instead, or drop it"
            )
        if cache.replaces and not named:
            raise BadCacheEntry(f"{where} cache {cache.runtime[0]!r}: replace = true, but it names no built-in cache")
        found.append(dataclasses.replace(cache, replaces=named))
    return tuple(found)


def _table() -> tuple[Cache, ...]:
    try:
        entries = tomllib.loads(TABLE.read_text(encoding="utf-8")).get("cache")
    except (OSError, tomllib.TOMLDecodeError) as err:  # a broken installation, not the user's input
        raise RuntimeError(f"{TABLE}: the table of caches cannot be read ({err})") from None
    return rows(entries, str(TABLE.name), table=True)


CACHES: tuple[Cache, ...] = _table()
VLLM = next(c for c in CACHES if c.key == "vllm")
BY_KEY = {cache.key: cache for cache in CACHES}


# ---- the model: the rows in use ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Model:
    """The rows an audit or a strict session uses: the table's, with vLLM's as the target's source says, and the
    configured ones (which take a name before the table's, and drop the table's rows they replace)."""

    caches: tuple[Cache, ...] = CACHES

    def with_rows(self, rows: Iterable[Cache]) -> Model:
        added = tuple(rows)
        replaced = {key for cache in added for key in cache.replaces}
        return Model((*added, *(c for c in self.caches if c.key not in replaced)))

    def with_vllm(self, renders_first: bool, source: str) -> Model:
        """vLLM's row as the target's `vllm/logger.py` is written (`renders_first`, read from `source`)."""
        if not renders_first or self.vllm is None:
            return self
        fixed = dataclasses.replace(
            self.vllm,
            renders_first=True,
            keys_on="(logger, rendered text): the patched `_print_*_once` renders `msg % args` first",
            source=source,
        )
        return Model(tuple(fixed if c.key == "vllm" else c for c in self.caches))

    @property
    def vllm(self) -> Cache | None:
        """vLLM's row (None: a configured entry replaces it)."""
        return next((c for c in self.caches if c.key == "vllm"), None)

    def named(self, dotted: str) -> Cache | None:
        """The row a dotted name is (a factory or instance of its loggers, or the cached function), else None; a name
        of the same package ending the same way is one too (a re-export: `deepspeed.utils.log_dist_once`)."""
        exact = next((c for c in self.caches if dotted in c.names), None)
        if exact is not None or "." not in dotted:
            return exact
        top, _, last = dotted.partition(".")[0], None, dotted.rpartition(".")[2]
        return next(
            (c for c in self.caches for n in c.names if n.rpartition(".")[2] == last and n.partition(".")[0] == top),
            None,
        )

    def of_package(self, module: str) -> Cache | None:
        """The logger row whose loggers a module of this package makes (the longest package that matches)."""
        best: tuple[int, Cache] | None = None
        for cache in self.caches:
            for package in cache.packages:
                if (module == package or module.startswith(f"{package}.")) and (best is None or len(package) > best[0]):
                    best = (len(package), cache)
        return best[1] if best else None

    def with_method(self, method: str) -> tuple[Cache, ...]:
        """The logger rows a call of `method` on a logger not known here may reach: only a `*_once` method is
        distinctive enough (a `warn` on a receiver not followed to a WarningCache is not one)."""
        return tuple(c for c in self.caches if c.takes(method)) if method.endswith(ONCE) else ()

    @functools.cached_property
    def methods(self) -> frozenset[str]:
        return frozenset(m for c in self.caches for m in c.methods)

    @functools.cached_property
    def line_words(self) -> tuple[str, ...]:
        """What a line holding such a call holds, in a file the prefilter kept: a needle, or a method's name."""
        return tuple(sorted({*self.needles, ONCE, *(m for m in self.methods if not m.endswith(ONCE))}))

    @functools.cached_property
    def function_names(self) -> frozenset[str]:
        """The last part of each cached function's name."""
        return frozenset(n.rpartition(".")[2] for c in self.caches if c.kind == FUNCTION for n in c.names)

    @functools.cached_property
    def needles(self) -> tuple[str, ...]:
        """What a file holding a call of one of the rows holds (the audit's prefilter, with `local_needles`): each
        `*_once` method's name (a call, an alias, a `getattr` names it), each cached function's last name, and for
        a method not named `*_once` (which counts only on a receiver followed to its loggers) the last name of each
        of its loggers."""
        found = {*self.function_names, *(m for m in self.methods if m.endswith(ONCE))}
        for cache in self.caches:
            if any(not m.endswith(ONCE) for m in cache.methods):
                found |= {n.rpartition(".")[2] for n in cache.names}
        return tuple(sorted(found))

    def holds_call(self, source: str) -> bool:
        """Whether a module's source may call one of the rows (else it need not be read): it holds a needle, or
        defines a cached `*_once` function of its own (`cached_function`: `_once` and a `cache` decorator)."""
        if ONCE in source and ("cache" in source or any(n in source for n in self._needles[0])):
            return True
        return any(n in source for n in self._needles[1])

    @functools.cached_property
    def _needles(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The needles that hold `_once`, and the others: most files hold no `_once`, one search each."""
        return tuple(n for n in self.needles if ONCE in n), tuple(n for n in self.needles if ONCE not in n)


DEFAULT_MODEL = Model()
