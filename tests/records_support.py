"""Hand-made records of a mutation run, shared by the tests (a helper module: it holds no tests).

Small `RunResult`s made inline, for the reports and the result store.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from warnonce_guard.guards.sites import Site
from warnonce_guard.mutations.report import npm
from warnonce_guard.mutations.verdicts import (
    CRASHED,
    EXPOSED,
    GUARDED,
    KILLED,
    NO_TESTS,
    SKIPPED,
    SURVIVED,
    TIMEOUT,
    UNREACHED,
    Location,
    MutantVerdict,
    Operator,
    RunResult,
    SiteBaseline,
)

CPU = "vllm/platforms/cpu.py"
CUDA = "vllm/platforms/cuda.py"
SOURCES = {
    CPU: """import logging

logger = logging.getLogger(__name__)


class CpuPlatform:
    def import_kernels(self):
        try:
            import vllm._C_AVX2  # noqa: F401
        except ImportError as e:
            logger.warning_once("Failed to import from vllm._C_AVX2: %s", repr(e))
""",
    CUDA: """import logging

logger = logging.getLogger(__name__)


class CudaPlatform:
    def import_kernels(self):
        try:
            import vllm._C  # noqa: F401
        except ImportError as e:
            logger.warning_once("Failed to import from vllm._C with %r", e)
""",
}
OPERATORS = [
    Operator("eager-repr-revert", "Pass the exception itself instead of repr(e)"),
    Operator("format-drop", "Drop the %-format so the message is built late"),
    Operator("once-to-plain", "Call the plain logger method instead of the cached one"),
]
OPS = [op.name for op in OPERATORS]


def guard_id(site: Site) -> str:
    return f"guards/test_guards.py::test_site_is_guarded[{site.id}]"


def make_site(file: str, qualname: str, kernel: str) -> Site:
    line, text = next((i, text) for i, text in enumerate(SOURCES[file].splitlines(), 1) if "warning_once" in text)
    return Site(
        file=file,
        module=file.removesuffix(".py").replace("/", "."),
        qualname=qualname,
        kernel_module=kernel,
        occurrence=0,
        line=line,
        end_line=line,
        column=text.index("logger"),
        end_column=len(text),
        import_line=line - 2,
        log_method="warning_once",
        form="eager",
        exc_name="e",
        message=None,
        message_source="MESSAGE",
        args=("e",),
        exc_arg_index=0,
        receiver="logger",
    )


CPU_SITE = make_site(CPU, "CpuPlatform.import_kernels", "vllm._C_AVX2")
CUDA_SITE = make_site(CUDA, "CudaPlatform.import_kernels", "vllm._C")


def located(site: Site, text: str) -> Location:
    """Where `text` sits on the site's line, 1-based with an exclusive end."""
    column = SOURCES[site.file].splitlines()[site.line - 1].index(text) + 1
    return Location(site.line, column, site.line, column + len(text))


def verdict(site: Site, index: int, operator: str, status: str, **extra: object) -> MutantVerdict:
    original = "repr(e)" if site is CPU_SITE else "e"
    fields: dict[str, object] = {
        "mutant_id": f"{site.module}.xǁ{site.class_name}ǁ{site.function_name}__mutmut_{index}",
        "site": site,
        "operator": operator,
        "status": status,
        "location": located(site, original),
        "original": original,
        "replacement": "e" if site is CPU_SITE else "str(e)",
        "covered_by": () if status in (SKIPPED, NO_TESTS) else (guard_id(site),),
        "duration_s": None if status in (SKIPPED, NO_TESTS) else 1.25,
    }
    if status == KILLED:
        fields.update(killed_by=guard_id(site), detectors=("exception retained",), reason="the exception is retained")
    fields.update(extra)
    return MutantVerdict(**fields)  # type: ignore[arg-type]


def sample_result() -> RunResult:
    """2 sites, 3 operators: on the guarded cpu site one mutant is killed, one survives, one times out;
    the cuda site is exposed at baseline, so its three mutants are skipped."""
    return RunResult(
        vllm_version="0.33.0",
        vllm_commit="0123456789abcdef0123456789abcdef01234567",
        target="vllm==0.33.0 from PyPI",
        sources=dict(SOURCES),
        operators=list(OPERATORS),
        baselines=[
            SiteBaseline(CPU_SITE, GUARDED, guard_id(CPU_SITE)),
            SiteBaseline(
                CUDA_SITE,
                EXPOSED,
                guard_id(CUDA_SITE),
                detectors=("exception retained", "owner pinned"),
                detail="ImportError kept alive by warning_once's lru_cache",
            ),
        ],
        mutants=[
            verdict(CPU_SITE, 1, OPS[0], KILLED),
            verdict(CPU_SITE, 2, OPS[1], SURVIVED, reason="every detector stayed quiet"),
            verdict(CPU_SITE, 3, OPS[2], TIMEOUT, reason="no result after 20 s"),
            *(
                verdict(CUDA_SITE, i + 1, op, SKIPPED, reason="site exposed at baseline")
                for i, op in enumerate(OPS)
            ),
        ],
        duration_s=12.5,
    )


def every_status_result() -> RunResult:
    """One mutant of every status on the cpu site; the cuda site is unreached."""
    statuses = (KILLED, SURVIVED, TIMEOUT, CRASHED, NO_TESTS, SKIPPED)
    return RunResult(
        vllm_version="0.33.0",
        vllm_commit=None,
        target="/src/vllm",
        sources=dict(SOURCES),
        operators=list(OPERATORS),
        baselines=[
            SiteBaseline(CPU_SITE, GUARDED, guard_id(CPU_SITE)),
            SiteBaseline(CUDA_SITE, UNREACHED, guard_id(CUDA_SITE), detail="no CUDA device to steer to"),
        ],
        mutants=[verdict(CPU_SITE, i, OPS[i % 3], status) for i, status in enumerate(statuses)],
    )


@functools.cache
def npm_prefix() -> Path:
    """The pinned npm packages, installed once per test session with the project's own helper (needs npm)."""
    import shutil

    if shutil.which("npm") is None:
        pytest.skip("npm is not on PATH: the vendored files cannot be compared with the pinned packages")
    return npm.install(npm.DEFAULT_PREFIX)
