"""The audit's rule table (ruff's `codes.rs`): every code, with all a writer or the command line says about it.

A finding's kind (the liveness policy's answer, `rule.liveness.argument_kind`) picks its rule. The text, JSON,
GitHub and SARIF writers and the command line read this table and nothing else: a new rule is one row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from warnonce_guard.rule.liveness import EXCEPTION

# The tool's documentation of the rules (SARIF informationUri and each rule's helpUri).
HELP_URI = "https://github.com/vllm-project/vllm/pull/54098"
# What every rule is about (SARIF fullDescription).
CACHE_CONTRACT = (
    "vLLM's logger *_once methods are functools.lru_cache'd on their arguments: an argument that is not an "
    "immutable primitive stays alive until 128 newer distinct calls evict it, which for a once-per-process warning "
    "is the life of the process."
)


@dataclass(frozen=True)
class Rule:
    """One code: what it reports, how it is named and how bad it is, and the message of its findings."""

    code: str  # WOG001: `path:line:col: CODE message`, SARIF ruleId, the JSON's `code`
    kind: str  # the liveness policy's kind of argument it reports
    name: str  # SARIF rule name, GitHub annotation title
    summary: str  # one line (SARIF shortDescription)
    severity: Literal["error", "warning"]  # the default selection is every error; a warning is reported when selected
    message: str  # a finding's message: {call}, {argument} and {kind} are filled in
    fix: str  # what to do about it, said after the message
    example: str  # an argument it reports, in a handler where `e` is the live exception (a module, if it has lines)

    def render(self, call: str, argument: str) -> str:
        """A finding's one line: the message, then the fix."""
        return f"{self.message}; {self.fix}".format(call=call, argument=argument, kind=self.kind)


_KEPT = "{call} passes `{argument}` ({kind}), not provably an immutable primitive: the lru_cache keeps whatever it is"
_PRIMITIVE = "pass a str, number or a tuple of those"


def _kept(code: str, kind: str, name: str, summary: str, example: str) -> Rule:
    """A rule for an argument that is not provably primitive but carries no live exception (a warning)."""
    return Rule(code, kind, name, summary, "warning", _KEPT, _PRIMITIVE, example)


# The kinds of the findings that are not about an argument: a file the audit cannot check, and pragmas.
UNCHECKED = "unchecked"
REASONLESS = "reasonless-pragma"
UNUSED = "unused-pragma"

RULES: tuple[Rule, ...] = (
    Rule(
        "WOG000",
        UNCHECKED,
        "FileNotChecked",
        "A file or folder the audit cannot check (it does not parse, or cannot be read)",
        "error",
        "not checked: {argument}",
        "make it readable Python, or exclude it",
        "logger.warning_once('%s', e\n",
    ),
    Rule(
        "WOG001",
        EXCEPTION,
        "LiveExceptionInOnceCache",
        "A live exception reaches a *_once lru_cache",
        "error",
        "{call} passes `{argument}`, a live exception: the lru_cache keeps it, its traceback and every frame on it "
        "for the life of the process",
        'format it first ("%s", repr(e))',
        "e",
    ),
    _kept("WOG002", "name", "NameInOnceCache", "A variable of unknown type reaches a *_once lru_cache", "x"),
    _kept(
        "WOG003", "attribute", "AttributeInOnceCache", "An attribute of unknown type reaches a *_once lru_cache", "x.y"
    ),
    _kept(
        "WOG004", "subscript", "SubscriptInOnceCache", "A subscript of unknown type reaches a *_once lru_cache", "x[0]"
    ),
    _kept("WOG005", "call", "CallInOnceCache", "A call result of unknown type reaches a *_once lru_cache", "f(x)"),
    _kept(
        "WOG006",
        "container",
        "ContainerInOnceCache",
        "A mutable or non-primitive container reaches a *_once lru_cache",
        "(x, 1)",
    ),
    _kept(
        "WOG007", "starred", "StarredInOnceCache", "Unpacked arguments of unknown type reach a *_once lru_cache", "*x"
    ),
    _kept(
        "WOG008",
        "lambda",
        "LambdaInOnceCache",
        "A lambda (and what it closes over) reaches a *_once lru_cache",
        "lambda: x",
    ),
    _kept(
        "WOG009",
        "expression",
        "ExpressionInOnceCache",
        "An expression of unknown type reaches a *_once lru_cache",
        "x + 1",
    ),
    Rule(
        "WOG100",
        REASONLESS,
        "PragmaWithoutReason",
        "A `# warnonce: ok` pragma without a reason: it accepts nothing",
        "error",
        "`{argument}` has no reason, so it accepts nothing",
        "say why the call is fine after it (`# warnonce: ok[WOG001] re-raised below`)",
        "logger.warning_once('%s', 1)  # warnonce: ok\n",
    ),
    Rule(
        "WOG101",
        UNUSED,
        "UnusedPragma",
        "A pragma (`# warnonce: ok`, `# noqa: WOG...`) that accepts no finding",
        "warning",
        "`{argument}` accepts no finding",
        "remove it (or the codes it names that match nothing)",
        "logger.warning_once('%s', 1)  # warnonce: ok[WOG001] the message is a literal\n",
    ),
)
BY_KIND = {rule.kind: rule for rule in RULES}
BY_CODE = {rule.code: rule for rule in RULES}
