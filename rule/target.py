"""The vLLM under test: the installed package, or a source tree given by path; and how its files are read.

Every walk of the target (discovery, the fingerprint, staging) takes its files through `files_to_read`, and
every Python source is read with `read_source`: a FIFO, a socket, a directory named `x.py`, a dangling
symlink or a symlink loop is skipped with a note and never opened (a FIFO would be waited on for ever); a
file that cannot be read, or decoded as Python reads it, is exit 3 naming it.
"""

from __future__ import annotations

import ast
import contextlib
import errno
import importlib.util
import io
import re
import stat
import sys
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from warnonce_guard.common.console import printable
from warnonce_guard.common.errors import GuardError, NotAVllmTree, PathUnusable, SourceDoesNotParse, TargetNotFound
from warnonce_guard.common.notes import note

PACKAGE = "vllm"
# The module of the class every platform derives from: every guard imports it, and what it imports first.
PLATFORM_INTERFACE = "platforms/interface.py"


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
    text = read_source(version_file)
    version = re.search(r"__version__\s*=\s*(?:version\s*=\s*)?['\"]([^'\"]+)['\"]", text)
    commit = re.search(r"__commit_id__\s*=\s*(?:commit_id\s*=\s*)?['\"]([^'\"]+)['\"]", text)
    return (version.group(1) if version else "unknown"), (commit.group(1) if commit else None)


def installed() -> Target:
    """The vLLM that `import vllm` would find, located without importing it."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise TargetNotFound(
            "vLLM is not installed in this environment; install it beside warnonce-guard (pip install vllm) "
            "or pass --vllm-src PATH (a vLLM source tree or checkout)"
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


def resolve_target(vllm_src: str | Path | None) -> Target:
    """The target named on the command line: a source tree if given, else the installed vLLM."""
    return source_tree(vllm_src) if vllm_src else installed()


def imported_first(target: Target) -> list[str]:
    """The modules from outside the target and the standard library that its platform interface imports at its top
    level (for vLLM, torch: most of the guards' import time). Every guard imports them, so the session can import
    them before the site files are staged; none when the file is missing or does not parse."""
    try:
        tree = ast.parse(read_source(target.package_dir / PLATFORM_INTERFACE))
    except (OSError, SyntaxError, ValueError, GuardError):
        return []
    names = [alias.name for node in tree.body if isinstance(node, ast.Import) for alias in node.names]
    names += [node.module for node in tree.body if isinstance(node, ast.ImportFrom) and node.module and not node.level]
    tops = dict.fromkeys(name.partition(".")[0] for name in names)
    return [name for name in tops if name not in sys.stdlib_module_names and name not in (PACKAGE, "__future__")]


def check_importable(target: Target) -> None:
    """`PathUnusable` for a target the guards cannot import where it lies: a tree under a path that is not UTF-8
    (a byte such as `\\xff`) whose platform interface imports torch. torch registers vLLM's operators naming the
    caller's file (`torch.library.Library`), and refuses a file name that is not UTF-8 with a TypeError: every
    site would be unreached. Reading the tree (`sites`, the audit) works on any path."""
    try:
        str(target.root).encode("utf-8")
    except UnicodeEncodeError:
        if "torch" in imported_first(target):
            where = "the installed vLLM at" if target.origin == "installed" else "--vllm-src"
            raise PathUnusable(
                f"{where} {printable(str(target.root))}: its path is not UTF-8, and torch, which the target "
                "imports, refuses a module whose file name is not (every site would be unreached); rename the "
                "directory or copy the tree to a UTF-8 path"
            ) from None


def activate(target: Target) -> None:
    """Make `import vllm` load the target: put its root first on sys.path (a no-op when installed)."""
    root = str(target.root)
    if target.origin != "installed" and sys.path[:1] != [root]:
        sys.path.insert(0, root)


@contextlib.contextmanager
def activated(target: Target) -> Iterator[None]:
    """`activate` for a block, undone after it (`import_state_kept`)."""
    with import_state_kept():
        activate(target)
        yield


@contextlib.contextmanager
def import_state_kept() -> Iterator[None]:
    """A block that may `activate` targets, leaving this process's imports as it found them: sys.path and
    sys.dont_write_bytecode as they were, and no module of the target's package loaded from a folder the block put
    on sys.path (a later `import vllm` in this process finds what it found before: `cli.main` run in a process
    that goes on, such as the tests)."""
    path, bytecode = list(sys.path), sys.dont_write_bytecode
    try:
        yield
    finally:
        added = [Path(folder) for folder in dict.fromkeys(sys.path) if folder not in path]
        sys.path[:] = path
        sys.dont_write_bytecode = bytecode
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(f"{PACKAGE}.")]:
            if any(_loaded_from(sys.modules[name], folder) for folder in added):
                del sys.modules[name]


def _loaded_from(module: object, folder: Path) -> bool:
    """Whether `module` was loaded from a file inside `folder` (a module without a file was not)."""
    file = getattr(module, "__file__", None)
    return file is not None and Path(file).resolve().is_relative_to(folder.resolve())


def check_loaded(target: Target) -> None:
    """Fail loudly if the `vllm` already imported is not the target's (a stale or shadowed copy)."""
    check_imported_from([PACKAGE], target.package_dir, "the target's")


def check_imported_from(modules: Iterable[str], folder: Path, whose: str) -> None:
    """`TargetNotFound` if a module of `modules` is imported already, and not from a file in `folder` (`whose`
    folder it is, for the message): the guards would run another copy than the one they were told to."""
    for module in sorted(set(modules) & sys.modules.keys()):
        if not _loaded_from(sys.modules[module], folder):
            file = getattr(sys.modules[module], "__file__", None)
            raise TargetNotFound(
                f"the guards would run {module} from {file}, not {whose} {folder}; run the guards in a fresh process"
            )


_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
}


def not_a_file(path: Path) -> str | None:
    """What `path` is, when it is not a regular file (through its symlinks); None for one. Nothing is opened."""
    try:
        mode = path.stat().st_mode
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "a symlink loop"
        if err.errno == errno.ENOENT:
            return "a dangling symlink" if path.is_symlink() else "gone"
        return None  # not ours to judge here (a folder we may not enter): reading it says why
    return None if stat.S_ISREG(mode) else _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def files_to_read(paths: Iterable[Path]) -> Iterator[Path]:
    """The regular files among a walk's `paths`; every other one is skipped with a note."""
    for path in paths:
        if (what := not_a_file(path)) is None:
            yield path
        else:
            note(f"skipped {path}: {what}, not a file to read")


def unreadable(path: Path, err: OSError) -> SourceDoesNotParse:
    """The one line for a file of the target the system will not read (permissions, an I/O error)."""
    why = err.strerror or err
    return SourceDoesNotParse(f"{path}: cannot be read ({why}); make it readable or point at another tree")


class NotPythonText(ValueError):
    """Bytes Python would not read as a source file: why (a coding line naming no codec, not the text it says), and
    where (1-based line, and column in bytes)."""

    def __init__(self, reason: str, line: int = 1, column: int = 1) -> None:
        super().__init__(reason)
        self.line, self.column = line, column


def python_text(data: bytes) -> str:
    """A source file's bytes decoded as Python decodes them: its BOM or coding line, else UTF-8 (a BOM is not part
    of the text); newlines as written. `NotPythonText` saying why when Python could not read them."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        bad_coding = None
    except SyntaxError as err:  # a coding line naming no codec, or not UTF-8 in the first two lines
        encoding, bad_coding = "utf-8", err.msg
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as err:
        why = f"not {encoding} text ({err.reason} at byte {err.start}), which Python cannot read"
        line_start = data.rfind(b"\n", 0, err.start) + 1
        raise NotPythonText(why, data.count(b"\n", 0, err.start) + 1, err.start - line_start + 1) from None
    if bad_coding is not None:
        raise NotPythonText(bad_coding)
    return text


def read_source(path: Path) -> str:
    """A Python file of the target, decoded as Python decodes it (`python_text`) with its newlines made `\\n`;
    `SourceDoesNotParse` naming it when it cannot be read or decoded."""
    return _decoded(path, _read(path))


def read_source_holding(path: Path, word: bytes) -> str | None:
    """`read_source`, for a file whose bytes hold `word` (a word of Python's: the same bytes in every encoding Python
    reads source in); None for any other, not decoded (discovery reads thousands of files, and a quarter hold one)."""
    data = _read(path)
    return _decoded(path, data) if word in data else None


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise unreadable(path, err) from None


def _decoded(path: Path, data: bytes) -> str:
    try:
        text = python_text(data)
    except NotPythonText as err:
        raise SourceDoesNotParse(f"{path}: {err}; fix the file or point at another tree") from None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
