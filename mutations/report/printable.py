"""A result every report writer can encode: each writer reads the result through `printable_result`, so the
JSON, the HTML, the Markdown, the JUnit XML and the terminal all show a path's undecodable byte as the same
`\\xff` (`common.console.printable`).
"""

from __future__ import annotations

from warnonce_guard.common.console import printable_json
from warnonce_guard.mutations.records import RunResult


def printable_result(result: RunResult) -> RunResult:
    """`result` with every string printable (the same result when it already is)."""
    data = result.to_json()
    clean = printable_json(data)
    return result if clean == data else RunResult.from_json(clean)
