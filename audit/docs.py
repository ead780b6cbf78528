"""The rules' documentation, from the rule table: `docs/rules.md` (one section per code, its example and its fix)
and each rule's SARIF `help`. What a section says a call is reported as is the audit's own output on the example.
"""

from __future__ import annotations

import functools

from warnonce_guard.audit.findings import Finding
from warnonce_guard.audit.rules import CACHE_CONTRACT, RULES, VLLM_HANDLER, Rule
from warnonce_guard.audit.scan import findings_in_source
from warnonce_guard.caches.model import CACHES, DEFAULT_MODEL, FUNCTION, Cache

HANDLER = VLLM_HANDLER  # where most rules' example stands: a handler of `e`, logging through vLLM's logger
EXAMPLE_FILE = "my_plugin/platform.py"


@functools.cache  # a rule and its finding are frozen; SARIF asks for every selected rule's help on every run
def example_finding(rule: Rule) -> Finding:
    """What the audit reports on the rule's example, where its context puts it (`e` is the live exception)."""
    found = findings_in_source(rule.snippet(rule.example), EXAMPLE_FILE, "my_plugin.platform", DEFAULT_MODEL)
    if [f.code for f in found] != [rule.code]:
        raise AssertionError(f"{rule.code}: its example must make one finding of its own, not {found}")
    return found[0]


def section(rule: Rule) -> str:
    """A rule's documentation, in Markdown, below its heading."""
    finding = example_finding(rule)
    how = "`--fix` writes it" if rule.fixable else "by hand: `--fix` leaves it"
    return "\n".join(
        [
            f"**{rule.name}** ({rule.severity}{'; fixable' if rule.fixable else ''}): {rule.summary}.",
            "",
            f"In `{EXAMPLE_FILE}`, the call on line {finding.line}",
            "",
            "```python",
            rule.snippet(rule.example).rstrip("\n"),
            "```",
            "",
            "is reported as",
            "",
            f"    {EXAMPLE_FILE}:{finding.line}:{finding.column}: {finding.code} {finding.message}",
            "",
            f"The fix ({how}):",
            "",
            "```python",
            rule.fixed,
            "```",
        ]
    )


def help_text(rule: Rule) -> str:
    """A rule's SARIF `help.text`: what it reports, and where it is documented."""
    return f"{rule.summary}. {CACHE_CONTRACT} Documented, with an example and its fix, in {rule.anchor}."


def rules_document() -> str:
    """The whole of `docs/rules.md`."""
    table = [
        f"| [{r.code}](#{r.code.lower()}) | {r.name} | {r.severity} | {'yes' if r.fixable else 'no'} | {r.summary} |"
        for r in RULES
    ]
    head = [
        "# The audit's rules",
        "",
        "<!-- generated from warnonce_guard.audit.rules.RULES and warnonce_guard.caches.model.CACHES by"
        " `python -m tools.readme`; do not edit -->",
        "",
        f"`warnonce-guard audit` reports every argument of a `*_once` call that can keep a live object in its cache,"
        f" or make the call raise. {CACHE_CONTRACT}",
        "",
        "The default selection is every error and every info; a warning is reported, and fails the audit, when"
        " selected (`--select`, `--extend-select` or `[tool.warnonce-guard]`; `--strict` selects all); an info is"
        " shown and never fails. `--fix` formats a fixable finding's argument first where the message then renders"
        " as before (`--diff` shows it, changing nothing); `# warnonce: ok[CODE] <reason>` or `# noqa: CODE` on a"
        " line of the call accepts a reviewed one. Which cache a call reaches, and so which of its arguments and"
        " keywords are checked, is [the table of caches](#the-caches-it-knows) below.",
        "",
        "| code | name | severity | fixable | summary |",
        "|---|---|---|---|---|",
        *table,
    ]
    sections = [f"## {rule.code}\n\n{section(rule)}" for rule in RULES]
    return "\n\n".join(["\n".join(head), *sections, caches_section()]) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _called(cache: Cache) -> str:
    if cache.kind == FUNCTION:
        return ", ".join(f"`{name}`" for name in cache.names)
    loggers = ", ".join(f"`{name}`" for name in cache.names)
    return f"`.{'`, `.'.join(cache.methods)}` of loggers from {loggers}"


def caches_section() -> str:
    """The table of every once-cache (`caches.model.CACHES`), and how a user adds one."""
    rows = [
        f"| {c.label} | {_called(c)} | `{_cell(c.signature.text)}` | {_cell(c.keys_on)} | {c.size} "
        f"| {'yes' if c.renders_first else 'no'} | {_cell(c.source)} |"
        for c in CACHES
    ]
    return "\n".join(
        [
            "## The caches it knows",
            "",
            "<!-- generated from warnonce_guard.caches.model.CACHES -->",
            "",
            "The rows are `caches/caches.toml`, read through the validator of `[[tool.warnonce-guard.cache]]` (one"
            " schema), each read from the library's own code (the version and lines in the last column). A call reaches"
            " a logger's row when the audited module gets the logger from one of the row's factories or instances"
            " (through its imports, relative ones included, and the names and `self.x` it binds), or imports it"
            " from a module of a package whose loggers are the row's; a receiver not followed to a row may be any"
            " logger with a `*_once` method (another method, lightning's `WarningCache.warn`, counts only on a receiver"
            " followed to its row), and the call is checked against each: a keyword is `WOG011` only when none"
            " takes it, an argument is checked where any keeps it. Arguments a row's call takes but never caches"
            " (vLLM's `scope=`) or that live as long as the process anyway (a logger) are not checked. An instance"
            " (`self`) given to an unbounded cache is `WOG012`; a live exception given to a cache that renders the"
            " message first is `WOG013`, informational. vLLM's row is read from the target's `vllm/logger.py` (the"
            " audited tree's, else the installed vLLM's): where its `*_once` render the message before anything"
            " caches it (issue 35's patch), the row renders first. A name of a row's package ending as one of its"
            " names does (a re-export: `deepspeed.utils.log_dist_once`). The audit reads (parses) only a file holding"
            " one of the rows' names (each `*_once` method's, each function's, the loggers' of a method not named"
            " `*_once`) or `_once` beside a cache decorator; it neither parses nor compiles the others"
            " (`bench/audit_vs_ruff.py` times it beside ruff).",
            "",
            "| cache | called as | signature | keys on | size | renders first | read from |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
            "An lru_cache'd function whose name ends in `_once`, defined at the top of an audited module, is a row of"
            " its own there (every parameter reaches the cache but a `logger`). Add your own in `pyproject.toml`:",
            "",
            "```toml",
            "[[tool.warnonce-guard.cache]]",
            'name = "my_plugin.log.warn_once"        # the cached callable (for kind "logger": Class.method)',
            'kind = "function"                       # or "logger": a method of the loggers `loggers` make',
            'signature = "(logger, msg, *args)"      # the call\'s parameters (for kind "logger": without self)',
            'held = ["logger"]                       # optional: parameters that live as long as the process',
            "maxsize = 128                           # optional: the lru_cache's size (default: unbounded)",
            "# optional: uncached, tupled, renders-first, loggers, methods, also, packages, places, replace",
            "```",
            "",
            "An entry naming a cache of the table is refused unless it says `replace = true` (then it stands for"
            " that row); a malformed one is bad input (exit 3), one line naming the entry and its key. A run with"
            " configured entries says which it used on stderr, and each that no call in the files audited reaches."
            " Strict mode (`pytest --warnonce-strict`) wraps the same rows, and the configured ones, wherever the"
            " test process has them: where the module defines it, where a module imports it by name, and where an"
            " object or class of a module stores it (`logger.warning_once = warning_once`); a cache that is not an"
            " lru_cache (a set of keys) gets text in place of a refused value. A configured entry found nowhere in"
            " the session is said at its end.",
        ]
    )
