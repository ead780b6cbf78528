"""The guards' process imports the target through the workspace (`mutations.engine.overlay`): a site module is
mutmut's copy there and only that, every other module is the installed one, and nothing is written beside it."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from warnonce_guard.mutations.engine import layout, overlay
from warnonce_guard.mutations.workspace import Workspace
from warnonce_guard.rule.sites import sites_in_source

from tests.toy import INTERFACE

PACKAGE = "overlaid_pkg"  # a name of its own: the test process imports it, and forgets it afterwards
SITE = f"{PACKAGE}/platforms/interface.py"


@pytest.fixture
def installed(tmp_path: Path) -> Path:
    """A package where it is installed: its site module says which copy it is."""
    package = tmp_path / "site-packages" / PACKAGE
    (package / "platforms").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "logger.py").write_text("WHICH = 'installed'\n")
    (package / "platforms" / "__init__.py").write_text("WHICH = 'installed'\n")
    (package / "platforms" / "interface.py").write_text("WHICH = 'installed'\n")
    return package


@pytest.fixture
def ws(ws: Workspace) -> Workspace:
    """The workspace (tests/mutations/conftest.py) with mutmut's copy of the site file in mutants/, and so a folder
    named as the package there."""
    layout.mutated(ws, SITE).parent.mkdir(parents=True)
    layout.mutated(ws, SITE).write_text("WHICH = 'mutated'\n")
    return ws


@pytest.fixture
def importing(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """sys.meta_path and sys.path as they were, and the package forgotten, after the test."""
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name in [name for name in sys.modules if name.partition(".")[0] == PACKAGE]:
        del sys.modules[name]


def test_a_site_module_is_mutmuts_copy_in_the_workspace_and_every_other_module_the_installed_one(
    installed: Path, ws: Workspace, importing: None
) -> None:
    sys.path.insert(0, str(ws.mutants))  # as mutmut does: a folder of the package's name, without its __init__.py
    overlay.install(ws, {PACKAGE: installed}, [SITE])

    site = importlib.import_module(f"{PACKAGE}.platforms.interface")

    assert site.WHICH == "mutated" and site.__file__ == str(layout.mutated(ws, SITE))
    assert importlib.import_module(PACKAGE).__file__ == str(installed / "__init__.py")
    assert importlib.import_module(f"{PACKAGE}.platforms").WHICH == "installed"
    assert importlib.import_module(f"{PACKAGE}.logger").__file__ == str(installed / "logger.py")


def test_a_site_file_missing_from_the_workspace_is_an_import_error_never_the_installed_module(
    installed: Path, ws: Workspace, importing: None
) -> None:
    layout.mutated(ws, SITE).unlink()
    overlay.install(ws, {PACKAGE: installed}, [SITE])

    with pytest.raises(ImportError, match="is not in the workspace"):
        importlib.import_module(f"{PACKAGE}.platforms.interface")
    assert f"{PACKAGE}.platforms.interface" not in sys.modules


def test_a_site_in_a_packages_init_is_the_workspaces_and_its_submodules_the_installed_ones(
    installed: Path, ws: Workspace, importing: None
) -> None:
    init = f"{PACKAGE}/platforms/__init__.py"
    layout.mutated(ws, init).write_text("WHICH = 'mutated'\n")
    overlay.install(ws, {PACKAGE: installed}, [init])

    platforms = importlib.import_module(f"{PACKAGE}.platforms")

    assert platforms.WHICH == "mutated" and platforms.__file__ == str(layout.mutated(ws, init))
    assert importlib.import_module(f"{PACKAGE}.platforms.interface").WHICH == "installed"


def test_modules_of_other_packages_are_left_to_the_usual_finders(installed: Path, ws: Workspace) -> None:
    finder = overlay.Overlay(ws, {PACKAGE: installed}, [SITE])
    assert finder.find_spec("json") is None and finder.find_spec(f"{PACKAGE}x.platforms") is None
    assert finder.find_spec(f"{PACKAGE}.logger") is None  # found through the package's own __path__


def test_the_guards_refuse_a_site_module_imported_from_anywhere_but_the_workspace(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    from warnonce_guard.common.errors import TargetNotFound
    from warnonce_guard.rule.target import check_imported_from

    sites = sites_in_source(INTERFACE, "vllm/platforms/interface.py", "vllm.platforms.interface")
    modules = {site.module for site in sites}
    module = types.ModuleType("vllm.platforms.interface")
    monkeypatch.delitem(sys.modules, module.__name__, raising=False)
    check_imported_from(
        modules, ws.mutants, "the workspace's"
    )  # not imported yet (the engine's first session): nothing to check

    monkeypatch.setitem(sys.modules, module.__name__, module)
    module.__file__ = str(ws.mutants / "vllm" / "platforms" / "interface.py")
    check_imported_from(modules, ws.mutants, "the workspace's")  # mutmut's copy, in a mutant's session

    module.__file__ = "/site-packages/vllm/platforms/interface.py"
    with pytest.raises(TargetNotFound, match=r"from /site-packages/vllm/platforms/interface\.py, not the workspace"):
        check_imported_from(modules, ws.mutants, "the workspace's")


# --- the warm-up: the package imported before the site files are staged ---------------------------------------


def test_the_warm_up_imports_the_package_from_where_it_lies_and_no_site_module(
    installed: Path, ws: Workspace, importing: None
) -> None:
    (installed / "__init__.py").write_text("from . import logger\n")

    assert overlay.warm_import(ws, {PACKAGE: installed}, [SITE], PACKAGE) is None
    assert sys.modules[f"{PACKAGE}.logger"].WHICH == "installed"
    assert f"{PACKAGE}.platforms.interface" not in sys.modules
    assert not any(isinstance(finder, overlay.Overlay) for finder in sys.meta_path)  # the refusing one is gone


@pytest.mark.parametrize(
    "handler",
    ["", "except ImportError:\n    pass\n", "except Exception:\n    pass\n", "except:\n    pass\n"],
    ids=["none", "ImportError", "Exception", "bare"],
)
def test_a_site_module_reached_by_the_warm_up_is_refused_whatever_the_package_catches(
    installed: Path, ws: Workspace, importing: None, handler: str
) -> None:
    body = "from .platforms import interface\n"
    init = f"try:\n    {body}{handler}" if handler else body
    (installed / "__init__.py").write_text(init)

    why = overlay.warm_import(ws, {PACKAGE: installed}, [SITE], PACKAGE)

    assert why == f"importing {PACKAGE} imports its site module {PACKAGE}.platforms.interface"
    assert f"{PACKAGE}.platforms.interface" not in sys.modules  # never the installed copy, nor the staged one


def test_a_package_that_fails_to_import_is_not_warmed(installed: Path, ws: Workspace, importing: None) -> None:
    (installed / "__init__.py").write_text("raise RuntimeError('no GPU')\n")
    assert overlay.warm_import(ws, {PACKAGE: installed}, [SITE], PACKAGE) == (
        f"importing {PACKAGE} failed (RuntimeError: no GPU)"
    )


def test_a_kernel_module_reached_by_the_warm_up_is_refused_as_the_guards_stub_it(
    installed: Path, ws: Workspace, importing: None
) -> None:
    (installed / "_C.py").write_text("WHICH = 'real kernels'\n")
    (installed / "__init__.py").write_text("try:\n    from . import _C\nexcept BaseException:\n    _C = None\n")

    why = overlay.warm_import(ws, {PACKAGE: installed}, [SITE], PACKAGE)

    assert why == f"importing {PACKAGE} imports its kernel module {PACKAGE}._C"
    assert f"{PACKAGE}._C" not in sys.modules
