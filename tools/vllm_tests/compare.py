"""Two pytest runs of the same tests, compared test by test from their junit XML files.

    python -m tools.vllm_tests.compare PLAIN.xml STRICT.xml   counts and times of both, then every test whose
                                                              outcome differs; exit 1 when one does

A test is named as junit names it, `classname::name` (`tests.test_config::test_x[a]`). Its outcome is the worst
of what its entries say: error, failed, xfailed, skipped, passed (a test failed in its call and erred in its
teardown is an error); a test one run has and the other has not is `absent` in that one.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

OUTCOMES = ("passed", "skipped", "xfailed", "failed", "error")  # from best to worst
ABSENT = "absent"


@dataclass(frozen=True)
class Result:
    outcome: str
    message: str  # the failure's, error's or skip's first line (and the next, after a colon); "" for a pass


@dataclass(frozen=True)
class Run:
    results: dict[str, Result]  # by test id
    seconds: float  # the suite's time as pytest measured it (collection and the tests)

    def counts(self) -> dict[str, int]:
        return {outcome: sum(r.outcome == outcome for r in self.results.values()) for outcome in OUTCOMES}


def _headline(text: str) -> str:
    """A message's first line, and its second when the first ends in a colon (strict mode's: what, then where)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].endswith(":"):
        return f"{lines[0]} {lines[1]}"
    return lines[0] if lines else ""


def _result(case: ET.Element) -> Result:
    found = [Result("passed", "")]
    for child in case:
        if child.tag in ("failure", "error", "skipped"):
            outcome = {"failure": "failed", "error": "error"}.get(child.tag, "skipped")
            if child.tag == "skipped" and child.get("type") == "pytest.xfail":
                outcome = "xfailed"
            found.append(Result(outcome, _headline(child.get("message") or child.text or "")))
    return max(found, key=lambda r: OUTCOMES.index(r.outcome))


def read(path: Path) -> Run:
    """The outcome of every test in a junit XML file pytest wrote (`--junitxml`)."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    results: dict[str, Result] = {}
    for case in (case for suite in suites for case in suite.iter("testcase")):
        key = f"{case.get('classname', '')}::{case.get('name', '')}"
        result = _result(case)
        if key not in results or OUTCOMES.index(result.outcome) > OUTCOMES.index(results[key].outcome):
            results[key] = result
    return Run(results, sum(float(suite.get("time", 0) or 0) for suite in suites))


def differences(plain: Run, strict: Run) -> list[tuple[str, Result, Result]]:
    """(test id, without strict, with strict) for every test whose outcome differs, in id order."""
    absent = Result(ABSENT, "")
    keys = sorted(plain.results.keys() | strict.results.keys())
    pairs = ((key, plain.results.get(key, absent), strict.results.get(key, absent)) for key in keys)
    return [(key, a, b) for key, a, b in pairs if a.outcome != b.outcome]


def report(plain: Run, strict: Run) -> list[str]:
    """The lines the session prints: a table of counts and times, then one line per differing test."""
    head = f"{'':<16}" + "".join(f"{o:>9}" for o in (*OUTCOMES, "total")) + f"{'time':>10}"
    lines = [head]
    for label, run in (("without strict", plain), ("with strict", strict)):
        counts = run.counts()
        cells = "".join(f"{counts[o]:>9}" for o in OUTCOMES) + f"{len(run.results):>9}"
        lines.append(f"{label:<16}{cells}{run.seconds:>9.1f}s")
    differ = differences(plain, strict)
    if not differ:
        lines.append("every test has the same outcome with and without --warnonce-strict")
        return lines
    lines.append(f"{len(differ)} test(s) differ (without strict -> with strict):")
    for key, a, b in differ:
        why = b.message or a.message
        lines.append(f"  {key}: {a.outcome} -> {b.outcome}" + (f"  ({why[:300]})" if why else ""))
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tools.vllm_tests.compare PLAIN.xml STRICT.xml", file=sys.stderr)
        return 2
    plain, strict = (read(Path(arg)) for arg in argv)
    print("\n".join(report(plain, strict)))
    return 1 if differences(plain, strict) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
