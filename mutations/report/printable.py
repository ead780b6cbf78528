"""Text every report writer can encode: a path byte that is not UTF-8 is shown as `\\xff`, never written raw.

Python decodes such a byte of a path (`--vllm-src /src/tree\\xff`, a file under it) to a lone surrogate
(`os.fsdecode`); UTF-8 output refuses it (a traceback at the very end of a run, on every rerun), and XML
has no way to write it. Each writer reads the result through `printable_result`, the console through
`printable`, so the JSON, the HTML, the Markdown, the JUnit XML and the terminal all show the same `\\xff`.
"""

from __future__ import annotations

from typing import Any

from warnonce_guard.mutations.records import RunResult


def printable(text: str) -> str:
    """`text` with each surrogate escaped: an undecodable path byte as `\\xNN` (as `os.fsencode` would give the
    byte back), any other lone surrogate as `\\udNNN`; text without one is returned as it is."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that no undecodable byte made
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _printable_json(value: Any) -> Any:
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {_printable_json(k): _printable_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_printable_json(v) for v in value)
    return value


def printable_result(result: RunResult) -> RunResult:
    """`result` with every string printable (the same result when it already is)."""
    data = result.to_json()
    clean = _printable_json(data)
    return result if clean == data else RunResult.from_json(clean)
