"""Strict mode: a pytest plugin that checks the once-cache contract at run time, in every cache the model knows
(`caches.model`: vLLM's `_print_*_once`, transformers' patched `Logger.warning_once`, ...) and those configured in
`[tool.warnonce-guard]`, wherever the test process has them (`strict.places`).

Off by default (`pytest --warnonce-strict`, or `warnonce_strict = true`): when on, every test that passes what
`strict.contract` refuses fails (docs/ARCHITECTURE.md, How strict mode works).
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from warnonce_guard.caches.model import DEFAULT_MODEL, BadCacheEntry, Cache, Model, user_caches
from warnonce_guard.strict.calls import Violation
from warnonce_guard.strict.places import RENDERS_FIRST, Places, shown
from warnonce_guard.strict.threads import Origin, Origins

HEADER = "warnonce-strict: on, checking the *_once caches of {caches}{rendering}"
RENDERING = "; rendering first, nothing to check: {caches}"
REMEDY = (
    "Pass only str, int, float, bool, None, bytes (or tuples of them), enum members, module-level classes, "
    'functions and modules; format anything else first, e.g. "%s" % x, repr(e).'
)
NONE_PRESENT = (
    "warnonce-strict: none of the caches it checks was imported in this session: no *_once call was checked "
    "(it looked for {caches})"
)
PRESENT = "warnonce-strict: checked {checked}"
INERT = (
    "warnonce-strict: the configured cache {name} was found nowhere in this session (looked for {places}): nothing "
    "checked it; check its name, loggers and methods"
)
SETTINGS = "warnonce-guard"  # `[tool.warnonce-guard]`, the audit's settings: its `cache` entries add caches
STRICT = pytest.StashKey["StrictMode"]()
_PLUGIN_NAME = "warnonce-strict"
_SENT = "warnonce_strict"  # the report attribute, and the key in an xdist worker's workeroutput


class _ExecThenPatch:
    """Loader wrapper: runs the real loader, then calls `after(module)`; all else (create_module too) is delegated."""

    def __init__(self, inner: object, after: Callable[[ModuleType], None]):
        self._inner = inner
        self._after = after

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        self._after(module)

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


class _ImportHook:
    """Meta-path finder that patches a cache's module as soon as it is imported (found by the other finders)."""

    def __init__(self, watched: frozenset[str], after: Callable[[ModuleType], None]):
        self._watched = watched
        self._after = after

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> object:
        if fullname not in self._watched:
            return None
        for finder in [finder for finder in sys.meta_path if finder is not self]:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ExecThenPatch(spec.loader, self._after)
                return spec
        return None


def _context(thread: threading.Thread, origin: Origin | None, runner: threading.Thread) -> str:
    """Where a call no running test owns came from: empty for the test runner's own thread."""
    if thread is runner:
        return ""
    if origin is None:
        return f"in thread {thread.name!r}"
    if origin.test is None:
        return f"in thread {thread.name!r}, started outside any test"
    return f"in thread {thread.name!r}, started by {origin.test}, after it ended"


def _what_it_was(report: pytest.TestReport) -> str:
    """The outcome a violation overrides, for the failure text."""
    if hasattr(report, "wasxfail"):
        reason = f" ({report.wasxfail})" if report.wasxfail else ""
        return f"(the test is marked xfail{reason}; a refused argument is not the failure it expects)"
    if report.skipped and isinstance(report.longrepr, tuple):
        return f"(the test then skipped: {report.longrepr[2]})"
    return ""


def configured_caches(start: Path) -> tuple[Cache, ...]:
    """The caches `[tool.warnonce-guard]` adds, in the nearest `pyproject.toml` from `start` upwards that has the
    table (as the audit finds it); a bad one is a usage error naming it."""
    for folder in (start, *start.parents):
        file = folder / "pyproject.toml"
        if not file.is_file():
            continue
        try:
            tool = tomllib.loads(file.read_text(encoding="utf-8")).get("tool")
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
            raise pytest.UsageError(f"warnonce-strict: {file}: cannot read its settings ({err})") from None
        if isinstance(tool, dict) and isinstance(tool.get(SETTINGS), dict):
            table = tool[SETTINGS]
            try:
                return user_caches(table["cache"], f"{file} [tool.{SETTINGS}]") if "cache" in table else ()
            except BadCacheEntry as err:
                raise pytest.UsageError(f"warnonce-strict: {err}") from None
    return ()


class StrictMode:
    """The active plugin: owns the patches, the import hook, the thread origins and the violations."""

    def __init__(self, config: pytest.Config, model: Model = DEFAULT_MODEL):
        self.config = config
        self.root = config.rootpath
        self.places = Places(model, self.record)
        self.hook = _ImportHook(self.places.watched, self.patch)
        self.running: str | None = None  # the node id of the test in progress
        self.origins = Origins(lambda: self.running)
        self.lock = threading.Lock()
        self.pending: list[Violation] = []  # charged to the running test's next report
        self.outside: dict[str, None] = {}  # described, once each, in order
        self.charged: list[tuple[str, list[str]]] = []  # (node id and phase, described), from the reports
        self.present: dict[str, str] = {}  # cache key -> what was done with it, from every process (xdist's too)

    # --- recording -------------------------------------------------------------------------------

    def record(self, violation: Violation) -> None:
        thread = threading.current_thread()
        origin = self.origins.owner(thread)
        with self.lock:
            if origin is not None and origin.test is not None and origin.test == self.running:
                self.pending.append(violation)
                return
        self.add_outside(dataclasses.replace(violation, context=_context(thread, origin, self.origins.runner)))

    def add_outside(self, violation: Violation) -> None:
        with self.lock:
            self.outside.setdefault(violation.describe(self.root))

    def take_pending(self) -> list[Violation]:
        with self.lock:
            taken, self.pending = self.pending, []
        return taken

    # --- patching --------------------------------------------------------------------------------

    def patch(self, module: ModuleType | None = None) -> None:
        """Wrap every cache the process has that is not wrapped yet (no-op before their modules are imported)."""
        self.places.patch()
        self.present.update(self.places.present)

    def install(self) -> None:
        sys.meta_path.insert(0, self.hook)
        self.origins.install()
        self.patch()

    def uninstall(self) -> None:
        if self.hook in sys.meta_path:
            sys.meta_path.remove(self.hook)
        self.origins.uninstall()
        self.places.undo()

    # --- reports ---------------------------------------------------------------------------------

    def charge(self, report: pytest.TestReport, violations: list[Violation]) -> None:
        """Fail `report` with `violations` (or add them to its failure); they travel with it, as text."""
        lines = [violation.describe(self.root) for violation in violations]
        setattr(report, _SENT, lines)
        kept = (
            f"warnonce strict: {len(lines)} argument(s) to a *_once logger call would be kept alive by its lru_cache:"
        )
        text = "\n".join([kept, *(f"  {line}" for line in lines), REMEDY])
        if report.failed:
            report.sections.append(("warnonce strict", text))
            return
        was = _what_it_was(report)
        if hasattr(report, "wasxfail"):
            del report.wasxfail
        report.outcome = "failed"
        report.longrepr = f"{text}\n{was}" if was else text

    def pytest_report_header(self, config: pytest.Config) -> str:
        caches = self.places.model.caches
        rendering = self.places.shown({c.key for c in caches if c.renders_first})
        checked = self.places.shown({c.key for c in caches if not c.renders_first})
        return HEADER.format(caches=checked, rendering=RENDERING.format(caches=rendering) if rendering else "")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        self.origins.runner = threading.current_thread()
        self.running = item.nodeid
        try:
            return (yield)
        finally:
            self.running = None
            for violation in self.take_pending():  # made after the teardown's report
                self.add_outside(dataclasses.replace(violation, context=f"after {item.nodeid} ended"))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self.patch()

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: sees the report after skipping's xfail handling
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
        report = yield
        violations = self.take_pending()
        if violations:
            self.charge(report, violations)
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        lines = getattr(report, _SENT, None)  # on the xdist controller: sent with a worker's report
        if lines:
            self.charged.append((f"{report.nodeid} ({report.when})", list(lines)))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """On the xdist controller: what a worker saw outside its tests, and which caches it had."""
        sent = getattr(node, "workeroutput", {}).get(_SENT)
        if sent:
            with self.lock:
                self.outside.update(dict.fromkeys(sent["outside"]))
                self.present.update(sent["present"])

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = getattr(self.config, "workeroutput", None)  # in an xdist worker: sent to the controller
        self.present.update(self.places.present)
        if workeroutput is not None:
            workeroutput[_SENT] = {"outside": list(self.outside), "present": dict(self.present)}
        if self.outside and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        total = sum(len(lines) for _, lines in self.charged) + len(self.outside)
        if total:
            terminalreporter.write_sep("=", f"warnonce strict: {total} refused *_once argument(s)", red=True)
            groups = [*self.charged, *([("outside any test", list(self.outside))] if self.outside else [])]
            for where, lines in groups:
                terminalreporter.write_line(f"{where}:")
                for line in lines:
                    terminalreporter.write_line(f"  {line}")
        model = self.places.model
        for cache in model.caches:
            if cache.key.startswith("user:") and cache.key not in self.present:
                terminalreporter.write_line(INERT.format(name=cache.name, places=", ".join(cache.runtime)), yellow=True)
        if not self.present:
            every = self.places.shown({c.key for c in model.caches})
            terminalreporter.write_line(NONE_PRESENT.format(caches=every), yellow=True)
            return
        checked = [
            f"{shown(c)} ({RENDERS_FIRST})" if self.present[c.key] == RENDERS_FIRST else shown(c)
            for c in model.caches
            if c.key in self.present
        ]
        terminalreporter.write_line(PRESENT.format(checked="; ".join(dict.fromkeys(checked))))


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("warnonce-strict")
    group.addoption(
        "--warnonce-strict",
        action="store_true",
        default=False,
        help="fail tests that pass a once-cache (vLLM's logger *_once, transformers' warning_once, ...) anything it "
        "would keep alive",
    )
    parser.addini("warnonce_strict", type="bool", default=False, help="as --warnonce-strict")


def pytest_configure(config: pytest.Config) -> None:
    if not (config.getoption("warnonce_strict") or config.getini("warnonce_strict")):
        return
    model = DEFAULT_MODEL.with_rows(configured_caches(config.rootpath))
    strict = config.stash[STRICT] = StrictMode(config, model)
    strict.install()
    config.pluginmanager.register(strict, _PLUGIN_NAME)


def pytest_unconfigure(config: pytest.Config) -> None:
    strict = config.stash.get(STRICT, None)
    if strict is not None:
        strict.uninstall()
        config.pluginmanager.unregister(strict)
        del config.stash[STRICT]
