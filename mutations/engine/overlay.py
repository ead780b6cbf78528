"""How the guards' process imports the target: the site files from the workspace, everything else where it lies.

The workspace holds only the files mutmut mutates (`mutants/<file>`: mutmut's copy, with every mutant). mutmut
puts `mutants/` first on `sys.path`, which works for a project copied there whole; here `Overlay`, first on
`sys.meta_path`, imports each staged package (vLLM, a platform plugin's) from where it is installed or checked
out, except the site modules: those come from `mutants/` only, and a site file missing there is an ImportError,
never the installed one. Nothing is written beside the installed sources: the session runs with
`PYTHONDONTWRITEBYTECODE` (`BYTECODE_OFF`), so nothing compiles into a `__pycache__` of the user's.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Iterable, Mapping, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

from warnonce_guard.mutations.engine import layout
from warnonce_guard.mutations.workspace import Workspace

BYTECODE_OFF = {"PYTHONDONTWRITEBYTECODE": "1"}  # in the session's environment (and so its workers')


class Overlay(importlib.abc.MetaPathFinder):
    """Finds the modules of `packages` (name -> the directory it is imported from): a module whose file is one of
    `files` (relative to the target root, e.g. vllm/platforms/cpu.py) as mutmut's copy in the workspace, every other
    from its package's directory."""

    def __init__(self, ws: Workspace, packages: Mapping[str, Path], files: Iterable[str]) -> None:
        self.ws = ws
        self.packages = dict(packages)
        self.files = frozenset(files)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        top, *inner = fullname.split(".")
        home = self.packages.get(top)
        if home is None:
            return None
        stem = fullname.replace(".", "/")
        for file, package in ((f"{stem}.py", False), (f"{stem}/__init__.py", True)):
            if file in self.files:
                return self._staged(fullname, file, home.joinpath(*inner) if package else None)
        if not inner:  # the package itself: never a folder of the same name in mutants/ or the current directory
            return importlib.machinery.PathFinder.find_spec(top, [str(home.parent)])
        return None  # found through its parent's __path__: the package's own directory

    def _staged(self, fullname: str, file: str, package_dir: Path | None) -> ModuleSpec:
        staged = layout.mutated(self.ws, file)
        if not staged.is_file():
            raise ImportError(f"{file} is not in the workspace ({staged}): it is never imported from elsewhere")
        locations = [str(package_dir)] if package_dir is not None else None
        spec = importlib.util.spec_from_file_location(fullname, staged, submodule_search_locations=locations)
        assert spec is not None  # a .py file always has a loader
        return spec


def install(ws: Workspace, packages: Mapping[str, Path], files: Iterable[str]) -> Overlay:
    """Put an `Overlay` first on `sys.meta_path` (for this process and the processes it forks)."""
    overlay = Overlay(ws, packages, files)
    sys.meta_path.insert(0, overlay)
    return overlay
