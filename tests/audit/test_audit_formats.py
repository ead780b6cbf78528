"""The audit as a linter: any files or packages, a pragma, stable codes, and text/JSON/GitHub/SARIF output."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from warnonce_guard.audit.baseline import compare
from warnonce_guard.audit.config import find
from warnonce_guard.audit.findings import AuditResult
from warnonce_guard.audit.formats import AuditReport, github, sarif, text
from warnonce_guard.audit.paths import python_files
from warnonce_guard.audit.rules import BY_KIND, RULES
from warnonce_guard.audit.run import Request, audit_files, walk_for
from warnonce_guard.audit.selection import DEFAULT, EVERY
from warnonce_guard.cli.main import main
from warnonce_guard.common.errors import NoPythonFiles

from tests import layout

SCHEMA = layout.SCHEMAS / "sarif-2.1.0-rtm.5.json"
LEAK = """\
from vllm.logger import init_logger

logger = init_logger(__name__)


def import_kernels():
    try:
        import my_plugin._C
    except ImportError as e:
        logger.warning_once("Failed: %r", e)
"""
NOISE = 'def helper(x):\n    logger.info_once("%s", x)\n'


def audit_paths(paths: list[Path]) -> AuditResult:
    """Every finding in the files and package directories given, with the settings of the nearest configuration:
    `warnonce-guard audit PATH ...`'s scan."""
    cwd = Path.cwd()
    return audit_files(python_files(paths, walk_for(Request(tuple(map(str, paths))), find(paths, cwd), cwd)))


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A plugin package (not vLLM) in a repository checkout that is the current directory."""
    package = tmp_path / "my_plugin"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "platform.py").write_text(LEAK)
    (package / "helpers.py").write_text(NOISE)
    monkeypatch.chdir(tmp_path)
    return package


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["audit", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_plugin_package_is_audited_with_paths_relative_to_the_current_directory(
    plugin: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "my_plugin")
    assert code == 1
    assert out.splitlines()[0].startswith("my_plugin/platform.py:10:43: WOG001 logger.warning_once(...) passes `e`")
    assert "WOG002" not in out  # not a live exception: reported with --strict only


def test_files_given_one_by_one_give_the_same_keys_as_their_package(plugin: Path) -> None:
    whole = audit_paths([Path("my_plugin")])
    files = audit_paths([Path("my_plugin/helpers.py"), Path("my_plugin/platform.py"), Path("my_plugin/platform.py")])
    assert [f.key for f in whole.findings] == [f.key for f in files.findings]
    assert files.files_scanned == 2  # a file given twice is read once


def test_a_missing_path_is_a_one_line_error(plugin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "nowhere.py")
    assert code == NoPythonFiles.exit_code and out == "" and err.count("\n") == 1 and "nowhere.py" in err


def test_paths_and_vllm_src_together_are_a_usage_error(plugin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "my_plugin", "--vllm-src", ".")
    assert code == 2 and "not both" in err


@pytest.mark.parametrize(
    ("comment", "accepted"),
    [
        ("  # warnonce: ok the exception is re-raised right after", True),
        ("  # warnonce: ok: reviewed in #123", True),
        ("  # warnonce: ok", False),  # a pragma needs a reason
        ("  # warnonce ok because", False),
    ],
)
def test_a_pragma_with_a_reason_accepts_the_call(plugin: Path, comment: str, accepted: bool) -> None:
    (plugin / "platform.py").write_text(LEAK.replace('"Failed: %r", e)', f'"Failed: %r", e){comment}'))
    result = audit_paths([plugin])
    assert (len(result.exceptions), len(result.suppressed)) == ((0, 1) if accepted else (1, 0))
    if accepted:
        assert result.suppressed[0].suppressed == comment.split("ok", 1)[1].strip(" :")


def test_a_pragma_on_any_line_of_a_multi_line_call_counts(plugin: Path) -> None:
    spread = 'logger.warning_once(\n            "Failed: %r",\n            e,  # warnonce: ok tested\n        )'
    multi = LEAK.replace('logger.warning_once("Failed: %r", e)', spread)
    (plugin / "platform.py").write_text(multi)
    assert len(audit_paths([plugin]).suppressed) == 1


def test_every_kind_has_a_stable_code_and_a_rule() -> None:
    assert BY_KIND["exception"].code == "WOG001"
    kinds = ["exception", "name", "attribute", "subscript", "call", "container", "starred", "lambda", "expression"]
    assert [BY_KIND[kind].code for kind in kinds] == [f"WOG00{i}" for i in range(1, 10)]
    assert [BY_KIND[kind].code for kind in ("keyword", "instance", "rendered")] == ["WOG011", "WOG012", "WOG013"]
    codes = ["WOG000", *(f"WOG{i:03}" for i in range(1, 14)), "WOG100", "WOG101"]
    assert [rule.code for rule in RULES] == codes
    assert len(BY_KIND) == len(RULES) and all(rule.name and rule.summary for rule in RULES)


def test_github_annotations_escape_what_the_format_reserves(plugin: Path) -> None:
    result = audit_paths([plugin])
    lines = github(AuditReport(result, compare(result.findings, frozenset()), "my_plugin", DEFAULT)).splitlines()
    assert lines[0].startswith("::error file=my_plugin/platform.py,line=10,col=43,endLine=10,endColumn=44,")
    assert "title=WOG001 LiveExceptionInOnceCache::" in lines[0]
    assert lines[-1].startswith("1 failing finding(s) (WOG001 1); 2 finding(s) in all, 1 live exception(s)")


def test_text_lists_every_new_finding_with_strict(plugin: Path) -> None:
    result = audit_paths([plugin])
    out = text(AuditReport(result, compare(result.findings, frozenset()), "my_plugin", EVERY))
    assert [line.split()[1] for line in out.splitlines()[:-1]] == ["WOG002", "WOG001"]


def validate_sarif(document: str) -> dict[str, object]:
    log = json.loads(document)
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)
    return log


def test_the_vendored_schema_is_the_official_one() -> None:
    digest = hashlib.sha256(SCHEMA.read_bytes()).hexdigest()
    assert digest == "2d99159ae54a3eea97f81781cff48780548657c35949f4b7f25e99a2ba4de4f8"


@pytest.mark.parametrize("strict", [False, True])
def test_sarif_validates_against_the_sarif_2_1_0_schema(plugin: Path, strict: bool) -> None:
    result = audit_paths([plugin])
    codes = EVERY if strict else DEFAULT
    log = validate_sarif(sarif(AuditReport(result, compare(result.findings, frozenset()), "my_plugin", codes)))
    run = log["runs"][0]  # type: ignore[index]
    assert [r["ruleId"] for r in run["results"]] == (["WOG002", "WOG001"] if strict else ["WOG001"])
    leak = next(r for r in run["results"] if r["ruleId"] == "WOG001")
    assert leak["level"] == "error"
    assert leak["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 10,
        "startColumn": 43,
        "endLine": 10,
        "endColumn": 44,
    }


def test_sarif_marks_baseline_and_pragma_acceptance(plugin: Path, tmp_path: Path) -> None:
    accepted_by_pragma = LEAK.replace("import_kernels", "other").replace("e)", "e)  # warnonce: ok re-raised")
    (plugin / "helpers.py").write_text(accepted_by_pragma)
    result = audit_paths([plugin])
    accepted = frozenset(f.key for f in result.findings)
    report = AuditReport(result, compare(result.findings, accepted), "my_plugin", DEFAULT, baseline=True)
    log = validate_sarif(sarif(report))
    results = log["runs"][0]["results"]  # type: ignore[index]
    assert [r.get("baselineState") for r in results] == ["unchanged", None]
    assert results[1]["suppressions"] == [{"kind": "inSource", "justification": "re-raised"}]


def test_the_cli_writes_sarif_and_json_to_stdout_only(plugin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "my_plugin", "--format", "sarif")
    assert code == 1 and err == "" and validate_sarif(out)
    code, out, _ = run(capsys, "my_plugin", "--format", "json")
    assert code == 1 and json.loads(out)["counts"]["exceptions"] == 1


def test_the_audit_runs_without_the_mutation_extra(plugin: Path) -> None:
    """What `pip install warnonce-guard` (no extra) gives: the command line imports nothing of the extra to audit."""
    blocked = "import sys; sys.modules.update(dict.fromkeys(['libcst', 'rich', 'mutmut']))"
    run_audit = "from warnonce_guard.cli.main import main; sys.exit(main(['audit', 'my_plugin']))"
    command = [sys.executable, "-c", f"{blocked}; {run_audit}"]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 1 and " WOG001 " in done.stdout, done.stderr
