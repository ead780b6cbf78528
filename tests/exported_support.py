"""Helpers for the export-test tests: a vLLM-shaped toy tree with six cached sites, vLLM's ruff settings applied to
an exported file, and runs of an exported file under pytest (tests/upstream/)."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from tests import layout
from tests.toy import CLI, LOGGER_SOURCE, write

VLLM_PYPROJECT = layout.DATA / "vllm-0.33.0-pyproject.toml"  # vLLM 0.33.0's pyproject.toml, byte for byte
COMMITTED = layout.ROOT / "docs" / "upstream" / "test_kernel_import_warnings.py"
RUFF = Path(sysconfig.get_path("scripts")) / "ruff"  # the dev extra's, beside this interpreter
ALLOWED_IMPORTS = {"pytest", "torch", "vllm"} | set(sys.stdlib_module_names)

# A toy vLLM (no torch) shaped like the real one: six cached sites in three platform modules, branch tests on an
# enum and on flag functions, a platform module that imports a kernel module at its top (cuda.py), and the three
# ways a site renders the exception eagerly (`%s` of `repr(e)`, an f-string's `{e!r}`, `%s` of `e.msg`).
# A test that relies on a warning printed once for the whole session: two copies of it, one before a module under
# trial and one after it, fail when that module's tests let the message print again.
PRINT_ONCE = """
import logging

from vllm.logger import init_logger

MESSAGE = "printed once for the whole session"
logger = init_logger("print_once_trial")


def test_a_warning_once_is_printed_once_for_the_whole_session():
    seen = getattr(logger, "seen", None)
    if seen is None:
        seen = logger.seen = []
        handler = logging.Handler()
        handler.emit = lambda record: seen.append(record.getMessage())
        logger.addHandler(handler)
    logger.warning_once(MESSAGE)
    assert seen.count(MESSAGE) == 1
"""

INTERFACE = """
import enum

from vllm.logger import init_logger

logger = init_logger(__name__)


class Arch(enum.Enum):
    X86 = 1
    ARM = 2


class Platform:
    @classmethod
    def get_arch(cls):
        return Arch.X86  # a site in another branch is reached only when steered

    @classmethod
    def import_kernels(cls) -> None:
        try:
            import vllm._C  # noqa: F401
        except ImportError as e:
            logger.warning_once("Failed to import from vllm._C: %s", repr(e))


class MoePlatform(Platform):
    @classmethod
    def import_kernels(cls) -> None:
        try:
            import vllm._moe_C  # noqa: F401
        except ImportError as e:
            logger.warning_once(f"Failed to import from vllm._moe_C: {e!r}")
"""
CPUINFO = """
def avx512():
    return False
"""
CPU = """
from vllm import cpuinfo
from vllm.logger import init_logger
from vllm.platforms.interface import Arch, Platform

logger = init_logger(__name__)


class CpuPlatform(Platform):
    @classmethod
    def import_kernels(cls) -> None:
        if Platform.get_arch() in (Arch.X86,):
            if cpuinfo.avx512():
                try:
                    import vllm._C_AVX512  # noqa: F401
                except ImportError as e:
                    logger.warning_once("Failed to import from vllm._C_AVX512: %s", e.msg)
            else:
                try:
                    import vllm._C_AVX2  # noqa: F401
                except ImportError as e:
                    logger.warning_once("Failed to import from vllm._C_AVX2: %s", repr(e))
        else:
            try:
                import vllm._C  # noqa: F401
            except ImportError as e:
                logger.warning_once("Failed to import from vllm._C: %s", repr(e))
"""
CUDA = """
import vllm._C_stable  # noqa: F401
from vllm.logger import init_logger
from vllm.platforms.interface import Platform

logger = init_logger(__name__)


class CudaPlatform(Platform):
    @classmethod
    def import_kernels(cls) -> None:
        try:
            import vllm._C_stable  # noqa: F401
        except ImportError as e:
            logger.warning_once("Failed to import from vllm._C_stable: %s", repr(e))
"""
TOY_IDS = [
    "cpu-CpuPlatform.import_kernels-vllm._C_AVX512-avx512",
    "cpu-CpuPlatform.import_kernels-vllm._C_AVX2-not-avx512",
    "cpu-CpuPlatform.import_kernels-vllm._C-not-X86",
    "cuda-CudaPlatform.import_kernels-vllm._C_stable",
    "interface-Platform.import_kernels-vllm._C",
    "interface-MoePlatform.import_kernels-vllm._moe_C",
]
# A seventh site, after CpuPlatform.import_kernels' branches (on its last line + 1 onwards).
SEVENTH = """        try:
            import vllm._C_extra  # noqa: F401
        except ImportError as e:
            logger.warning_once("Failed to import from vllm._C_extra: %s", repr(e))
"""


def toy_vllm(root: Path) -> Path:
    """`root/vllm/`: the toy above, with a `_version.py`; returns `root` (a tree for --vllm-src)."""
    write(root, "vllm/__init__.py", "")
    write(root, "vllm/_version.py", "__version__ = version = '9.9.9'\n")
    write(root, "vllm/logger.py", LOGGER_SOURCE)
    write(root, "vllm/cpuinfo.py", CPUINFO)
    write(root, "vllm/platforms/__init__.py", "")
    for name, source in {"interface": INTERFACE, "cpu": CPU, "cuda": CUDA}.items():
        write(root, f"vllm/platforms/{name}.py", source)
    return root


def add_seventh_site(tree: Path) -> int:
    """Append `SEVENTH` to CpuPlatform.import_kernels in the tree's cpu.py (a real vLLM's or the toy's); the line
    of its logging call."""
    path = tree / "vllm" / "platforms" / "cpu.py"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    method = next(i for i, line in enumerate(lines) if "def import_kernels" in line)
    end = method + 1
    while end < len(lines) and (not lines[end].strip() or lines[end].startswith(" " * 8)):
        end += 1
    while not lines[end - 1].strip():
        end -= 1
    lines.insert(end, SEVENTH)
    path.write_text("".join(lines), encoding="utf-8")
    return end + 4


def made_leaky(tree: Path) -> None:
    """Put the bug back in every site of the tree's platforms: each argument formatted eagerly passes `e` itself."""
    for path in (tree / "vllm" / "platforms").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        text = re.sub(r'%s",\s*repr\(e\)', '%r", e', text)
        text = text.replace('%s", e.msg', '%r", e')
        moe = "Failed to import from vllm._moe_C"
        text = text.replace(f'f"{moe}: {{e!r}}"', f'"{moe}: %r", e')
        path.write_text(text, encoding="utf-8")


def vllm_copy(root: Path) -> Path:
    """A source tree of the installed vLLM that imports as it does: every entry of its package a symlink, but
    `__init__.py` (the loaded `vllm` must be the tree's) and `platforms/` (copied, to edit)."""
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    assert spec is not None and spec.origin is not None
    installed = Path(spec.origin).parent
    package = root / "vllm"
    package.mkdir(parents=True)
    for entry in installed.iterdir():
        if entry.name not in ("__init__.py", "platforms", "__pycache__"):
            (package / entry.name).symlink_to(entry)
    shutil.copyfile(installed / "__init__.py", package / "__init__.py")
    shutil.copytree(installed / "platforms", package / "platforms", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def export(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`warnonce-guard export-test ARGS` in a process of its own."""
    return subprocess.run(
        [*CLI, "export-test", *args], capture_output=True, text=True, cwd=cwd, env=env, check=False
    )  # fmt: skip


def run_exported(
    text: str, folder: Path, path: list[Path], *pytest_args: str, conftest: str | None = None
) -> subprocess.CompletedProcess[str]:
    """pytest on an exported module alone (in `folder`, with `conftest` beside it), `path` first on sys.path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test_kernel_import_warnings.py").write_text(text, encoding="utf-8")
    if conftest is not None:
        (folder / "conftest.py").write_text(conftest, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in path)}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=line", "-rN", *pytest_args]
    return subprocess.run(command, capture_output=True, text=True, cwd=folder, env=env, check=False)


def failure_lines(output: str) -> list[str]:
    """The assertion lines of a `--tb=line` run, one per failed case (pytest's `E   AssertionError: ...`)."""
    return [line for line in output.splitlines() if line.startswith("E ") and "AssertionError: " in line]


def ruff_as_vllm(text: str, tmp: Path, first_party: str = "vllm") -> list[subprocess.CompletedProcess[str]]:
    """`ruff check` and `ruff format --check` of an exported module at vLLM's settings, as in a checkout: its
    pyproject.toml at the root, the module at tests/platforms/, and the first-party modules it imports present
    (ruff tells first-party imports by the files they name)."""
    write(tmp, "pyproject.toml", VLLM_PYPROJECT.read_text(encoding="utf-8"))
    write(tmp, "tests/__init__.py", "")
    target = tmp / "tests" / "platforms" / "test_kernel_import_warnings.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    for module in imported_modules(text):
        if module.split(".")[0] == first_party:
            write(tmp, module.replace(".", "/") + ".py", "")
            for depth in range(1, module.count(".") + 1):
                write(tmp, "/".join(module.split(".")[:depth]) + "/__init__.py", "")
    relative = target.relative_to(tmp).as_posix()
    return [
        subprocess.run([str(RUFF), *command, relative], capture_output=True, text=True, cwd=tmp, check=False)
        for command in (["check", "--no-cache"], ["format", "--check", "--no-cache"])
    ]


def imported_modules(text: str) -> list[str]:
    """Every module a module imports (anywhere in it), by its full name."""
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append(node.module or "")
    return found
