"""The audit's output formats: text (`path:line:col: CODE message`), JSON, GitHub annotations and SARIF 2.1.0.

Each writer reads only the audit's records (`AuditResult`, `Comparison`) and returns text; the CLI
prints it. Text, GitHub and SARIF show the findings that decide the exit status (new live exceptions,
or every new finding with `--strict`); SARIF adds those a baseline or a pragma accepts, marked as
such, so code scanning can show them closed. JSON holds everything.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import metadata
from typing import Any

from warnonce_guard.audit.scan import CODES, AuditResult, Comparison, Finding, failing
from warnonce_guard.rule.liveness import EXCEPTION

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/vllm-project/vllm/pull/54098"
RULE_NAMES = {
    "WOG001": ("LiveExceptionInOnceCache", "A live exception reaches a *_once lru_cache"),
    "WOG002": ("NameInOnceCache", "A variable of unknown type reaches a *_once lru_cache"),
    "WOG003": ("AttributeInOnceCache", "An attribute of unknown type reaches a *_once lru_cache"),
    "WOG004": ("SubscriptInOnceCache", "A subscript of unknown type reaches a *_once lru_cache"),
    "WOG005": ("CallInOnceCache", "A call result of unknown type reaches a *_once lru_cache"),
    "WOG006": ("ContainerInOnceCache", "A mutable or non-primitive container reaches a *_once lru_cache"),
    "WOG007": ("StarredInOnceCache", "Unpacked arguments of unknown type reach a *_once lru_cache"),
    "WOG008": ("LambdaInOnceCache", "A lambda (and what it closes over) reaches a *_once lru_cache"),
    "WOG009": ("ExpressionInOnceCache", "An expression of unknown type reaches a *_once lru_cache"),
}
FORMATS = ("text", "json", "github", "sarif")


def summary_line(result: AuditResult, comparison: Comparison) -> str:
    new, stale = len(comparison.new_exceptions), len(comparison.stale)
    return (
        f"{len(result.findings)} finding(s), {len(result.exceptions)} live exception(s): {new} new, "
        f"{len(result.exceptions) - new} accepted by the baseline, {len(result.suppressed)} finding(s) accepted "
        f"by a pragma; {stale} stale baseline entr{'y' if stale == 1 else 'ies'}; "
        f"{result.files_scanned} files scanned ({result.files_parsed} parsed) in {result.seconds:.2f}s"
    )


def text(result: AuditResult, comparison: Comparison, target: str, strict: bool) -> str:
    """One `path:line:col: CODE message` line per failing finding, then the summary."""
    lines = [f"{f.file}:{f.line}:{f.column}: {f.code} {f.message}" for f in failing(comparison, strict)]
    lines += [f"stale baseline entry (matches no finding): {key}" for key in comparison.stale]
    return "\n".join([*lines, summary_line(result, comparison)]) + "\n"


def json_document(result: AuditResult, comparison: Comparison, target: str, strict: bool) -> str:
    accepted = {f.key for f in comparison.accepted}
    document = {
        "target": target,
        "counts": {
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
        "findings": [{**f.to_json(), "accepted": f.key in accepted} for f in result.findings],
        "suppressed": [f.to_json() for f in result.suppressed],
        "stale": list(comparison.stale),
    }
    return json.dumps(document, indent=2) + "\n"


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def github(result: AuditResult, comparison: Comparison, target: str, strict: bool) -> str:
    """GitHub Actions workflow commands: one `::error` annotation per failing finding, then the summary."""
    lines = []
    for f in failing(comparison, strict):
        level = "error" if f.kind == EXCEPTION else "warning"
        props = {
            "file": f.file,
            "line": f.line,
            "col": f.column,
            "endLine": f.end_line,
            "endColumn": f.end_column,
            "title": f"{f.code} {RULE_NAMES[f.code][0]}",
        }
        joined = ",".join(f"{k}={_escape_property(str(v))}" for k, v in props.items())
        lines.append(f"::{level} {joined}::{_escape_data(f.message)}")
    return "\n".join([*lines, summary_line(result, comparison)]) + "\n"


def _tool_version() -> str:
    try:
        return metadata.version("warnonce-guard")
    except metadata.PackageNotFoundError:
        return "unknown"


def _sarif_result(f: Finding, rule_index: dict[str, int], state: str | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "ruleId": f.code,
        "ruleIndex": rule_index[f.code],
        "level": "error" if f.kind == EXCEPTION else "warning",
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
    if state is not None:
        entry["baselineState"] = state
    if f.suppressed is not None:
        entry["suppressions"] = [{"kind": "inSource", "justification": f.suppressed}]
    return entry


def sarif(result: AuditResult, comparison: Comparison, target: str, strict: bool, baseline: bool = False) -> str:
    """A SARIF 2.1.0 log: one rule per code, one result per reported finding (new, accepted or pragma'd)."""
    reported = set(CODES.values()) if strict else {CODES[EXCEPTION]}
    codes = sorted(reported)
    rule_index = {code: i for i, code in enumerate(codes)}
    accepted = {f.key for f in comparison.accepted}
    results = []
    for f in result.findings:
        if f.code in reported:
            state = ("unchanged" if f.key in accepted else "new") if baseline else None
            results.append(_sarif_result(f, rule_index, state))
    results += [_sarif_result(f, rule_index, None) for f in result.suppressed if f.code in reported]
    rules = [
        {
            "id": code,
            "name": RULE_NAMES[code][0],
            "shortDescription": {"text": RULE_NAMES[code][1]},
            "fullDescription": {
                "text": "vLLM's logger *_once methods are functools.lru_cache'd on their arguments: an argument that "
                "is not an immutable primitive stays alive until 128 newer distinct calls evict it, which for a "
                "once-per-process warning is the life of the process."
            },
            "defaultConfiguration": {"level": "error" if code == CODES[EXCEPTION] else "warning"},
            "helpUri": INFORMATION_URI,
        }
        for code in codes
    ]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "warnonce-guard",
                        "informationUri": INFORMATION_URI,
                        "version": _tool_version(),
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": target}}},
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


Writer = Callable[[AuditResult, Comparison, str, bool], str]


def writer(name: str, baseline: bool) -> Writer:
    """The writer for `--format NAME`."""
    if name == "sarif":
        return lambda result, comparison, target, strict: sarif(result, comparison, target, strict, baseline)
    return {"text": text, "json": json_document, "github": github}[name]
