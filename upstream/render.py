"""The exported module's text: a fixed template, the case table rendered into it, already formatted.

The text is what `ruff format` writes at vLLM's settings (line length 88, double quotes, magic trailing commas)
and what `ruff check` accepts at them (isort with the target's package first-party), so it is written as is:
no formatter runs at export time. The same export renders the same bytes: cases in discovery order, imports
and stand-ins sorted.
"""

from __future__ import annotations

from collections.abc import Iterable
from string import Template

from warnonce_guard.upstream.cases import Case, Export, python_literal
from warnonce_guard.upstream.words import BLOCKED_CLASS, BLOCKED_MESSAGE, HEADER, LEAKS, LOGGER

LINE_LENGTH = 88  # vLLM's: ruff's default, which its pyproject.toml keeps
VLLM_HEADER = (  # what every file of vLLM's starts with
    "# SPDX-License-Identifier: Apache-2.0\n# SPDX-FileCopyrightText: Copyright contributors to the vLLM project\n"
)
PATH = "tests/platforms/test_kernel_import_warnings.py"  # where it goes in a vLLM checkout
PLUGIN_PATH = "tests/test_kernel_import_warnings.py"  # and in a platform plugin's
_STDLIB = (
    "import functools",
    "import gc",
    "import importlib",
    "import importlib.abc",
    "import inspect",
    "import sys",
    "import types",
    "import weakref",
    "from operator import attrgetter",
)

TEMPLATE = Template('''\
${header}"""Kernel-import warnings must not keep the failed import's exception alive.

``warning_once`` caches its arguments, so a site that logged the live ``ImportError``
kept its traceback, every frame and the ``LLM`` under construction alive for good,
and warned again for each new exception: each case blocks one kernel module and
checks that its warning is logged once, as written, and that nothing outlives it.
"""

${imports}

# One case per cached kernel-import site: where it is, the import_kernels that runs
# it, the kernel module blocked, the warning it logs once ({error!r}: the blocked
# import's exception) and what the branch tests on the way to it return.
CASES = [
${cases}]
# Kernel modules a platform module imports at its top: stood in where not built.
${stand_ins}


class ${blocked_class}(ImportError):
    """Raised, a new one each time, for the kernel module a case blocks."""


def _blocked(kernel):
    return ${blocked_class}(f"${blocked_message}")


class KernelBlocker(importlib.abc.MetaPathFinder):
    def __init__(self, kernel):
        self.kernel = kernel
        self.raised = []  # weak references: the blocker keeps none alive
        self.logged = []  # text logged while one is handled (a record keeps its args)

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.kernel:
            return None
        error = _blocked(fullname)
        self.raised.append(weakref.ref(error))
        raise error

    def handle(self, record):  # the site's logger's, meanwhile
        if isinstance(sys.exc_info()[1], ${blocked_class}):
            self.logged.append(record.getMessage())


class Engine:
    """Stands in for ``vllm.LLM``, whose ``__init__`` imports the kernels."""

    def __init__(self, import_kernels):
        import_kernels()


def _imported(name, monkeypatch):
    try:
        return importlib.import_module(name)
    except ImportError:  # a kernel module it imports at its top is not built here
        for kernel in STAND_INS.get(name, ()):
            monkeypatch.setitem(sys.modules, kernel, types.ModuleType(kernel))
        return importlib.import_module(name)


def _fresh_once_caches(monkeypatch):
    """Each ``*_once`` printer of ``vllm.logger`` gets a new, empty cache meanwhile."""
    for name, cached in list(vars(vllm.logger).items()):
        if hasattr(cached, "cache_info"):  # an lru_cache
            fresh = functools.lru_cache(inspect.unwrap(cached))
            monkeypatch.setattr(vllm.logger, name, fresh)


@pytest.mark.parametrize(("site", "call", "kernel", "warning", "steer"), CASES)
def test_kernel_import_warning_keeps_nothing_alive(
    site, call, kernel, warning, steer, monkeypatch
):
    caller, _, qualname = call.partition(":")
    import_kernels = attrgetter(qualname)(_imported(caller, monkeypatch))
    module = sys.modules[import_kernels.__module__]  # the site's
    for test, result in steer.items():
        owner, _, name = test.removesuffix("()").rpartition(".")
        value = (lambda *_, r=result, **__: r) if test.endswith("()") else result
        monkeypatch.setattr(attrgetter(owner)(module), name, value)
    # Where the kernel is built and imported already, it is hidden meanwhile.
    parent, _, child = kernel.rpartition(".")
    monkeypatch.delitem(sys.modules, kernel, raising=False)
    monkeypatch.delattr(sys.modules[parent], child, raising=False)
    blocker = KernelBlocker(kernel)
    monkeypatch.setattr(sys, "meta_path", [blocker, *sys.meta_path])
    monkeypatch.setattr(module.${logger}, "handle", blocker.handle)

    # Another test may have logged the same text: the case logs into caches of its own,
    # and what they keep goes with them; the process's caches are left as they were.
    _fresh_once_caches(monkeypatch)
    engines = [weakref.ref(Engine(import_kernels)) for _ in range(2)]
    gc.collect()
    leaks = {
        "${retained}": any(ref() is not None for ref in blocker.raised),
        "${pinned}": any(ref() is not None for ref in engines),
        "${repeated}": len(blocker.logged) > 1,
    }

    assert blocker.raised, f"{site}: {kernel} was never imported"
    leaked = ", ".join(what for what, found in leaks.items() if found)
    assert not leaked, f"{site}: {leaked} (logged {len(blocker.logged)} times)"
    expected = warning.format(error=_blocked(kernel))
    assert blocker.logged == [expected], f"{site}: the text changed"
''')


def _fits(line: str) -> bool:
    return len(line) <= LINE_LENGTH


def _long_ok(line: str) -> str:
    """A line no formatter can split (a long string): vLLM's E501 is told so."""
    return line if _fits(line) else f"{line}  # noqa: E501"


def _member_key(name: str) -> tuple[int, str]:
    """isort's order-by-type (ruff's default): CONSTANTS, then Classes, then the rest; case-insensitively."""
    kind = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return kind, name.lower()


def _section(straight: Iterable[str], froms: dict[str, set[str]]) -> list[str]:
    """One isort section: `import x` lines, then `from x import ...` lines, each by module (ruff's defaults)."""
    lines = [f"import {module}" for module in sorted(set(straight), key=str.lower)]
    for module in sorted(froms, key=str.lower):
        names = sorted(froms[module], key=_member_key)
        line = f"from {module} import {', '.join(names)}"
        lines += [line] if _fits(line) else [f"from {module} import (", *(f"    {name}," for name in names), ")"]
    return lines


def import_block(export: Export) -> str:
    """The imports: the standard library, third-party, then the package the module is for (first-party)."""
    third, first = ["pytest"], []
    froms: dict[bool, dict[str, set[str]]] = {True: {}, False: {}}  # first-party or not -> module -> names
    (first if export.for_vllm else third).append("vllm.logger")
    for case in export.cases:
        for module, name in case.imports:
            froms[module.split(".")[0] == export.first_party].setdefault(module, set()).add(name)
    sections = [list(_STDLIB), _section(third, froms[False]), _section(first, froms[True])]
    return "\n\n".join("\n".join(lines) for lines in sections if lines)


def _steer_lines(steer: tuple[tuple[str, str], ...]) -> list[str]:
    entries = [f"{python_literal(test)}: {value}" for test, value in steer]
    flat = f"        {{{', '.join(entries)}}},"
    if _fits(flat):
        return [flat]
    return ["        {", *(_long_ok(f"            {entry},") for entry in entries), "        },"]


def case_lines(case: Case) -> list[str]:
    """One `pytest.param(...)` of the table, one argument a line (its trailing comma keeps it so)."""
    values = (case.site, case.call, case.kernel, case.warning)
    return [
        "    pytest.param(",
        *(_long_ok(f"        {python_literal(value)},") for value in values),
        *_steer_lines(case.steer),
        _long_ok(f"        id={python_literal(case.id)},"),
        "    ),",
    ]


def _tuple(items: tuple[str, ...]) -> str:
    inner = ", ".join(python_literal(item) for item in items)
    return f"({inner},)" if len(items) == 1 else f"({inner})"


def stand_ins_lines(stand_ins: tuple[tuple[str, tuple[str, ...]], ...]) -> list[str]:
    """`STAND_INS = {...}`, broken as ruff breaks it: the dict, then an entry's tuple, only where a line is long."""
    entries = [(python_literal(module), kernels) for module, kernels in stand_ins]
    flat = "STAND_INS = {" + ", ".join(f"{module}: {_tuple(kernels)}" for module, kernels in entries) + "}"
    if _fits(flat):
        return [flat]
    lines = ["STAND_INS = {"]
    for module, kernels in entries:
        line = f"    {module}: {_tuple(kernels)},"
        if _fits(line):
            lines.append(line)
        else:
            lines += [f"    {module}: (", *(_long_ok(f"        {python_literal(k)},") for k in kernels), "    ),"]
    return [*lines, "}"]


def render(export: Export) -> str:
    """The module's whole text."""
    header = (VLLM_HEADER if export.for_vllm else "") + HEADER
    return TEMPLATE.substitute(
        header=header,
        imports=import_block(export),
        cases="".join(line + "\n" for case in export.cases for line in case_lines(case)),
        stand_ins="\n".join(stand_ins_lines(export.stand_ins)),
        blocked_class=BLOCKED_CLASS,
        blocked_message=BLOCKED_MESSAGE,
        logger=LOGGER,
        **dict(zip(("retained", "pinned", "repeated"), LEAKS, strict=True)),
    )


def path_for(export: Export) -> str:
    """Where the module goes in the checkout of the package it is for."""
    return PATH if export.for_vllm else PLUGIN_PATH


def patch(export: Export, text: str) -> str:
    """A `git apply`-able patch that adds the module at its path."""
    path = path_for(export)
    lines = text.splitlines()
    return "".join(
        [
            f"diff --git a/{path} b/{path}\n",
            "new file mode 100644\n",
            "--- /dev/null\n",
            f"+++ b/{path}\n",
            f"@@ -0,0 +1,{len(lines)} @@\n",
            *(f"+{line}\n" for line in lines),
        ]
    )
