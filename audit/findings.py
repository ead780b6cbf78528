"""The audit's records: one finding (an argument of a `*_once` call), and the findings of one run.

A finding's `key` (file, qualified function, level, argument text, occurrence index among findings
with the same four) has no line number, so a baseline of accepted findings survives line shifts. The
argument text is `ast.unparse`d, so re-wrapping or re-quoting a call does not change it either.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace

from warnonce_guard.audit.fixes import MESSAGE, Fix
from warnonce_guard.audit.rules import BY_KIND, UNCHECKED, Rule
from warnonce_guard.rule.liveness import EXCEPTION

_KEYWORD = re.compile(r"^\w+=(?!=)")  # an argument shown as `name=value` (ast.unparse spaces out `a == b`)


@dataclass(frozen=True)
class Finding:
    """One argument of one `*_once` call that can keep a live object in the cache."""

    file: str  # posix path relative to the project root (the target's, for a vLLM tree), e.g. vllm/platforms/cpu.py
    line: int  # line of the argument (for display; not part of the key)
    qualname: str  # CpuPlatform.import_kernels, or <module>
    level: str  # the method called: warning_once, info_once, ... ("" for a finding about a file or a pragma)
    argument: str  # the argument's source, ast.unparse'd; `*x`, `**x` and `name=x` for those forms
    kind: str  # the liveness policy's kind (rule.liveness)
    occurrence: int = 0  # index among findings with the same file, qualname, level and argument
    column: int = 1  # 1-based column of the argument
    end_line: int = 0  # where the argument ends (1-based, end column exclusive)
    end_column: int = 0
    suppressed: str | None = None  # the reason of the pragma that accepts it (`# warnonce: ok <reason>`, a noqa)
    call: str = ""  # the call as a message shows it: `logger.warning_once(...)`, `warn(...) (warning_once)`
    fix: Fix | None = None  # how `--fix` formats the argument first, where that renders the message as before
    cache: str = ""  # the cache it is about, as the message names it (`caches.model`)

    @property
    def key(self) -> str:
        """Identity stable across line shifts: what a baseline stores."""
        return f"{self.file}::{self.qualname}::{self.level}::{self.argument}#{self.occurrence}"

    @property
    def rule(self) -> Rule:
        return BY_KIND[self.kind]

    @property
    def code(self) -> str:
        return self.rule.code

    @property
    def formatted(self) -> str:
        """The call's arguments with this one formatted first, as the fix writes them: `"%s", repr(err)` (`repr`
        where no fix is known), or `str(err)` for a message."""
        value = _KEYWORD.sub("", self.argument)  # `msg=err`: its value
        if self.argument.startswith("exc_info="):  # logging reads the exception being handled itself
            return (
                "for exc_info: pass exc_info=True inside the handler, logging finds the exception, the cache keeps True"
            )
        if self.fix is not None and self.fix.index == MESSAGE:
            return f"{self.fix.wrapper}({value})"
        return f'"%s", {self.fix.wrapper if self.fix else "repr"}({value})'

    @property
    def message(self) -> str:
        """One line for a human: what reaches the cache (or makes the call raise) and what to do."""
        return self.rule.render(self.call or f"logger.{self.level}(...)", self.argument, self.formatted, self.cache)

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "key": self.key, "code": self.code}


def unchecked(file: str, reason: str, line: int = 1, column: int = 1) -> Finding:
    """The one finding of a file (or folder) the audit cannot check: it does not parse, or cannot be read."""
    return Finding(file, line, "<module>", "", reason, UNCHECKED, column=column, end_line=line, end_column=column)


def numbered(findings: Iterable[Finding]) -> list[Finding]:
    """Findings sorted by file and line, each with its index among the preceding findings sharing its key."""
    seen: Counter[tuple[str, str, str, str]] = Counter()
    out = []
    for finding in sorted(findings, key=lambda f: (f.file, f.line)):
        group = (finding.file, finding.qualname, finding.level, finding.argument)
        out.append(replace(finding, occurrence=seen[group]))
        seen[group] += 1
    return out


@dataclass(frozen=True)
class AuditResult:
    """All findings of one target, sorted by file and line, with what was scanned and how long it took.

    `findings` excludes those a pragma accepts; they are in `suppressed`.
    """

    findings: tuple[Finding, ...]
    files_scanned: int  # every *.py file of the package
    files_parsed: int  # those that passed the text prefilter
    seconds: float
    suppressed: tuple[Finding, ...] = ()
    reached: frozenset[str] = frozenset()  # the keys of the rows a call reaches (or whose function is defined)

    @property
    def exceptions(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.kind == EXCEPTION)
