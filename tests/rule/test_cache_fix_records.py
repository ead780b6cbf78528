"""What a handler sees with and without the cache-level fix: vLLM 0.33.0's own `vllm/logger.py` (tests/data) and the
same patched by `caches.cache_fix.patched`, each imported as the logger module of a small package that stands in for the
rest of vLLM (its `envs`, `logging_utils` and `distributed.parallel_state`: the scope check runs as vLLM's does)."""

from __future__ import annotations

import gc
import importlib
import inspect
import io
import json
import logging
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from warnonce_guard.caches.cache_fix import patched

from tests import layout
from tests.rule.test_cache_fix import with_critical_once
from tests.toy import purge, unique_package, write

STANDS_IN = {
    "__init__.py": "",
    "envs.py": """
        VLLM_LOGGING_PREFIX = ""
        VLLM_LOGGING_LEVEL = "INFO"
        VLLM_LOGGING_STREAM = "ext://sys.stdout"
        VLLM_LOGGING_COLOR = "0"
        NO_COLOR = True
        FORCE_COLOR = False
        VLLM_CONFIGURE_LOGGING = False
        VLLM_LOGGING_CONFIG_PATH = None
    """,
    "logging_utils/__init__.py": """
        import logging

        class NewLineFormatter(logging.Formatter):
            pass

        class ColoredFormatter(NewLineFormatter):
            pass
    """,
    "logging_utils/formatter.py": 'JSON_FORMAT = "%(message)s"\n',
    "distributed/__init__.py": "",
    "distributed/parallel_state.py": """
        def is_global_first_rank():
            return True

        def is_local_first_rank():
            return True
    """,
}


def vllm_logger_source() -> str:
    return (layout.DATA / "vllm-0.33.0-logger" / "logger.py.txt").read_text(encoding="utf-8")


@pytest.fixture
def load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Import a logger module's source as `<a package standing in for vllm>.logger`."""
    made: list[str] = []

    def loader(source: str) -> ModuleType:
        package = unique_package()
        made.append(package)
        for path, text in STANDS_IN.items():
            write(tmp_path, f"{package}/{path}", text)
        write(tmp_path, f"{package}/logger.py", source.replace("vllm.", f"{package}."))
        importlib.invalidate_caches()
        return importlib.import_module(f"{package}.logger")

    monkeypatch.syspath_prepend(str(tmp_path))
    yield loader
    for package in made:
        purge(package)


@pytest.fixture
def both(load: Any) -> tuple[ModuleType, ModuleType]:
    source = vllm_logger_source()
    return load(source), load(patched(source))


class Kernel(Mapping[str, str]):
    """A hashable mapping (vLLM's lru_cache takes hashable arguments only): logging renders `%(name)s` from it."""

    def __init__(self, **values: str) -> None:
        self._values = values

    def __getitem__(self, key: str) -> str:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._values.items())))


class Template(logging.Filter):
    """A filter that groups by the template and reads the arguments, as Sentry and log aggregators do."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[Any, ...]] = []

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, Mapping) else tuple(map(repr, record.args or ()))
        self.seen.append((record.msg, args))
        return True


class Json(logging.Formatter):
    """A structured formatter: the template, its arguments and the text, the caller's file and line."""

    def format(self, record: logging.LogRecord) -> str:
        args = record.args if isinstance(record.args, Mapping) else [repr(a) for a in record.args or ()]
        fields = {"msg": record.msg, "args": args, "message": record.getMessage(), "level": record.levelname}
        return json.dumps({**fields, "file": record.filename, "line": record.lineno, "function": record.funcName})


def attach(logger: logging.Logger) -> tuple[list[logging.LogRecord], Template, io.StringIO]:
    """A handler keeping the records, a filter reading them, a JSON formatter writing them."""
    kept: list[logging.LogRecord] = []
    stream = io.StringIO()
    keeping = logging.Handler()
    keeping.emit = kept.append  # type: ignore[method-assign]
    structured = logging.StreamHandler(stream)
    structured.setFormatter(Json())
    template = Template()
    logger.addFilter(template)
    logger.handlers, logger.propagate = [keeping, structured], False
    logger.setLevel(logging.DEBUG)
    return kept, template, stream


def drive(logger: Any, error: Exception) -> None:
    """The calls each logger gets, from the same lines (so the same file:line on both sides)."""
    for _ in range(2):
        logger.warning_once("Failed to import from %s: %r", "vllm._C", error)
        logger.info_once("%(kernel)s is missing", Kernel(kernel="vllm._C"))
        logger.debug_once("%d kernels, %.1f%% built", 3, 66.67)
        logger.error_once("no GPU")
        logger.warning_once("%s", "a second message", scope="global")
    logger.error_once("no GPU", scope="process")  # logged already: scope does not make it new


def record_view(record: logging.LogRecord) -> tuple[Any, ...]:
    args = record.args if isinstance(record.args, Mapping) else tuple(map(repr, record.args or ()))
    where = (record.pathname, record.lineno, record.funcName, record.stack_info, record.exc_info)
    return (record.levelno, record.msg, args, record.getMessage(), *where)


def test_a_handler_a_filter_and_a_json_formatter_see_the_same_records_with_and_without_the_fix(
    both: tuple[ModuleType, ModuleType],
) -> None:
    error = ImportError("No module named 'vllm._C'")
    seen = []
    for module in both:
        logger = module.init_logger(f"{module.__name__}.records")
        kept, template, stream = attach(logger)
        drive(logger, error)
        lines = [json.loads(line) for line in stream.getvalue().splitlines()]
        seen.append(([record_view(r) for r in kept], template.seen, lines))
        logger.handlers = []

    stock, fixed = seen
    assert fixed == stock
    records, _, lines = fixed
    assert [(r[1], r[3]) for r in records] == [
        ("Failed to import from %s: %r", "Failed to import from vllm._C: ImportError(\"No module named 'vllm._C'\")"),
        ("%(kernel)s is missing", "vllm._C is missing"),
        ("%d kernels, %.1f%% built", "3 kernels, 66.7% built"),
        ("no GPU", "no GPU"),
        ("%s", "a second message"),
    ]
    assert {(line["file"], line["function"]) for line in lines} == {("test_cache_fix_records.py", "drive")}


def test_arguments_that_do_not_fit_are_reported_once_as_vllms_cache_reports_them(
    both: tuple[ModuleType, ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    reports = []
    for module in both:
        logger = module.init_logger(f"{module.__name__}.unfit")
        logger.handlers, logger.propagate = [logging.StreamHandler()], False
        logger.setLevel(logging.DEBUG)
        error = ImportError("not built")
        for _ in range(3):
            logger.warning_once("Failed to import", error)  # no placeholder for the exception
        reports.append(capsys.readouterr().err)
        logger.handlers = []

    stock, fixed = reports
    assert stock.count("--- Logging error ---") == fixed.count("--- Logging error ---") == 1
    assert "Message: 'Failed to import'\nArguments: (ImportError('not built'),)" in fixed


def test_arguments_that_do_not_fit_are_not_kept_by_the_fix(
    both: tuple[ModuleType, ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    _, fixed = both
    logger = fixed.init_logger(f"{fixed.__name__}.unfit-kept")
    logger.handlers, logger.propagate = [logging.StreamHandler()], False
    refs = []
    for _ in range(2):
        error = Unbuilt("not built")
        refs.append(weakref.ref(error))
        logger.warning_once("Failed to import", error)
    del error
    gc.collect()

    assert capsys.readouterr().err.count("--- Logging error ---") == 1  # two exceptions of a type: one report
    assert [ref() for ref in refs] == [None, None]
    logger.handlers = []


class Unbuilt(ImportError):
    """Built-in exceptions take no weak references; a subclass does."""


class Counted:
    """An argument that counts how often it is rendered (equal to every other, as a cache key)."""

    renders = 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Counted)

    def __hash__(self) -> int:
        return 1

    def __str__(self) -> str:
        Counted.renders += 1
        return "counted"

    __repr__ = __format__ = lambda self, *_: str(self)  # type: ignore[assignment]


def test_a_disabled_level_renders_nothing_and_keeps_nothing_and_logs_once_enabled(
    both: tuple[ModuleType, ModuleType],
) -> None:
    """vLLM's cache takes a call at a disabled level as made: once the level is on, that message is never logged
    (until 128 newer calls evict it). With the fix nothing is rendered or remembered while the level is off, so it is
    logged the first time it is called with the level on: the one behaviour that differs, on purpose."""
    logged = []
    for module in both:
        logger = module.init_logger(f"{module.__name__}.disabled")
        kept: list[str] = []
        handler = logging.Handler()
        handler.emit = lambda r, kept=kept: kept.append(r.getMessage())  # type: ignore[method-assign]
        logger.handlers, logger.propagate = [handler], False
        logger.setLevel(logging.WARNING)
        Counted.renders = 0
        argument = Counted()
        ref = weakref.ref(argument)
        logger.debug_once("kernel %s", argument)
        renders = Counted.renders
        del argument
        gc.collect()
        logger.setLevel(logging.DEBUG)
        logger.debug_once("kernel %s", Counted())
        logged.append((renders, ref() is None, kept))
        logger.handlers = []

    stock, fixed = logged
    assert stock == (0, False, [])  # kept in the cache, and its message never logged
    assert fixed == (0, True, ["kernel counted"])


def test_a_further_critical_once_logs_vllms_record_once_and_keeps_nothing(load: Any) -> None:
    module = load(patched(with_critical_once(vllm_logger_source())))
    logger = module.init_logger(f"{module.__name__}.critical")
    kept: list[tuple[str, str, str, int]] = []
    handler = logging.Handler()
    handler.emit = lambda r: kept.append((r.levelname, r.msg, r.getMessage(), r.lineno))  # type: ignore[method-assign]
    logger.handlers, logger.propagate = [handler], False
    refs = []
    for _ in range(2):
        try:
            raise Unbuilt("engine")
        except Unbuilt as e:
            refs.append(weakref.ref(e))
            line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
            logger.critical_once("engine died: %r", e)
    gc.collect()

    assert kept == [("CRITICAL", "engine died: %r", "engine died: Unbuilt('engine')", line)]
    assert [ref() for ref in refs] == [None, None]
    logger.handlers = []


def test_cache_clear_of_a_printer_forgets_its_level_as_the_lru_cache_did(both: tuple[ModuleType, ModuleType]) -> None:
    """vLLM's own tests call `vllm.logger._print_warning_once.cache_clear()` (tests/watermarking)."""
    logged = []
    for module in both:
        logger = module.init_logger(f"{module.__name__}.clear")
        kept: list[str] = []
        handler = logging.Handler()
        handler.emit = lambda r, kept=kept: kept.append(r.getMessage())  # type: ignore[method-assign]
        logger.handlers, logger.propagate = [handler], False
        logger.setLevel(logging.DEBUG)
        logger.warning_once("greedy")
        logger.info_once("kept")
        module._print_warning_once.cache_clear()
        logger.warning_once("greedy")
        logger.info_once("kept")
        logged.append(kept)
        logger.handlers = []

    assert logged == [["greedy", "kept", "greedy"]] * 2
