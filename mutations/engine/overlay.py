"""How the guards' process imports the target: the site files from the workspace, everything else where it lies.

`Overlay`, first on `sys.meta_path`, takes each site module from `mutants/` only, and writes no bytecode
(`launch.BYTECODE_OFF`); `warm_import` imports the target package early, refusing its site and kernel modules.
"""

from __future__ import annotations

import importlib
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
from warnonce_guard.rule.site_rule import is_kernel_module


class SiteReached(BaseException):  # not an Exception: no `except ImportError` or `Exception` of the target takes it
    """A refusing overlay was asked for a site or kernel module."""


class Overlay(importlib.abc.MetaPathFinder):
    """Finds the modules of `packages` (name -> the directory it is imported from): a module whose file is one of
    `files` (relative to the target root, e.g. vllm/platforms/cpu.py) as mutmut's copy in the workspace (or, when
    `refusing`, not at all: `SiteReached`), every other from its package's directory."""

    def __init__(
        self, ws: Workspace, packages: Mapping[str, Path], files: Iterable[str], refusing: bool = False
    ) -> None:
        self.ws = ws
        self.packages = dict(packages)
        self.files = frozenset(files)
        self.refusing = refusing
        self.refused: list[str] = []  # what a refusing overlay was asked for: even a bare `except:` cannot hide it

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        top, *inner = fullname.split(".")
        home = self.packages.get(top)
        if home is None:
            return None
        if self.refusing and is_kernel_module(fullname, top):
            self._refuse(f"kernel module {fullname}")
        stem = fullname.replace(".", "/")
        for file, package in ((f"{stem}.py", False), (f"{stem}/__init__.py", True)):
            if file in self.files:
                return self._staged(fullname, file, home.joinpath(*inner) if package else None)
        if not inner:  # the package itself: never a folder of the same name in mutants/ or the current directory
            return importlib.machinery.PathFinder.find_spec(top, [str(home.parent)])
        return None  # found through its parent's __path__: the package's own directory

    def _refuse(self, what: str) -> None:
        self.refused.append(what)
        raise SiteReached(what)

    def _staged(self, fullname: str, file: str, package_dir: Path | None) -> ModuleSpec:
        if self.refusing:
            self._refuse(f"site module {fullname}")
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


def warm_import(ws: Workspace, packages: Mapping[str, Path], files: Iterable[str], package: str) -> str | None:
    """Import `package` (of `packages`) now, from where it lies, refusing every module whose file is one of `files`
    and every kernel module: None once imported without a refusal, else why not (a site or kernel module reached,
    the import failed). After a why, this process holds part of an import and must not run the guards."""
    refusing = Overlay(ws, packages, files, refusing=True)
    sys.meta_path.insert(0, refusing)
    try:
        importlib.import_module(package)
    except SiteReached:
        pass  # said below
    except Exception as err:
        return f"importing {package} failed ({type(err).__name__}: {err})"
    finally:
        sys.meta_path.remove(refusing)
    return f"importing {package} imports its {refusing.refused[0]}" if refusing.refused else None
