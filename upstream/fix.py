"""`export-fix`: the cache-level fix of vLLM's `*_once` methods as a patch vLLM can merge, with its own test.

    the target's logger module -> `caches.cache_fix.patched` (render first, cache the text) -> the patch's test
    (appended to the checkout's tests/test_logger.py, or a file of its own) -> one `git apply`-able patch

The logger module is `vllm/logger.py` of the target (the installed vLLM or `--vllm-src`); with `--platform`, the
module whose `warning_once` the platform's module-level `logger` has: vLLM's, unless the plugin brings its own.
The test imports only pytest, the standard library and the logger module's `init_logger`.
"""

from __future__ import annotations

import ast
import difflib
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path

from warnonce_guard.caches.cache_fix import STORE, patched, python_lines
from warnonce_guard.caches.renders_first import once_methods
from warnonce_guard.common.errors import GuardError, LoggerNotPatchable
from warnonce_guard.rule.target import PACKAGE, Target, activate, check_loaded, read_source, resolve_target
from warnonce_guard.upstream.render import VLLM_HEADER

FIX_MARKER = "# Exported by warnonce-guard export-fix"  # the patch's first line: how a patch of ours is recognised
TEST_FILE = "tests/test_logger.py"  # where the test goes in a checkout (vLLM's tests of its logger)
OWN_TEST_FILE = "tests/test_logger_once_cache.py"  # where it goes when the target has no such file (a wheel)
TEST_NAME = "test_once_caches_text_not_arguments"
ERROR_CLASS = "_OnceCacheError"
TITLE = "[Bugfix] Key the *_once caches on the rendered message, not its arguments"
WHY = """\
The *_once methods keep their arguments in an lru_cache until 128 newer calls
evict them. An exception logged from its except block holds every frame of its
traceback and their locals: Platform.import_kernels() kept the LLM under
construction alive this way (fixed at six call sites in 0.30.0, by passing
repr(e)), and since every exception is a new cache key, the "once" warning
repeated. Any new caller brings the leak back: a live exception reaches a
*_once method at 15 calls in 0.25.0, 20 in 0.29.0, 14 in 0.30.0, 20 in 0.33.0
and 24 in 0.34.0.

Remember what was logged by (logger, level, rendered text) in a bounded dict
instead, for every *_once method. The record emitted is the one emitted before
(msg the template, args the arguments, the caller's file:line); nothing keeps
an argument; a disabled level renders nothing; a repeated message returns
before the scope check. Arguments that do not fit their message are reported
once, as before. A message first called while its level is off is now logged
once its level is on (the lru_cache had taken the call and never logged it).
"""


@dataclass(frozen=True)
class FileChange:
    """One file of the patch: its path in the checkout, its text before (None: a new file) and after."""

    path: str
    before: str | None
    after: str


@dataclass(frozen=True)
class FixExport:
    """What `export-fix` writes: the logger module patched, and the test that goes with it."""

    logger: FileChange
    test: FileChange
    methods: tuple[str, ...]  # the *_once methods a logger of the module has (debug_once, ..., critical_once)
    source: str  # what was patched, for the command's closing line

    @property
    def changes(self) -> tuple[FileChange, FileChange]:
        return (self.logger, self.test)


def once_test_source(methods: tuple[str, ...], logger_module: str, bound: frozenset[str], standalone: bool) -> str:
    """The patch's test, in vLLM's style (formatted as `ruff format` writes it at line length 88): each `*_once` method
    logs a live exception from its `except` block twice; the exception must be collected, the text logged once, from
    the test's own function. `bound`: the names the file binds at its top (an appended test imports the rest
    locally); `standalone`: a file of its own, with its header and imports."""
    needed = {
        "functools": "import functools",
        "gc": "import gc",
        "logging": "import logging",
        "sys": "import sys",
        "weakref": "import weakref",
    }
    local = [line for name, line in needed.items() if name not in bound]
    first_party = [] if "init_logger" in bound else [f"from {logger_module} import init_logger"]
    local_block = ""
    if not standalone and (local or first_party):
        groups = ["\n".join(f"    {line}" for line in group) for group in (local, first_party) if group]
        local_block = "\n\n".join(groups) + "\n\n"
    listed = ", ".join(f'"{method}"' for method in methods)
    parametrize = f'@pytest.mark.parametrize("method", [{listed}])'
    if len(parametrize) > 88:  # as ruff format breaks it
        parametrize = f'@pytest.mark.parametrize(\n    "method", [{listed}]\n)'
    body = f'''\
class {ERROR_CLASS}(Exception):
    """Built-in exceptions take no weak references; a subclass does."""


{parametrize}
def {TEST_NAME}(method, monkeypatch):
    """A *_once call must not keep its arguments alive in its cache.

    An exception logged in its ``except`` block holds every frame on its
    traceback and their locals (the ``LLM`` under construction, when
    ``import_kernels`` logs a failed kernel import); and each new exception is
    a new cache key, so the warning is logged again.
    """
{local_block}    logger = init_logger(f"{{__name__}}.{{method}}")
    logged = []
    handler = logging.Handler()
    handler.emit = lambda r: logged.append(
        (r.msg, r.getMessage(), r.pathname, r.funcName)
    )
    monkeypatch.setattr(logger, "handlers", [handler])
    monkeypatch.setattr(logger, "propagate", False)
    logger.setLevel(logging.DEBUG)
    module = sys.modules[init_logger.__module__]
    for name, cached in list(vars(module).items()):
        if hasattr(cached, "cache_info"):  # an lru_cache: one of its own meanwhile
            monkeypatch.setattr(module, name, functools.lru_cache(cached.__wrapped__))
    if hasattr(module, "{STORE}"):  # what it logged, meanwhile
        monkeypatch.setattr(module, "{STORE}", {{}})

    raised = []
    for _ in range(2):
        try:
            raise {ERROR_CLASS}("kernel module not built")
        except {ERROR_CLASS} as e:
            raised.append(weakref.ref(e))
            getattr(logger, method)("Failed to import: %r", e)
    gc.collect()

    assert [ref() for ref in raised] == [None, None], "the cache kept the exception"
    text = "Failed to import: {ERROR_CLASS}('kernel module not built')"
    here = (__file__, "{TEST_NAME}")
    assert logged == [("Failed to import: %r", text, *here)], "not logged once as is"
'''
    if not standalone:
        return body
    header = VLLM_HEADER if logger_module.split(".")[0] == PACKAGE else ""  # vLLM's files start with its licence
    imports = "\n".join(needed.values())
    return f"{header}{imports}\n\nimport pytest\n\nfrom {logger_module} import init_logger\n\n\n{body}"


def top_level_names(source: str) -> frozenset[str]:
    """The names a module binds at its top by importing (`import x`, `from m import x`, `import a.b` binds `a`)."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
    return frozenset(names)


def _in_its_line_ends(file: Path, change: FileChange) -> FileChange:
    """`change` with the file's own line ends: CRLF when every line of it ends so (what `read_source` made `\n`),
    so that the patch applies to it and the module written whole changes no other line; else as it is."""
    data = file.read_bytes()
    if not data.count(b"\n") == data.count(b"\r\n") > 0:
        return change
    before = change.before.replace("\n", "\r\n") if change.before is not None else None
    return FileChange(change.path, before, change.after.replace("\n", "\r\n"))


def test_change(root: Path, logger_module: str, methods: tuple[str, ...]) -> FileChange:
    """The test appended to the checkout's tests/test_logger.py (when it tests this logger module and imports
    pytest at its top), else a file of its own."""
    existing = root / TEST_FILE
    if existing.is_file():
        text = read_source(existing)
        bound = top_level_names(text)
        if logger_module in text and "pytest" in bound and TEST_NAME not in text:
            appended = text.rstrip("\n") + "\n\n\n" + once_test_source(methods, logger_module, bound, standalone=False)
            return _in_its_line_ends(existing, FileChange(TEST_FILE, text, appended))
    return FileChange(OWN_TEST_FILE, None, once_test_source(methods, logger_module, frozenset(), standalone=True))


def logger_of_platform(spec: str) -> str:
    """The module whose `*_once` methods the platform's module-level `logger` has (`vllm.logger` for vLLM's own)."""
    from warnonce_guard.rule.platforms import resolve_platform

    resolved = resolve_platform(spec)
    module = importlib.import_module(resolved.defining_module)
    method = getattr(getattr(module, "logger", None), "warning_once", None)
    owner = getattr(getattr(method, "__func__", method), "__module__", None)
    if not owner:
        raise LoggerNotPatchable(
            f"--platform {spec}: {resolved.defining_module} has no module-level `logger` with a warning_once method"
        )
    return str(owner)


def module_file(name: str) -> tuple[Path, str]:
    """An imported module's checkout root and its path there (`vllm/logger.py`)."""
    module = sys.modules.get(name) or importlib.import_module(name)
    path = Path(module.__file__ or "").resolve()
    depth = name.count(".") + (1 if path.name == "__init__.py" else 0)
    root = path.parents[depth]
    return root, path.relative_to(root).as_posix()


def collect_fix(vllm_src: str | None, platform: str | None) -> FixExport:
    """The patch for a target: its vllm/logger.py, or the logger module a platform plugin logs through."""
    target: Target = resolve_target(vllm_src)
    logger_module, root, path = f"{PACKAGE}.logger", target.root, f"{PACKAGE}/logger.py"
    source = target.describe()
    if platform:
        activate(target)
        logger_module = logger_of_platform(platform)
        if target.origin != "installed":
            check_loaded(target)
        if logger_module != f"{PACKAGE}.logger":
            root, path = module_file(logger_module)
        source = f"{logger_module} (the logger of {platform}) on {target.describe()}"
    file = root / path
    if not file.is_file():
        raise LoggerNotPatchable(f"{file}: no such file; the logger module to patch is not there")
    try:
        text = read_source(file)
    except GuardError as err:
        raise LoggerNotPatchable(str(err)) from None
    after = patched(text, path)
    methods = once_methods(text)
    logger = _in_its_line_ends(file, FileChange(path, text, after))
    return FixExport(logger, test_change(root, logger_module, methods), methods, source)


def _diff(change: FileChange) -> str:
    """One file's part of a git patch (a new file, or a change with three lines of context)."""
    before = python_lines(change.before) if change.before is not None else []  # a form feed ends no line
    after = python_lines(change.after)
    old = "/dev/null" if change.before is None else f"a/{change.path}"
    head = [f"diff --git a/{change.path} b/{change.path}\n"]
    if change.before is None:
        head.append("new file mode 100644\n")
    lines = list(difflib.unified_diff(before, after, old, f"b/{change.path}", n=3))
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n")
    if out and out[0].startswith("---"):
        out[0] = f"--- {old}\n"  # difflib writes a tab-separated date when given one; none here
    return "".join(head + out)


def render_patch(fix: FixExport) -> str:
    """The whole patch: our marker and a commit message (git apply skips text before the first diff), then the
    logger module's diff and the test's."""
    head = f"{FIX_MARKER}: re-export it rather than edit it.\n\n{TITLE}\n\n{WHY}"
    return f"{head}\nTest: {fix.test.path}::{TEST_NAME}\n\n" + "".join(_diff(change) for change in fix.changes)


def is_fix_patch(text: str) -> bool:
    """Whether a text is a patch `export-fix` wrote (its first line carries the marker)."""
    return text.startswith(FIX_MARKER)


def first_difference(text: str, wanted: str) -> str | None:
    """Where a file differs from what an export writes now, in one line; None when it does not."""
    if text == wanted:
        return None
    have, want = text.splitlines(), wanted.splitlines()
    line = next((i for i, (a, b) in enumerate(zip(have, want, strict=False)) if a != b), min(len(have), len(want)))
    return f"differs from a fresh export from line {line + 1}; re-export"
