"""The rules' documentation, from the rule table: `docs/rules.md` (one section per code, its example and its fix)
and each rule's SARIF `help`. What a section says a call is reported as is the audit's own output on the example.
"""

from __future__ import annotations

import functools

from warnonce_guard.audit.findings import Finding
from warnonce_guard.audit.rules import CACHE_CONTRACT, RULES, Rule
from warnonce_guard.audit.scan import findings_in_source

HANDLER = "try:\n    import my_plugin._C\nexcept ImportError as e:\n    {call}\n"


@functools.cache  # a rule and its finding are frozen; SARIF asks for every selected rule's help on every run
def example_finding(rule: Rule) -> Finding:
    """What the audit reports on the rule's example, in a handler where `e` is the live exception."""
    found = findings_in_source(HANDLER.format(call=rule.example), "my_plugin/platform.py")
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
            "In a handler `except ImportError as e:`, the call",
            "",
            "```python",
            rule.example,
            "```",
            "",
            "is reported as",
            "",
            f"    my_plugin/platform.py:{finding.line}:{finding.column}: {finding.code} {finding.message}",
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
        "<!-- generated from warnonce_guard.audit.rules.RULES by `python -m tools.readme`; do not edit -->",
        "",
        f"`warnonce-guard audit` reports every argument of a `*_once` call that can keep a live object in its cache,"
        f" or make the call raise. {CACHE_CONTRACT}",
        "",
        "The default selection is every error; a warning is reported, and fails the audit, when selected"
        " (`--select`, `--extend-select` or `[tool.warnonce-guard]`; `--strict` selects all). `--fix` formats a"
        " fixable finding's argument first where the message then renders as before (`--diff` shows it, changing"
        " nothing); `# warnonce: ok[CODE] <reason>` or `# noqa: CODE` on a line of the call accepts a reviewed one.",
        "",
        "| code | name | severity | fixable | summary |",
        "|---|---|---|---|---|",
        *table,
    ]
    sections = [f"## {rule.code}\n\n{section(rule)}" for rule in RULES]
    return "\n\n".join(["\n".join(head), *sections]) + "\n"
