"""The audit's output formats: text (`path:line:col: CODE message`), JSON, GitHub annotations and SARIF 2.1.0.

Each writer turns an `AuditReport` into text; `WRITERS` has one per name in `audit.FORMATS`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from warnonce_guard.audit.baseline import Comparison
from warnonce_guard.audit.docs import help_text, section
from warnonce_guard.audit.findings import AuditResult, Finding
from warnonce_guard.audit.rules import CACHE_CONTRACT
from warnonce_guard.audit.selection import DEFAULT, failing, selected, shown

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# The control characters, escaped as Python writes them in a string: a file name holding a newline stays on its line.
_CONTROLS = {code: f"\\x{code:02x}" for code in (*range(32), 127)} | {9: "\\t", 10: "\\n", 13: "\\r"}
# A rule's severity as GitHub's workflow commands and SARIF's levels name it.
GITHUB_LEVELS = {"error": "error", "warning": "warning", "info": "notice"}
SARIF_LEVELS = {"error": "error", "warning": "warning", "info": "note"}


@dataclass(frozen=True)
class AuditReport:
    """What a writer shows: the findings, their comparison with the baseline, the target as described, the options."""

    result: AuditResult
    comparison: Comparison
    target: str
    codes: frozenset[str] = DEFAULT  # the selected rules: their findings are shown (and fail)
    baseline: bool = False  # a baseline was given: SARIF says whether each result is new or unchanged
    shown: dict[str, str] = field(default_factory=dict)  # a finding's file -> the path to show, where they differ

    def path(self, finding: Finding) -> str:
        """Where a line of text or an annotation shows the finding: relative to the current directory."""
        return self.shown.get(finding.file, finding.file)


def summary_line(report: AuditReport) -> str:
    """What failed the run first (ruff's "Found N errors"), by code, then what the audit read and accepted."""
    result, comparison = report.result, report.comparison
    new, stale = len(comparison.new_exceptions), len(comparison.stale)
    fails = Counter(f.code for f in failing(comparison, report.codes))
    by_code = f" ({', '.join(f'{code} {count}' for code, count in sorted(fails.items()))})" if fails else ""
    notes = Counter(f.code for f in shown(comparison, report.codes) if f.rule.severity == "info")
    noted = "".join(f", {count} informational ({code})" for code, count in sorted(notes.items()))
    return (
        f"{fails.total()} failing finding(s){by_code}{noted}; {len(result.findings)} finding(s) in all, "
        f"{len(result.exceptions)} live exception(s): {new} new, "
        f"{len(result.exceptions) - new} accepted by the baseline, {len(result.suppressed)} finding(s) accepted "
        f"by a pragma; {stale} stale baseline entr{'y' if stale == 1 else 'ies'} (of the files checked); "
        f"{result.files_scanned} files scanned ({result.files_parsed} parsed) in {result.seconds:.2f}s"
    )


def one_line(text: str) -> str:
    """`text` with its control characters escaped (`\\n`): one line whatever a file name holds."""
    return text.translate(_CONTROLS)


def text(report: AuditReport) -> str:
    """One `path:line:col: CODE message` line per finding shown (the failing ones and the informational ones; a
    control character in it escaped: `\\n`), then the summary (stale entries: a count)."""
    comparison = report.comparison
    lines = [
        one_line(f"{report.path(f)}:{f.line}:{f.column}: {f.code} {f.message}") for f in shown(comparison, report.codes)
    ]
    return "\n".join([*lines, summary_line(report)]) + "\n"


def json_document(report: AuditReport) -> str:
    result, comparison = report.result, report.comparison
    accepted = {f.key for f in comparison.accepted}
    fails = {f.key for f in failing(comparison, report.codes)}
    document = {
        "target": report.target,
        "counts": {
            "failing": len(failing(comparison, report.codes)),  # what decides the exit status
            "findings": len(result.findings),
            "exceptions": len(result.exceptions),
            "new": len(comparison.new),
            "new_exceptions": len(comparison.new_exceptions),
            "accepted": len(comparison.accepted),
            "suppressed": len(result.suppressed),
            "stale": len(comparison.stale),
            "files_scanned": result.files_scanned,
            "files_parsed": result.files_parsed,
            "seconds": round(result.seconds, 3),
        },
        # `fails`: whether it fails this run (a new finding of a selected rule that is not informational)
        "findings": [{**f.to_json(), "accepted": f.key in accepted, "fails": f.key in fails} for f in result.findings],
        "suppressed": [f.to_json() for f in result.suppressed],
        "stale": list(comparison.stale),
    }
    return json.dumps(document, indent=2) + "\n"


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def github(report: AuditReport) -> str:
    """GitHub Actions workflow commands: one annotation per finding shown (its rule's severity: an informational one
    is a notice), then the summary."""
    lines = []
    for f in shown(report.comparison, report.codes):
        props = {
            "file": report.path(f),
            "line": f.line,
            "col": f.column,
            "endLine": f.end_line,
            "endColumn": f.end_column,
            "title": f"{f.code} {f.rule.name}",
        }
        joined = ",".join(f"{k}={_escape_property(str(v))}" for k, v in props.items())
        lines.append(f"::{GITHUB_LEVELS[f.rule.severity]} {joined}::{_escape_data(f.message)}")
    return "\n".join([*lines, summary_line(report)]) + "\n"


def _tool_version() -> str:
    try:
        return metadata.version("warnonce-guard")
    except metadata.PackageNotFoundError:
        return "unknown"


def _sarif_result(f: Finding, rule_index: dict[str, int], accepted: set[str] | None) -> dict[str, Any]:
    """One result; with a baseline's `accepted` keys, a finding no pragma accepts says whether it is new."""
    entry: dict[str, Any] = {
        "ruleId": f.code,
        "ruleIndex": rule_index[f.code],
        "level": SARIF_LEVELS[f.rule.severity],
        "message": {"text": f.message},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": f.file, "uriBaseId": "%SRCROOT%"},
                    "region": {
                        "startLine": f.line,
                        "startColumn": f.column,
                        "endLine": f.end_line or f.line,
                        "endColumn": f.end_column or f.column,
                    },
                }
            }
        ],
        "partialFingerprints": {"warnonceKey/v1": f.key},
        "properties": {"qualname": f.qualname, "argument": f.argument, "kind": f.kind},
    }
    if accepted is not None and f.suppressed is None:
        entry["baselineState"] = "unchanged" if f.key in accepted else "new"
    if f.suppressed is not None:
        entry["suppressions"] = [{"kind": "inSource", "justification": f.suppressed}]
    return entry


def sarif(report: AuditReport) -> str:
    """A SARIF 2.1.0 log: one rule per selected code, one result per reported finding (new, accepted or pragma'd).

    Each rule's `help` is its section of docs/rules.md (code scanning shows it with the alert). There is no
    `helpUri` nor `informationUri`: SARIF wants absolute URIs there (GitHub's upload rejects a relative one), and
    the documentation has no address of its own beyond the repository's `docs/rules.md`, which `help` names.
    """
    rules = selected(report.codes)
    rule_index = {rule.code: i for i, rule in enumerate(rules)}
    accepted = {f.key for f in report.comparison.accepted} if report.baseline else None
    every = (*report.result.findings, *report.result.suppressed)
    results = [_sarif_result(f, rule_index, accepted) for f in every if f.code in rule_index]
    descriptors = [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": CACHE_CONTRACT},
            "defaultConfiguration": {"level": SARIF_LEVELS[rule.severity]},
            "help": {"text": help_text(rule), "markdown": section(rule)},
        }
        for rule in rules
    ]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "warnonce-guard",
                        "version": _tool_version(),
                        "rules": descriptors,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": report.target}}},
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


# The writer of each format `--format` chooses from (`warnonce_guard.audit.FORMATS`).
WRITERS: dict[str, Callable[[AuditReport], str]] = {
    "text": text,
    "json": json_document,
    "github": github,
    "sarif": sarif,
}
