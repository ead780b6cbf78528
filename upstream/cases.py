"""The cases of an exported test: one per cached kernel-import site, in values a pytest module can spell.

A case is what a guard does to its site (`guards.drive`), written down: the function that runs the site, the
kernel module to block, the text the site logs for the blocked import (`guards.drive.rendered_text`, with the
exception written `{error!r}`), and what its branch tests must return (`guards.steering.plan`, each value as
source). A site none of that can spell (it runs at import time, logs through another name than its module's
`logger`, a text or a value without a source form) is left out, with a note naming it.
"""

from __future__ import annotations

import ast
import enum
import importlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import libcst as cst
from warnonce_guard.common.errors import NothingToCheck
from warnonce_guard.common.notes import note
from warnonce_guard.guards.drive import import_platform_module, rendered_text
from warnonce_guard.guards.steering import CannotSteer, Step, plan
from warnonce_guard.rule.platforms import PlatformTarget, platform_sites, resolve_platform
from warnonce_guard.rule.site_row import Site, current_package_of
from warnonce_guard.rule.site_rule import imported_modules, is_kernel_module
from warnonce_guard.rule.sites import discover
from warnonce_guard.rule.target import PACKAGE, activate, check_loaded, read_source, resolve_target
from warnonce_guard.upstream.words import BLOCKED_CLASS, BLOCKED_MESSAGE, LOGGER

_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


class CannotExport(Exception):
    """A site the exported test cannot drive as written (the note says why)."""


@dataclass(frozen=True)
class Case:
    """One site, as the exported test drives it."""

    id: str  # the pytest id: the site's guard id (`Site.test_id`) without a driver
    site: str  # file:line of the logging call
    call: str  # module:qualname of the function that runs the site (the platform class's with --platform)
    kernel: str  # the kernel module blocked
    warning: str  # the text logged once; `{error!r}` / `{error}` stand for the blocked import's exception
    steer: tuple[tuple[str, str], ...]  # (a branch test on the way, as written; the source of what it returns)
    imports: tuple[tuple[str, str], ...]  # (module, name) the sources of `steer` need

    @property
    def caller(self) -> str:
        """The module the exported test imports to find `call`."""
        return self.call.partition(":")[0]


@dataclass(frozen=True)
class Export:
    """What an export writes: the cases, and where they come from."""

    cases: tuple[Case, ...]
    stand_ins: tuple[tuple[str, tuple[str, ...]], ...]  # caller module -> kernel modules it imports at its top
    first_party: str  # the package whose tests/ the module is for: vllm, or the plugin's
    source: str  # what was exported, for the command's closing line

    @property
    def for_vllm(self) -> bool:
        return self.first_party == PACKAGE


def blocked(kernel: str) -> ImportError:
    """An exception equal in type name and message to the one the exported test raises for `kernel`."""
    kind = type(BLOCKED_CLASS, (ImportError,), {})
    return kind(BLOCKED_MESSAGE.format(kernel=kernel))


def warning_template(site: Site) -> str:
    """The text the site logs for the blocked import, with the exception written `{error!r}` (its repr) or
    `{error}` (its str): what the exported test formats with its own exception."""
    error = blocked(site.kernel_module)
    try:
        text = rendered_text(site, error)
        if text is None:
            raise CannotExport(f"its text ({site.message_source}, {', '.join(site.args)}) uses more than the exception")
        template = _escaped(text).replace(_escaped(repr(error)), "{error!r}").replace(_escaped(str(error)), "{error}")
        if template.format(error=error) != text or "{error" not in template:
            raise CannotExport(f"its text {text!r} does not show the exception as its repr or str")
        return template
    finally:
        del error


def _escaped(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def value_source(value: Any) -> tuple[str, tuple[str, str] | None]:
    """The source of a value steering chose, and the import it needs (`(module, name)`), or `CannotExport`."""
    if isinstance(value, enum.Enum):  # first: an IntEnum's member is an int too
        kind = type(value)
        top = kind.__qualname__.split(".")[0]
        try:
            found = importlib.import_module(kind.__module__)
            for part in kind.__qualname__.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError):
            found = None
        if found is kind and "<" not in kind.__qualname__:
            return f"{kind.__qualname__}.{value.name}", (kind.__module__, top)
    elif value is None or type(value) in (bool, int, float, str):
        return python_literal(value), None
    raise CannotExport(f"steering needs {value!r}, which has no source form")


def python_literal(value: object) -> str:
    """`repr`, with strings in double quotes where that takes no more escapes (as `ruff format` writes them)."""
    text = repr(value)
    if isinstance(value, str) and text.startswith("'") and '"' not in value:
        return '"' + text[1:-1].replace("\\'", "'") + '"'
    return text


def _steer(site: Site, steps: list[Step], namespace: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """Each step as (the branch test as written, its value's source). The test's owner must be a dotted name that
    leads from the site's module to the object steering patches: the exported test follows it there."""
    out = []
    for step in steps:
        path = step.test.removesuffix("()") if step.call else step.test
        if not _DOTTED.fullmatch(path) or path.rpartition(".")[2] != step.attr:
            raise CannotExport(f"its branch test `{step.test}` patches something that is not a dotted name")
        first, *rest = path.rpartition(".")[0].split(".")
        owner = namespace.get(first)
        for part in rest:
            owner = getattr(owner, part, None)
        if owner is not step.owner:
            raise CannotExport(f"`{path}` does not lead from {site.module} to what steering patches")
        out.append((step.test, value_source(step.value)[0]))
    return tuple(out)


def _imports(steps: Iterable[Step]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({needed for step in steps if (needed := value_source(step.value)[1]) is not None}))


def case_of(site: Site, namespace: dict[str, Any] | None) -> Case:
    """The case of one site (`namespace`: the site's module's, when it has branch tests to steer)."""
    if site.qualname == "<module>":
        raise CannotExport("it runs when its module is imported, not from a function")
    if site.receiver != LOGGER:
        raise CannotExport(f"it logs through `{site.receiver}`, not its module's `{LOGGER}`")
    if site.grouped:  # the exported test (vLLM's, for Python 3.10 too) records only what a plain handler logs
        raise CannotExport("its handler is an `except*`, which the exported test does not drive (the guards do)")
    steps: list[Step] = []
    if namespace is not None:
        try:
            steps = plan(site.conditions, namespace)
        except CannotSteer as err:
            raise CannotExport(str(err)) from None
    steer = _steer(site, steps, namespace or {})
    call = f"{site.driver}.{site.function_name}" if site.driver else f"{site.module}:{site.qualname}"
    return Case(
        id=replace(site, driver=None).test_id,
        site=f"{site.file}:{site.line}",
        call=call,
        kernel=site.kernel_module,
        warning=warning_template(site),
        steer=steer,
        imports=_imports(steps),
    )


def _needs_steering(site: Site) -> bool:
    return any(not condition.in_handler for condition in site.conditions)


def cases_of(sites: Iterable[Site], packages: tuple[str, ...]) -> list[Case]:
    """A case per cached site; a site that cannot be one is noted and left out. Modules are imported (kernel
    modules stubbed meanwhile, as the guards import them) only for sites with branch tests to steer."""
    found = []
    for site in sites:
        if not site.cached:
            continue
        try:
            namespace = None
            if _needs_steering(site):
                namespace = dict(vars(import_platform_module(site.module, *packages, site.package)))
            found.append(case_of(site, namespace))
        except CannotExport as err:
            note(f"{site.file}:{site.line} ({site.kernel_module}) is not exported: {err}")
    return found


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The simple statements a module runs when imported: not inside a function or class."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        blocks = [getattr(stmt, name, []) for name in ("body", "orelse", "finalbody")]
        blocks += [handler.body for handler in getattr(stmt, "handlers", [])]
        if any(blocks):
            for block in blocks:
                yield from _top_level(block)
        else:
            yield stmt


def top_level_kernels(source: str, file: str, module: str, packages: tuple[str, ...]) -> tuple[str, ...]:
    """The kernel modules (of `packages`, by the site rule) a module imports when it is imported itself: the
    exported test stands them in where they are not built."""
    found: list[str] = []
    for stmt in _top_level(ast.parse(source).body):
        text = ast.get_source_segment(source, stmt) or ""
        if "import" not in text:
            continue
        for name in imported_modules(cst.parse_statement(text), current_package_of(file, module)):
            if any(is_kernel_module(name, package) for package in packages):
                found.append(name)
    return tuple(dict.fromkeys(found))


def _loaded_file(module: str) -> tuple[Path, str]:
    """An imported module's source file, and its path as its package's files are named (`pkg/mod.py`)."""
    path = Path(importlib.import_module(module).__file__ or "")
    depth = module.count(".") + (1 if path.name == "__init__.py" else 0)
    return path, path.relative_to(path.parents[depth]).as_posix()


def stand_ins(cases: Iterable[Case], sites: dict[str, Site], root: Path) -> dict[str, tuple[str, ...]]:
    """For each module the exported test imports, the kernel modules importing it imports: its own, and, where a
    platform class runs a site defined in another module, that module's (`root` holds the sites' files)."""
    found: dict[str, list[str]] = {}
    for case in cases:
        site = sites[case.id]
        packages = tuple(dict.fromkeys((PACKAGE, site.package, case.caller.split(".")[0])))
        sources = [(site.module, root / site.file, site.file)]
        if case.caller != site.module:  # the platform class's module (imported already, to resolve it)
            sources.append((case.caller, *_loaded_file(case.caller)))
        for module, path, file in sources:
            kernels = top_level_kernels(read_source(path), file, module, packages)
            found.setdefault(case.caller, []).extend(kernels)
    return {module: tuple(dict.fromkeys(kernels)) for module, kernels in sorted(found.items()) if kernels}


def collect(vllm_src: str | None, platform: str | None) -> Export:
    """The export of a target: vLLM's own cached sites, or those `platform` (module:Class) runs.

    The target goes first on sys.path (a source tree), so the modules steering imports are the target's."""
    target = resolve_target(vllm_src)
    activate(target)
    if platform:
        resolved: PlatformTarget = resolve_platform(platform)
        sites, root = platform_sites(resolved), resolved.root
        first_party, source = resolved.spec.partition(":")[0].split(".")[0], f"{resolved.spec} on {target.describe()}"
    else:
        sites, root = discover(target.root), target.root
        first_party, source = PACKAGE, target.describe()
    found = cases_of(sites, tuple(dict.fromkeys((PACKAGE, first_party))))
    if target.origin != "installed":
        check_loaded(target)
    if not found:
        raise NothingToCheck(f"no cached kernel-import site of {source} can be exported")
    by_id = {replace(site, driver=None).test_id: site for site in sites}
    return Export(tuple(found), tuple(stand_ins(found, by_id, root).items()), first_party, source)
