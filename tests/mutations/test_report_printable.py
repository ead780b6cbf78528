"""A path byte that is not UTF-8 (`--vllm-src /src/tree\\xff`): every report writer shows it as `\\xff`."""

from __future__ import annotations

import io
import json
import os
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import jsonschema
from rich.console import Console
from warnonce_guard.mutations import report
from warnonce_guard.mutations.records import RunResult
from warnonce_guard.mutations.report import print_table, viewer, write_report
from warnonce_guard.mutations.report.printable import printable_result

from tests.records_support import run_result

TREE = os.fsdecode(b"/src/tree\xff")  # what Python makes of the byte: a lone surrogate, which UTF-8 refuses
SHOWN = "/src/tree\\xff"


def undecodable_result() -> RunResult:
    """A result whose target path, and a mutant's reason, hold the undecodable byte."""
    result = run_result()
    result.target = f"source tree at {TREE}/vllm"
    result.mutants[1] = replace(result.mutants[1], reason=f"guard output from {TREE}/vllm/platforms/cpu.py")
    return result


def test_a_printable_result_is_the_same_result_when_nothing_needs_escaping() -> None:
    result = run_result()
    assert printable_result(result) is result
    assert printable_result(undecodable_result()).target == f"source tree at {SHOWN}/vllm"


def test_every_report_file_is_utf8_with_the_byte_escaped(tmp_path: Path) -> None:
    stand_in = tmp_path / "viewer.js"
    stand_in.write_text("/* stand-in */", encoding="utf-8")
    out = tmp_path / "out"

    write_report(undecodable_result(), out, stand_in)

    texts = {name: (out / name).read_bytes().decode("utf-8") for name in report.FILES}  # strict: no surrogate
    data = json.loads(texts["mutation.json"])
    schema = json.loads(viewer.SCHEMA_JSON.read_text(encoding="utf-8"))
    assert list(jsonschema.Draft7Validator(schema).iter_errors(data)) == []
    assert data["projectRoot"] == data["config"]["target"] == f"source tree at {SHOWN}/vllm"
    assert f"(source tree at {SHOWN}/vllm)" in texts["summary.md"].splitlines()[0]
    assert f"<title>warnonce-guard mutation report: vLLM 0.33.0 (source tree at {SHOWN}/vllm)" in texts["index.html"]
    failures = [f.get("message") for f in ET.fromstring(texts["junit.xml"].encode()).iter("failure")]
    assert f"guard output from {SHOWN}/vllm/platforms/cpu.py" in failures


def test_the_terminal_table_prints_on_a_console_that_refuses_surrogates() -> None:
    stdout = io.BytesIO()
    console = Console(file=io.TextIOWrapper(stdout, encoding="utf-8", errors="strict"), width=200)
    result = undecodable_result()
    result.mutants[0] = replace(result.mutants[0], detectors=(f"fired in {TREE}",))

    print_table(result, console)

    console.file.flush()
    assert f"fired in {SHOWN}" in stdout.getvalue().decode("utf-8")
