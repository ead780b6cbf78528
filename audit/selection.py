"""Which rules a run selects (reports, and fails on), resolved from `select`, `extend-select` and `ignore` as ruff does.

A selector is a code (`WOG001`), a prefix of codes (`WOG00`, `WOG`) or `ALL`. Layers apply in order: the default
(every rule of severity error), the configuration, the command line. A layer with `select` starts over from it;
one without adds its `extend-select` to what the layers before selected. Within a layer the more specific selector
wins (`WOG001` over `WOG00` over `WOG` over `ALL`), and at equal specificity `ignore` wins over a select.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from warnonce_guard.audit.baseline import Comparison
from warnonce_guard.audit.findings import Finding
from warnonce_guard.audit.rules import BY_CODE, RULES, Rule
from warnonce_guard.common.errors import UsageError

ALL = "ALL"
# The default selection: the errors (a live exception, a call that raises, a file not checked, a pragma gone wrong),
# and what is said without failing (a live exception a cache that renders first is given).
DEFAULT = frozenset(rule.code for rule in RULES if rule.severity in ("error", "info"))
EVERY = frozenset(BY_CODE)


@dataclass(frozen=True)
class Layer:
    """The selectors one place (the configuration, the command line) gives."""

    origin: str  # where they are written, for an error: "pyproject.toml", "the command line"
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


def codes_of(selector: str, origin: str) -> frozenset[str]:
    """The codes one selector names; an unknown selector is a `UsageError` naming it and where it is written."""
    if selector == ALL:
        return EVERY
    codes = frozenset(code for code in BY_CODE if selector.startswith("WOG") and code.startswith(selector))
    if not codes:
        known = ", ".join(sorted(BY_CODE))
        raise UsageError(f"{origin}: unknown rule selector {selector!r} (want ALL, a code or a prefix: {known})")
    return codes


def resolve(layers: Iterable[Layer]) -> frozenset[str]:
    """The codes selected after every layer, starting from `DEFAULT`."""
    selected = set(DEFAULT)
    for layer in layers:
        chosen = [(s, True) for s in (*(layer.select or ()), *layer.extend_select)] + [(s, False) for s in layer.ignore]
        updates: dict[str, bool] = {}
        # The least specific (ALL) first, an ignore after the selects as specific as it: the last one applied wins.
        for selector, on in sorted(chosen, key=lambda pair: (0 if pair[0] == ALL else len(pair[0]), not pair[1])):
            updates.update(dict.fromkeys(codes_of(selector, layer.origin), on))
        if layer.select is not None:
            selected = set()
        selected |= {code for code, on in updates.items() if on}
        selected -= {code for code, on in updates.items() if not on}
    return frozenset(selected)


def selected(codes: frozenset[str] = DEFAULT) -> tuple[Rule, ...]:
    """The selected rules, in code order."""
    return tuple(rule for rule in RULES if rule.code in codes)


def shown(comparison: Comparison, codes: frozenset[str] = DEFAULT) -> tuple[Finding, ...]:
    """The findings a run shows: new findings of a selected rule."""
    return tuple(f for f in comparison.new if f.code in codes)


def failing(comparison: Comparison, codes: frozenset[str] = DEFAULT) -> tuple[Finding, ...]:
    """The findings that fail the audit: those shown but the informational ones."""
    return tuple(f for f in shown(comparison, codes) if f.rule.severity != "info")
