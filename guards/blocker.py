"""An import hook that makes kernel modules fail to import, with a fresh exception every time."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager

BLOCK_MESSAGE = "No module named {name!r} (blocked by warnonce-guard)"


class BlockedKernelImport(ImportError):
    """Raised for a blocked kernel module; a Python subclass, so it takes weak references.

    A plain ImportError, not ModuleNotFoundError: `from vllm import _C` swallows a ModuleNotFoundError
    for the name it imports and raises a new ImportError, which would hide the blocked one.
    """


class KernelBlocker(importlib.abc.MetaPathFinder):
    """Meta-path finder: importing a name `should_block` accepts raises a new `BlockedKernelImport`.

    Only weak references to the raised exceptions are kept, so the blocker itself never keeps one alive. With a
    `witness`, `witnessed` names each module blocked while it held (the guard's: its site's function was running).
    """

    def __init__(self, should_block: Callable[[str], bool], witness: Callable[[], bool] | None = None):
        self.should_block = should_block
        self.witness = witness
        self.raised: list[weakref.ReferenceType[BlockedKernelImport]] = []
        self.witnessed: list[str] = []

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        if not self.should_block(fullname):
            return None
        error = BlockedKernelImport(BLOCK_MESSAGE.format(name=fullname), name=fullname)
        self.raised.append(weakref.ref(error))
        if self.witness is not None and self.witness():
            self.witnessed.append(fullname)
        try:
            raise error
        finally:
            del error

    def alive(self) -> list[BlockedKernelImport]:
        """The raised exceptions that are still alive (call after gc.collect())."""
        return [exc for ref in self.raised if (exc := ref()) is not None]


@contextmanager
def blocking(
    should_block: Callable[[str], bool], witness: Callable[[], bool] | None = None, within: tuple[str, ...] = ("",)
) -> Iterator[KernelBlocker]:
    """Install a `KernelBlocker` first on sys.meta_path; hide and later restore matching sys.modules entries. Every
    name `should_block` accepts starts with one of `within` (its packages' prefixes): only those are asked, not each
    of the thousands of modules torch brings."""

    def matching() -> list[str]:
        return [name for name in sys.modules if name.startswith(within) and should_block(name)]

    hidden = {name: sys.modules[name] for name in matching()}
    for name in hidden:
        del sys.modules[name]
    blocker = KernelBlocker(should_block, witness)
    sys.meta_path.insert(0, blocker)
    try:
        yield blocker
    finally:
        sys.meta_path.remove(blocker)
        for name in matching():
            del sys.modules[name]
        sys.modules.update(hidden)


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Supplies an empty module for kernel modules (for module-level kernel imports)."""

    def __init__(self, should_stub: Callable[[str], bool]):
        self.should_stub = should_stub

    def find_spec(self, fullname: str, path: object = None, target: object = None):
        if self.should_stub(fullname):
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return types.ModuleType(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        return None


@contextmanager
def stubbing(should_stub: Callable[[str], bool]) -> Iterator[None]:
    """Let matching modules import as empty stubs for the duration; the stubs leave sys.modules after."""
    finder = _StubFinder(should_stub)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name, module in list(sys.modules.items()):
            spec = getattr(module, "__spec__", None)
            if spec is not None and spec.loader is finder:
                del sys.modules[name]
