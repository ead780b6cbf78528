"""A kernel-import site as everything downstream of discovery speaks of it: the frozen `Site` row and the `if`
`Condition`s on its way, with no parser in sight (`rule.sites` finds them with libcst; a run that only reads its
verdicts back never imports that)."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from warnonce_guard.rule.liveness import ONCE_METHODS


@dataclass(frozen=True)
class Condition:
    """An `if` test on the way to a site and the truth value the site needs."""

    expr: str
    want: bool
    in_handler: bool = False

    @property
    def label(self) -> str:
        """As the site's branch names it: the test, `not (...)` when the site needs it false."""
        text = " ".join(self.expr.split())  # a test over several lines, as one
        return text if self.want else f"not ({text})"

    @property
    def short(self) -> str:
        """The test's last name (`X86` of `arch in (CpuArchEnum.X86,)`), `not-` when false: for pytest ids."""
        names = re.findall(r"[A-Za-z_]\w*", self.expr)
        name = next((n for n in reversed(names) if n not in ("not", "in", "is", "and", "or", "None")), "if")
        return name.lstrip("_") if self.want else f"not-{name.lstrip('_')}"


@dataclass(frozen=True)
class Site:
    """One kernel-import site: a guarded kernel import (a `try` importing a kernel module, with a handler catching
    ImportError), and the `*_once` call of its handler discovery recognises, if any (one row per such call; a try
    without one is one row, `recognised` False). `id` is file, function, kernel module and branch: it survives line
    shifts between vLLM releases, never depends on position."""

    file: str  # posix path relative to the target root, e.g. vllm/platforms/cpu.py
    module: str  # vllm.platforms.cpu
    qualname: str  # CpuPlatform.import_kernels
    kernel_module: str  # vllm._C_AVX2
    line: int  # first line of the logging call (of the import, when no call is recognised)
    end_line: int  # last line of the logging call
    column: int  # 0-based column where the call starts
    end_column: int  # 0-based column just past the call's end
    import_line: int
    log_method: str  # warning_once, info_once, ..., or a plain warning (through `via`'s, when it is set)
    form: str  # "eager" (formatted before the call), "live" (the exception reaches the call) or "unknown"
    exc_name: str  # the handler's name ("" for `except ImportError:`)
    message: str | None  # the format string, when it is a literal
    message_source: str  # the source of the first argument (a literal, an f-string, a name, ...)
    args: tuple[str, ...]  # source of the positional arguments after the message
    exc_arg_index: int  # which of `args` references the exception (-1: only the message or a keyword does)
    receiver: str  # the logger expression the call goes through, e.g. `logger`
    anchor: str = ""  # digest of the enclosing `try` statement's source (`site_rule.anchor`)
    conditions: tuple[Condition, ...] = field(default=())
    driver: str | None = None  # `module:Class` whose import_kernels the guard calls (a platform plugin)
    place: str = "handler"  # where the call stands: in the handler, or "after" it (logging a name it bound)
    via: str = ""  # the callable the call reaches the logger through: a helper function or a partial, as written
    logs_exception: bool = True  # an argument of the call is made of the exception (its text must be in the record)
    duplicate: int = 0  # the how-manieth row with the same file, function, kernel module and branch (0: the first)
    needs_args: bool = False  # the function a guard would call takes arguments (0.34.0's dcp_topk_merge_local_topk)
    grouped: bool = False  # its handler is an `except*`: the name it binds is an ExceptionGroup holding the exception

    @property
    def branch(self) -> str:
        """The `if` conditions on the way to the import, as the source writes them: `not X86 / avx512`."""
        return " / ".join(c.label for c in self.conditions if not c.in_handler)

    @property
    def id(self) -> str:
        branch = f" [{self.branch}]" if self.branch else ""
        return f"{self.file}::{self.qualname}::{self.kernel_module}{branch}{self.disambiguator}"

    @property
    def disambiguator(self) -> str:
        """`#2`, `#3` for a second, third row of one identity (two calls of one handler, two tries of one branch)."""
        return f"#{self.duplicate + 1}" if self.duplicate else ""

    @property
    def test_id(self) -> str:
        """The id of the site's guard in pytest node ids (no `::` or `/`, which node ids reserve)."""
        via = f"-via-{self.driver.replace(':', '.')}" if self.driver else ""
        inner = [c.short for c in self.conditions if not c.in_handler][-1:]  # the test that tells siblings apart
        branch = "".join(f"-{label}" for label in inner)
        return f"{Path(self.file).stem}-{self.qualname}-{self.kernel_module}{branch}{self.disambiguator}{via}"

    @property
    def recognised(self) -> bool:
        """Discovery recognised the handler's logging call (else the row is the try's alone: `call: not recognised`)."""
        return bool(self.log_method)

    @property
    def guarded(self) -> bool:
        """A guard drives it: a site in a function or method a guard can call with no argument (a platform's
        `import_kernels`), whatever its handler writes. At module level (run at import time, which no guard repeats)
        or in a function that takes arguments (what would it be given?), only a cached call's, whose guard then says
        it is unreached."""
        return self.cached or (self.qualname != "<module>" and not self.needs_args)

    @property
    def unguarded_reason(self) -> str:
        """Why a site is not guarded, for the listing ("" when it is)."""
        if self.guarded:
            return ""
        return "runs at import time" if self.qualname == "<module>" else "its function takes arguments"

    @property
    def package(self) -> str:
        """The top-level package the site lives in (vllm, or a platform plugin's)."""
        return self.module.split(".")[0]

    @property
    def cached(self) -> bool:
        return self.log_method in ONCE_METHODS

    @property
    def current_package(self) -> str:
        """The package the site's module imports relative to (`from . import _C`)."""
        return current_package_of(self.file, self.module)

    @property
    def mutable(self) -> bool:
        """A cached site in a function or method mutmut can run (not at module level): the operators' targets."""
        return self.cached and self.qualname != "<module>"

    @property
    def function_name(self) -> str:
        return self.qualname.split(".")[-1]

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data.update(id=self.id, cached=self.cached)
        return data

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Site:
        fields = {k: v for k, v in data.items() if k not in ("id", "cached")}
        fields["args"] = tuple(fields["args"])  # type: ignore[arg-type]
        fields["conditions"] = tuple(Condition(**c) for c in fields["conditions"])  # type: ignore[arg-type,union-attr]
        return cls(**fields)  # type: ignore[arg-type]


# What "nothing to guard" says: no `try` of a function imports a kernel module and catches ImportError.
NO_SITE = "no guarded kernel import (a try importing a kernel module, catching ImportError) in a function"


def current_package_of(file: str, module: str) -> str:
    """The package a module imports relative to: itself for an `__init__.py`, else its parent."""
    return module if file.endswith("__init__.py") else module.rpartition(".")[0]
