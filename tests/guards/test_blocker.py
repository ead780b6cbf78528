"""The import blocker: a fresh exception per blocked import, nothing else touched, everything put back."""

from __future__ import annotations

import gc
import importlib
import sys
import types
import weakref
from collections.abc import Iterator

import pytest
from warnonce_guard.guards.blocker import BLOCK_MESSAGE, BlockedKernelImport, KernelBlocker, blocking, stubbing

KERNEL = "warnonce_toy_pkg._C"


def is_kernel(name: str) -> bool:
    return name.startswith("warnonce_toy_pkg.") and name.endswith("_C")


def blocked_import(name: str = KERNEL) -> BlockedKernelImport:
    with pytest.raises(BlockedKernelImport) as caught:
        importlib.import_module(name)
    return caught.value


@pytest.fixture
def toy_package() -> Iterator[types.ModuleType]:
    """An importable (in-memory) parent package for the kernel module, removed afterwards."""
    package = types.ModuleType("warnonce_toy_pkg")
    package.__path__ = []
    sys.modules["warnonce_toy_pkg"] = package
    yield package
    for name in [n for n in sys.modules if n.split(".")[0] == "warnonce_toy_pkg"]:
        del sys.modules[name]


def test_blocked_import_raises_a_fresh_exception_each_time(toy_package: types.ModuleType) -> None:
    with blocking(is_kernel) as blocker:
        first, second = blocked_import(), blocked_import()

    assert first is not second
    assert len(blocker.raised) == 2
    assert [error.name for error in blocker.alive()] == [KERNEL, KERNEL]


def test_blocked_import_is_a_plain_import_error_naming_the_module(toy_package: types.ModuleType) -> None:
    with blocking(is_kernel):
        error = blocked_import()

    assert isinstance(error, ImportError)
    assert not isinstance(error, ModuleNotFoundError)  # `from x import y` would swallow that one
    assert error.name == KERNEL
    assert str(error) == BLOCK_MESSAGE.format(name=KERNEL)
    assert weakref.ref(error)() is error


def test_blocked_import_inside_try_is_caught_as_import_error(toy_package: types.ModuleType) -> None:
    with blocking(is_kernel):
        try:
            import warnonce_toy_pkg._C  # noqa: F401
        except ImportError as e:
            caught = e

    assert isinstance(caught, BlockedKernelImport)


def test_non_matching_imports_pass_through(toy_package: types.ModuleType) -> None:
    with blocking(is_kernel) as blocker:
        module = importlib.import_module("json.decoder")
        with pytest.raises(ModuleNotFoundError) as caught:
            importlib.import_module("warnonce_toy_pkg.ops")

    assert module is sys.modules["json.decoder"]
    assert not isinstance(caught.value, BlockedKernelImport)
    assert blocker.raised == []


def test_meta_path_is_restored(toy_package: types.ModuleType) -> None:
    before = list(sys.meta_path)

    with blocking(is_kernel) as blocker:
        assert sys.meta_path[0] is blocker
        assert sys.meta_path[1:] == before

    assert sys.meta_path == before


def test_meta_path_is_restored_when_the_body_raises(toy_package: types.ModuleType) -> None:
    before = list(sys.meta_path)

    with pytest.raises(RuntimeError), blocking(is_kernel):
        raise RuntimeError("boom")

    assert sys.meta_path == before


def test_loaded_kernel_module_is_hidden_during_and_put_back_after(toy_package: types.ModuleType) -> None:
    loaded = types.ModuleType(KERNEL)
    sys.modules[KERNEL] = loaded

    with blocking(is_kernel):
        assert KERNEL not in sys.modules
        blocked_import()

    assert sys.modules[KERNEL] is loaded


def test_only_modules_within_the_prefixes_are_asked_about_hidden_and_put_back(toy_package: types.ModuleType) -> None:
    loaded = types.ModuleType(KERNEL)
    sys.modules[KERNEL] = loaded
    asked: list[str] = []

    def every_module(name: str) -> bool:
        asked.append(name)
        return name == KERNEL

    with blocking(every_module, within=("warnonce_toy_pkg.",)):
        assert KERNEL not in sys.modules
        sys.modules[KERNEL] = types.ModuleType(KERNEL)  # slipped in meanwhile: dropped, the loaded one put back

    assert sys.modules[KERNEL] is loaded
    assert set(asked) == {KERNEL}  # twice, never "sys", "os" or torch's thousands


def test_kernel_module_absent_before_is_absent_after(toy_package: types.ModuleType) -> None:
    with blocking(is_kernel):
        sys.modules[KERNEL] = types.ModuleType(KERNEL)  # something slipped one in meanwhile

    assert KERNEL not in sys.modules


def test_alive_drops_collected_exceptions(toy_package: types.ModuleType) -> None:
    with blocking(is_kernel) as blocker:
        kept = blocked_import()
        blocked_import()
    gc.collect()

    assert blocker.alive() == [kept]
    del kept
    gc.collect()
    assert blocker.alive() == []


def test_blocker_keeps_no_strong_reference() -> None:
    blocker = KernelBlocker(is_kernel)
    with pytest.raises(BlockedKernelImport):
        blocker.find_spec(KERNEL)
    gc.collect()

    assert blocker.alive() == []
    assert len(blocker.raised) == 1


def test_find_spec_declines_other_names() -> None:
    assert KernelBlocker(is_kernel).find_spec("warnonce_toy_pkg.ops") is None


def test_stubbing_supplies_empty_modules_and_removes_them_after(toy_package: types.ModuleType) -> None:
    before = list(sys.meta_path)

    with stubbing(is_kernel):
        stub = importlib.import_module(KERNEL)
        assert sys.modules[KERNEL] is stub
        assert [n for n in vars(stub) if not n.startswith("__")] == []

    assert KERNEL not in sys.modules
    assert sys.meta_path == before


def test_stubbing_leaves_other_imports_alone(toy_package: types.ModuleType) -> None:
    with stubbing(is_kernel), pytest.raises(ModuleNotFoundError):
        importlib.import_module("warnonce_toy_pkg.ops")
