"""`nox -s exported` (tools/vllm_tests/exported.py): which sdists it runs in, and what it calls as expected."""

from __future__ import annotations

import pytest

from tests import layout
from tools.vllm_tests import compare, exported, sources

SITE = "vllm/platforms/cpu.py:670"
LEAKED = f"AssertionError: {SITE}: exception retained, object pinned, warning repeated (logged 2 times)"


def result(*rows: exported.Row, conftest: bool = True) -> exported.Result:
    return exported.Result(rows, 1.0, 0, conftest, "")


def row(outcome: str, message: str = "") -> exported.Row:
    return exported.Row("cpu-CpuPlatform.import_kernels-vllm._C-0", SITE, outcome, message)


def test_every_sdist_it_runs_in_is_pinned_as_the_data_readme_says() -> None:
    readme = (layout.DATA / "README.md").read_text(encoding="utf-8")
    assert sources.SDISTS[sources.VERSION] == sources.SHA256
    assert all(sha256 in readme for sha256 in sources.SDISTS.values())


def test_it_runs_the_committed_export_at_its_place_in_vllms_tests() -> None:
    assert exported.EXPORTED.is_file()
    assert exported.PATH.as_posix() == "tests/platforms/test_kernel_import_warnings.py"


@pytest.mark.parametrize(
    ("expect", "got", "wrong"),
    [
        ("pass", result(row("passed")), []),
        ("pass", result(row("failed", LEAKED)), ["expected to pass"]),
        ("leak", result(row("failed", LEAKED)), []),
        ("leak", result(row("passed")), ["expected to fail"]),
        ("leak", result(row("failed", "AssertionError: something else")), ["does not name"]),
        ("any", result(row(compare.ABSENT)), ["did not run"]),
        ("any", result(row("passed"), conftest=False), ["tests/conftest.py was not loaded"]),
        ("pass", result(), ["no case"]),
    ],
)
def test_what_is_as_expected(expect: str, got: exported.Result, wrong: list[str]) -> None:
    found = exported.unmet(got, expect)
    assert len(found) == len(wrong) and all(part in line for part, line in zip(wrong, found, strict=True))


def test_the_report_has_a_row_per_case_and_the_counts() -> None:
    lines = exported.report(result(row("failed", LEAKED)), "vLLM 0.29.0's suite")
    assert lines[1].split()[:2] == ["cpu-CpuPlatform.import_kernels-vllm._C-0", "failed"]
    assert lines[-1].startswith("vLLM 0.29.0's suite: 1 cases, 0 passed, 1 failed")
