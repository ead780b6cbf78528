"""One rule table: every code's example is reported under it (and its fix is not), and every writer, the docs and
the CLI read the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from warnonce_guard.audit import FORMATS
from warnonce_guard.audit.baseline import compare
from warnonce_guard.audit.docs import example_finding, section
from warnonce_guard.audit.formats import GITHUB_LEVELS, SARIF_LEVELS, WRITERS, AuditReport
from warnonce_guard.audit.paths import Walk, python_files
from warnonce_guard.audit.rules import BY_CODE, RULES, Rule
from warnonce_guard.audit.run import audit_files
from warnonce_guard.audit.scan import findings_in_source
from warnonce_guard.audit.selection import DEFAULT, EVERY
from warnonce_guard.cli.main import main

from tests import layout


def handler_logging(rule: Rule) -> str:
    """The rule's context (a handler of `e`, for most) whose one once-cache call is the rule's example."""
    return rule.snippet(rule.example)


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.code)
def test_every_rule_reports_its_example_under_its_code_and_not_its_fix(rule: Rule) -> None:
    (finding,) = findings_in_source(handler_logging(rule), "x.py")
    assert (finding.code, finding.kind) == (rule.code, rule.kind)
    assert finding.message == rule.render(finding.call, finding.argument, finding.formatted, finding.cache)
    assert findings_in_source(rule.snippet(rule.fixed), "x.py") == []
    assert (finding.fix is not None) == rule.fixable


def test_the_table_is_in_code_order_with_one_rule_per_code_and_kind() -> None:
    assert [rule.code for rule in RULES] == sorted(BY_CODE)
    assert len({rule.kind for rule in RULES}) == len({rule.name for rule in RULES}) == len(RULES)


@pytest.fixture
def one_finding_per_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package with one module per rule, each logging that rule's example."""
    package = tmp_path / "every_rule"
    package.mkdir()
    for rule in RULES:
        (package / f"{rule.code.lower()}.py").write_text(handler_logging(rule))
    monkeypatch.chdir(tmp_path)
    return package


def write(name: str, strict: bool) -> str:
    result = audit_files(python_files([Path("every_rule")], Walk(Path.cwd(), Path.cwd())))
    codes = EVERY if strict else DEFAULT
    return WRITERS[name](AuditReport(result, compare(result.findings, frozenset()), "every_rule", codes))


@pytest.mark.parametrize("strict", [False, True])
def test_every_writer_shows_the_tables_code_name_summary_severity_and_message(
    one_finding_per_rule: Path, strict: bool
) -> None:
    shown = [rule for rule in RULES if strict or rule.severity in ("error", "info")]
    message = {rule.code: example_finding(rule).message for rule in shown}

    text = write("text", strict).splitlines()[:-1]
    assert [line.split(" ", 2)[1:] for line in text] == [[rule.code, message[rule.code]] for rule in shown]

    github = write("github", strict).splitlines()[:-1]
    levels = [f"::{GITHUB_LEVELS[r.severity]}" for r in shown]  # an info is a notice
    assert [line.split(",title=", 1)[0].split(" ", 1)[0] for line in github] == levels
    assert [line.split(",title=", 1)[1].split("::", 1)[0] for line in github] == [f"{r.code} {r.name}" for r in shown]

    run = json.loads(write("sarif", strict))["runs"][0]
    assert [
        (r["id"], r["name"], r["shortDescription"]["text"], r["defaultConfiguration"]["level"])
        for r in run["tool"]["driver"]["rules"]
    ] == [(rule.code, rule.name, rule.summary, SARIF_LEVELS[rule.severity]) for rule in shown]
    assert [(r["ruleId"], r["level"], r["message"]["text"]) for r in run["results"]] == [
        (rule.code, SARIF_LEVELS[rule.severity], message[rule.code]) for rule in shown
    ]

    document = json.loads(write("json", strict))
    assert [(f["code"], f["kind"]) for f in document["findings"]] == [(rule.code, rule.kind) for rule in RULES]
    failing = {r.code for r in shown if r.severity != "info"}  # an info is shown, and never fails
    assert [f["code"] for f in document["findings"] if f["fails"]] == [r.code for r in RULES if r.code in failing]


def test_the_cli_offers_every_registered_format(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["audit", "--help"])
    usage = capsys.readouterr().out
    assert f"--format {{{','.join(FORMATS)}}}" in usage
    assert all(label in " ".join(usage.split()) for label in FORMATS.values())
    assert WRITERS.keys() == FORMATS.keys()  # and each has its writer


def test_sarif_rule_help_is_the_rules_own_section_of_docs_rules_md(one_finding_per_rule: Path) -> None:
    docs = (layout.ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    driver = json.loads(write("sarif", True))["runs"][0]["tool"]["driver"]
    for descriptor in driver["rules"]:
        rule = BY_CODE[descriptor["id"]]
        assert descriptor["help"]["markdown"] == section(rule)
        assert f"## {rule.code}\n\n{section(rule)}\n" in docs
        assert rule.anchor in descriptor["help"]["text"] and rule.anchor == f"docs/rules.md#{rule.code.lower()}"
    # no address the documentation does not have: SARIF wants absolute URIs there, and there is none
    assert not [key for key in json.dumps(driver).split('"') if key.endswith("Uri")]
