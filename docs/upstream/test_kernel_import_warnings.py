# SPDX-License-Identifier: Apache-2.0
# SPDX-FileCopyrightText: Copyright contributors to the vLLM project
# Exported by warnonce-guard export-test: re-export it rather than edit CASES.
"""Kernel-import warnings must not keep the failed import's exception alive.

``warning_once`` caches its arguments, so a site that logged the live ``ImportError``
kept its traceback, every frame and the ``LLM`` under construction alive for good,
and warned again for each new exception: each case blocks one kernel module and
checks that its warning is logged once, as written, and that nothing outlives it.
"""

import functools
import gc
import importlib
import importlib.abc
import inspect
import sys
import types
import weakref
from operator import attrgetter

import pytest

import vllm.logger
from vllm.platforms.interface import CpuArchEnum

# One case per cached kernel-import site: where it is, the import_kernels that runs
# it, the kernel module blocked, the warning it logs once ({error!r}: the blocked
# import's exception) and what the branch tests on the way to it return.
CASES = [
    pytest.param(
        "vllm/platforms/cpu.py:676",
        "vllm.platforms.cpu:CpuPlatform.import_kernels",
        "vllm._C",
        "Failed to import from vllm._C: {error!r}",
        {
            "Platform.get_cpu_architecture()": CpuArchEnum.X86,
            "torch.cpu._is_avx512_supported()": True,
            "torch.cpu._is_avx512_bf16_supported()": True,
        },
        id="cpu-CpuPlatform.import_kernels-vllm._C-is_avx512_bf16_supported",
    ),
    pytest.param(
        "vllm/platforms/cpu.py:684",
        "vllm.platforms.cpu:CpuPlatform.import_kernels",
        "vllm._C_AVX512",
        "Failed to import from vllm._C_AVX512: {error!r}",
        {
            "Platform.get_cpu_architecture()": CpuArchEnum.X86,
            "torch.cpu._is_avx512_supported()": True,
            "torch.cpu._is_avx512_bf16_supported()": False,
        },
        id="cpu-CpuPlatform.import_kernels-vllm._C_AVX512-not-is_avx512_bf16_supported",
    ),
    pytest.param(
        "vllm/platforms/cpu.py:692",
        "vllm.platforms.cpu:CpuPlatform.import_kernels",
        "vllm._C_AVX2",
        "Failed to import from vllm._C_AVX2: {error!r}",
        {
            "Platform.get_cpu_architecture()": CpuArchEnum.X86,
            "torch.cpu._is_avx512_supported()": False,
        },
        id="cpu-CpuPlatform.import_kernels-vllm._C_AVX2-not-is_avx512_supported",
    ),
    pytest.param(
        "vllm/platforms/cpu.py:699",
        "vllm.platforms.cpu:CpuPlatform.import_kernels",
        "vllm._C",
        "Failed to import from vllm._C: {error!r}",
        {"Platform.get_cpu_architecture()": CpuArchEnum.ARM},
        id="cpu-CpuPlatform.import_kernels-vllm._C-not-X86",
    ),
    pytest.param(
        "vllm/platforms/cuda.py:287",
        "vllm.platforms.cuda:CudaPlatformBase.import_kernels",
        "vllm._C_stable_libtorch",
        "Failed to import from vllm._C_stable_libtorch: {error!r}",
        {},
        id="cuda-CudaPlatformBase.import_kernels-vllm._C_stable_libtorch",
    ),
    pytest.param(
        "vllm/platforms/interface.py:382",
        "vllm.platforms.interface:Platform.import_kernels",
        "vllm._C",
        "Failed to import from vllm._C: {error!r}",
        {},
        id="interface-Platform.import_kernels-vllm._C",
    ),
]
# Kernel modules a platform module imports at its top: stood in where not built.
STAND_INS = {"vllm.platforms.cuda": ("vllm._C_stable_libtorch",)}


class BlockedKernelImport(ImportError):
    """Raised, a new one each time, for the kernel module a case blocks."""


def _blocked(kernel):
    return BlockedKernelImport(f"No module named {kernel!r} (blocked)")


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
        if isinstance(sys.exc_info()[1], BlockedKernelImport):
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
    monkeypatch.setattr(module.logger, "handle", blocker.handle)

    # Another test may have logged the same text: the case logs into caches of its own,
    # and what they keep goes with them; the process's caches are left as they were.
    _fresh_once_caches(monkeypatch)
    engines = [weakref.ref(Engine(import_kernels)) for _ in range(2)]
    gc.collect()
    leaks = {
        "exception retained": any(ref() is not None for ref in blocker.raised),
        "object pinned": any(ref() is not None for ref in engines),
        "warning repeated": len(blocker.logged) > 1,
    }

    assert blocker.raised, f"{site}: {kernel} was never imported"
    leaked = ", ".join(what for what, found in leaks.items() if found)
    assert not leaked, f"{site}: {leaked} (logged {len(blocker.logged)} times)"
    expected = warning.format(error=_blocked(kernel))
    assert blocker.logged == [expected], f"{site}: the text changed"
