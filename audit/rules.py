"""The audit's rule table (ruff's `codes.rs`): every code, with all a writer, the docs or the command line say about it.

A finding's kind (the liveness policy's answer, `rule.liveness.argument_kind`, `KEYWORD` for a keyword the cache's
call does not take, `INSTANCE` for the calling method's own instance given to an unbounded cache, `RENDERED` for a
live exception given to a cache that keeps only the rendered text) picks its rule. The text, JSON, GitHub and SARIF
writers, `docs/rules.md` and the command line read this table and nothing else: a new rule is one row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from warnonce_guard.rule.liveness import EXCEPTION, KEYWORD, UNHASHABLE

# The tool's documentation of the rules, generated from this table (`python -m tools.readme`), in the repository.
DOCS = "docs/rules.md"
# What every rule is about (SARIF fullDescription).
CACHE_CONTRACT = (
    "A logger's *_once methods (vLLM's, transformers' patch of logging.Logger, accelerate's) and helpers such as "
    "optimum's warn_once are functools.lru_cache'd on their arguments: an argument that is not an immutable primitive "
    "stays alive until the cache evicts it (vLLM's after 128 newer distinct calls, the others never), which for a "
    "once-per-process warning is the life of the process; one that cannot be hashed makes the call raise TypeError. "
    "A cache that renders the message first keeps only text. docs/rules.md lists every cache the audit knows."
)
INSTANCE = "instance"  # the instance whose method makes the call (`self`), given to an unbounded cache
RENDERED = "rendered"  # a live exception given to a cache that keeps only the rendered text

# Where a rule's example call stands (`{call}`): a handler whose exception is `e`, logging through vLLM's logger.
VLLM_HANDLER = (
    "from vllm.logger import init_logger\n\nlogger = init_logger(__name__)\n\n"
    "try:\n    import my_plugin._C\nexcept ImportError as e:\n    {call}\n"
)


@dataclass(frozen=True)
class Rule:
    """One code: what it reports, how it is named and how bad it is, the message of its findings, and an example."""

    code: str  # WOG001: `path:line:col: CODE message`, SARIF ruleId, the JSON's `code`
    kind: str  # the kind of argument it reports
    name: str  # SARIF rule name, GitHub annotation title
    summary: str  # one line (SARIF shortDescription)
    # the default selection is every error and every info; a warning is reported when selected; an info never fails
    severity: Literal["error", "warning", "info"]
    message: str  # a finding's message: {call}, {argument}, {kind}, {formatted} and {cache} are filled in
    fix: str  # what to do about it, said after the message (same fields)
    example: str  # a call making one finding, where `context` puts it (docs/rules.md, the tests)
    fixed: str  # that call as the fix writes it (by `--fix` when `fixable`, else by hand)
    fixable: bool = True  # `--fix` formats the argument first (where that renders the message as before)
    context: str = VLLM_HANDLER  # the module the example stands in, at `{call}`

    def render(self, call: str, argument: str, formatted: str, cache: str = "") -> str:
        """A finding's one line: the message, then the fix."""
        fields = {"call": call, "argument": argument, "kind": self.kind, "formatted": formatted, "cache": cache}
        return f"{self.message}; {self.fix}".format(**fields)

    def snippet(self, call: str) -> str:
        """The module with `call` where the example stands."""
        return self.context.format(call=call)

    @property
    def anchor(self) -> str:
        """Where `docs/rules.md` documents it."""
        return f"{DOCS}#{self.code.lower()}"


_KEPT = "{call} passes `{argument}` ({kind}), not provably an immutable primitive: {cache} keeps whatever it is"
_PRIMITIVE = "pass a str, number or a tuple of those ({formatted})"


def _kept(
    code: str, kind: str, name: str, summary: str, example: str, fixed: str, fix: str = _PRIMITIVE, fixable: bool = True
) -> Rule:
    """A rule for an argument that is not provably primitive but carries no live exception (a warning)."""
    return Rule(code, kind, name, summary, "warning", _KEPT, fix, example, fixed, fixable)


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
        'logger.warning_once("Failed to import my_plugin._C: %s", repr(e)',
        'logger.warning_once("Failed to import my_plugin._C: %s", repr(e))',
        fixable=False,
    ),
    Rule(
        "WOG001",
        EXCEPTION,
        "LiveExceptionInOnceCache",
        "A live exception reaches a *_once lru_cache",
        "error",
        "{call} passes `{argument}`, a live exception: {cache} keeps it, its traceback and every frame on it "
        "for the life of the process",
        "format it first ({formatted})",
        'logger.warning_once("Failed to import my_plugin._C: %r", e)',
        'logger.warning_once("Failed to import my_plugin._C: %s", repr(e))',
    ),
    _kept(
        "WOG002",
        "name",
        "NameInOnceCache",
        "A variable of unknown type reaches a *_once lru_cache",
        'logger.info_once("Using backend %s", backend)',
        'logger.info_once("Using backend %s", str(backend))',
    ),
    _kept(
        "WOG003",
        "attribute",
        "AttributeInOnceCache",
        "An attribute of unknown type reaches a *_once lru_cache",
        'logger.info_once("Running on %s", self.device)',
        'logger.info_once("Running on %s", str(self.device))',
    ),
    _kept(
        "WOG004",
        "subscript",
        "SubscriptInOnceCache",
        "A subscript of unknown type reaches a *_once lru_cache",
        'logger.info_once("First shape: %s", shapes[0])',
        'logger.info_once("First shape: %s", str(shapes[0]))',
    ),
    _kept(
        "WOG005",
        "call",
        "CallInOnceCache",
        "A call result of unknown type reaches a *_once lru_cache",
        'logger.info_once("Config: %r", describe(config))',
        'logger.info_once("Config: %s", repr(describe(config)))',
    ),
    _kept(
        "WOG006",
        "container",
        "ContainerInOnceCache",
        "A tuple or generator of unknown items reaches a *_once lru_cache",
        'logger.info_once("Pair: %s", (name, config))',
        'logger.info_once("Pair: %s", str((name, config)))',
    ),
    _kept(
        "WOG007",
        "starred",
        "StarredInOnceCache",
        "Unpacked arguments of unknown type reach a *_once lru_cache",
        'logger.info_once("%s and %s", *pair)',
        'logger.info_once("%s and %s", str(pair[0]), str(pair[1]))',
        fix="pass each value as its own argument, formatted first (str(x), repr(x))",
        fixable=False,
    ),
    _kept(
        "WOG008",
        "lambda",
        "LambdaInOnceCache",
        "A lambda (and what it closes over) reaches a *_once lru_cache",
        'logger.info_once("Callback: %s", lambda: config)',
        'logger.info_once("Callback for %s", str(config))',
        fix="pass what it would compute, formatted first (str(x), repr(x))",
        fixable=False,
    ),
    _kept(
        "WOG009",
        "expression",
        "ExpressionInOnceCache",
        "An expression of unknown type reaches a *_once lru_cache",
        'logger.info_once("Next step: %s", step + 1)',
        'logger.info_once("Next step: %s", str(step + 1))',
    ),
    Rule(
        "WOG010",
        UNHASHABLE,
        "UnhashableArgumentToOnceCall",
        "An argument a *_once lru_cache cannot hash: the call raises TypeError",
        "error",
        "{call} passes `{argument}`, which cannot be hashed: {cache} raises TypeError when the call logs, "
        "and nothing is logged",
        "format it first ({formatted}), or pass a tuple",
        'logger.warning_once("Unsupported options: %s", [name, mode])',
        'logger.warning_once("Unsupported options: %s", str([name, mode]))',
    ),
    Rule(
        "WOG011",
        KEYWORD,
        "UnexpectedKeywordToOnceCall",
        "A keyword the cache's call does not take: the call raises TypeError",
        "error",
        "{call} passes `{argument}`, which {cache}: the call raises TypeError and nothing is logged",
        "drop it (for a traceback, log with the uncached logger.warning(..., exc_info=True))",
        'logger.warning_once("Failed to import my_plugin._C: %s", repr(e), exc_info=True)',
        'logger.warning_once("Failed to import my_plugin._C: %s", repr(e))',
        fixable=False,
    ),
    Rule(
        "WOG012",
        INSTANCE,
        "InstanceInUnboundedOnceCache",
        "The calling method's own instance (self) reaches an unbounded once-cache",
        "error",
        "{call} passes `{argument}`, the instance whose method makes the call: {cache} keeps it, and all it holds, "
        "for the life of the process",
        "pass what identifies it, formatted first ({formatted})",
        'logger.warning_once("Loading %s on the CPU", self)',
        'logger.warning_once("Loading %s on the CPU", str(self))',
        context=(
            "from transformers.utils import logging\n\nlogger = logging.get_logger(__name__)\n\n\n"
            "class MyModel:\n    def load(self):\n        {call}\n"
        ),
    ),
    Rule(
        "WOG013",
        RENDERED,
        "LiveExceptionRenderedFirst",
        "A live exception reaches a once-cache that renders the message first: only text is kept",
        "info",
        "{call} passes `{argument}`, a live exception, to {cache}: nothing of it stays alive",
        "nothing to change (formatted first, it is not reported)",
        'logger.warning_once("Failed to import my_plugin._C: %r", e)',
        'logger.warning_once("Failed to import my_plugin._C: %s", repr(e))',
        fixable=False,
        context=VLLM_HANDLER.replace("vllm.logger", "sglang.multimodal_gen.runtime.utils.logging_utils"),
    ),
    Rule(
        "WOG100",
        REASONLESS,
        "PragmaWithoutReason",
        "A `# warnonce: ok` pragma without a reason: it accepts nothing",
        "error",
        "{argument} has no reason, so it accepts nothing",
        "say why the call is fine after it (`# warnonce: ok[WOG001] re-raised below`), or remove it",
        'logger.warning_once("Failed to import my_plugin._C: %s", repr(e))  # warnonce: ok',
        'logger.warning_once("Failed to import my_plugin._C: %s", repr(e))',
        fixable=False,
    ),
    Rule(
        "WOG101",
        UNUSED,
        "UnusedPragma",
        "A pragma (`# warnonce: ok`, `# noqa: WOG...`) that accepts no finding",
        "warning",
        "{argument} accepts no finding",
        "remove it (or the codes it names that match nothing)",
        'logger.warning_once("Failed to import my_plugin._C: %s", repr(e))  # warnonce: ok[WOG001] formatted first',
        'logger.warning_once("Failed to import my_plugin._C: %s", repr(e))',
        fixable=False,
    ),
)
BY_KIND = {rule.kind: rule for rule in RULES}
BY_CODE = {rule.code: rule for rule in RULES}
