"""The vLLM under test: the installed package, or a source tree given by path."""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from warnonce_guard.guards.errors import NotAVllmTree, TargetNotFound

PACKAGE = "vllm"


@dataclass(frozen=True)
class Target:
    """Where the `vllm` package to check lives: `root / "vllm"` is the package directory."""

    root: Path
    origin: str  # "installed", "source tree" or "staged copy"
    version: str
    commit: str | None

    @property
    def package_dir(self) -> Path:
        return self.root / PACKAGE

    def describe(self) -> str:
        commit = f" ({self.commit})" if self.commit else ""
        return f"vLLM {self.version}{commit}, {self.origin} at {self.package_dir}"


def _version_info(package_dir: Path) -> tuple[str, str | None]:
    """Version and commit from `_version.py` (written by the build), without importing vLLM."""
    version_file = package_dir / "_version.py"
    if not version_file.is_file():
        return "unknown (no _version.py: an unbuilt source tree)", None
    text = version_file.read_text(encoding="utf-8")
    version = re.search(r"__version__\s*=\s*(?:version\s*=\s*)?['\"]([^'\"]+)['\"]", text)
    commit = re.search(r"__commit_id__\s*=\s*(?:commit_id\s*=\s*)?['\"]([^'\"]+)['\"]", text)
    return (version.group(1) if version else "unknown"), (commit.group(1) if commit else None)


def installed() -> Target:
    """The vLLM that `import vllm` would find, located without importing it."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise TargetNotFound(
            "vLLM is not installed in this environment; run `nox -s guards` (it installs one) or pass --vllm-src PATH"
        )
    package_dir = Path(next(iter(spec.submodule_search_locations)))
    return Target(package_dir.parent, "installed", *_version_info(package_dir))


def source_tree(path: str | Path, origin: str = "source tree") -> Target:
    """A vLLM checkout (or any directory holding a `vllm/` package) given by path."""
    root = Path(path).expanduser().resolve()
    if not root.exists():
        raise TargetNotFound(f"--vllm-src {path}: no such directory; pass the root of a vLLM checkout")
    if root.name == PACKAGE and (root / "__init__.py").is_file():
        root = root.parent
    if not (root / PACKAGE / "__init__.py").is_file() or not (root / PACKAGE / "platforms").is_dir():
        raise NotAVllmTree(
            f"--vllm-src {path}: not a vLLM tree (no vllm/__init__.py with vllm/platforms/); "
            "pass the directory that contains the vllm/ package"
        )
    return Target(root, origin, *_version_info(root / PACKAGE))


def resolve(vllm_src: str | Path | None) -> Target:
    """The target named on the command line: a source tree if given, else the installed vLLM."""
    return source_tree(vllm_src) if vllm_src else installed()


def activate(target: Target) -> None:
    """Make `import vllm` load the target: put its root first on sys.path (a no-op when installed)."""
    root = str(target.root)
    if target.origin != "installed" and sys.path[:1] != [root]:
        sys.path.insert(0, root)


def check_loaded(target: Target) -> None:
    """Fail loudly if the `vllm` already imported is not the target's (a stale or shadowed copy)."""
    module = sys.modules.get(PACKAGE)
    if module is None or module.__file__ is None:
        return
    loaded = Path(module.__file__).resolve().parent
    if loaded != target.package_dir.resolve():
        raise TargetNotFound(
            f"the imported vllm is {loaded}, not the target {target.package_dir}; run the guards in a fresh process"
        )
