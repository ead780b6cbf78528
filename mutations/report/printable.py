"""A result every report writer can encode: each writer reads the result through `printable_result`, so the
JSON, the HTML, the Markdown, the JUnit XML and the terminal all show a path's undecodable byte as the same
`\\xff` (`common.console.printable`).
"""

from __future__ import annotations

import weakref

from warnonce_guard.common.console import printable_json
from warnonce_guard.mutations.records import RunResult

# The results `printable_result` returned, by id (a RunResult is unhashable): the report's files and the table read
# the same one, which is checked once.
_checked: weakref.WeakValueDictionary[int, RunResult] = weakref.WeakValueDictionary()


def printable_result(result: RunResult) -> RunResult:
    """`result` with every string printable (the same result when it already is)."""
    if _checked.get(id(result)) is result:
        return result
    data = result.to_json()
    clean = printable_json(data)
    printable = result if clean == data else RunResult.from_json(clean)
    _checked[id(printable)] = printable
    return printable
