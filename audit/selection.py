"""Which rules a run reports and fails on: the errors (live exceptions), or with `strict` every rule."""

from __future__ import annotations

from warnonce_guard.audit.baseline import Comparison
from warnonce_guard.audit.findings import Finding
from warnonce_guard.audit.rules import RULES, Rule
from warnonce_guard.common.errors import ExitCode


def selected(strict: bool = False) -> tuple[Rule, ...]:
    """The rules whose new findings fail the audit, in code order."""
    return RULES if strict else tuple(rule for rule in RULES if rule.severity == "error")


def failing(comparison: Comparison, strict: bool = False) -> tuple[Finding, ...]:
    """The findings that fail the audit: new findings of a selected rule."""
    codes = {rule.code for rule in selected(strict)}
    return tuple(f for f in comparison.new if f.code in codes)


def exit_code(comparison: Comparison, strict: bool = False) -> ExitCode:
    """CHECK_FAILED when a finding of a selected rule is not accepted by the baseline."""
    return ExitCode.CHECK_FAILED if failing(comparison, strict) else ExitCode.OK
