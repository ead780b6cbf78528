"""One rule table: every code's example is reported under it, and every writer and the CLI read the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from warnonce_guard.audit.baseline import compare
from warnonce_guard.audit.findings import Finding
from warnonce_guard.audit.formats import FORMATS, AuditReport
from warnonce_guard.audit.rules import BY_CODE, RULES, Rule
from warnonce_guard.audit.run import audit_paths
from warnonce_guard.audit.scan import findings_in_source
from warnonce_guard.audit.selection import DEFAULT, EVERY
from warnonce_guard.cli.main import main


def handler_logging(rule: Rule) -> str:
    """A handler whose one `*_once` call passes the rule's example (`e` is the live exception); a rule whose example
    is a module (it has lines: a file or pragma rule), that module."""
    if "\n" in rule.example:
        return rule.example
    lines = ["def f(x):", "    try:", "        pass", "    except Exception as e:"]
    return "\n".join([*lines, f'        logger.warning_once("%s", {rule.example})']) + "\n"


def example_finding(rule: Rule) -> Finding:
    """The one finding of the rule's example."""
    (finding,) = findings_in_source(handler_logging(rule), "x.py")
    return finding


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.code)
def test_every_rule_reports_its_example_under_its_code(rule: Rule) -> None:
    finding = example_finding(rule)
    assert (finding.code, finding.kind) == (rule.code, rule.kind)
    if "\n" in rule.example:  # a finding about a file or a pragma: its argument is what it is about
        assert finding.message == rule.render("", finding.argument)
    else:
        assert finding.argument == rule.example
        assert finding.message == rule.render("logger.warning_once(...)", rule.example)


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
    result = audit_paths([Path("every_rule")])
    codes = EVERY if strict else DEFAULT
    return FORMATS[name].write(AuditReport(result, compare(result.findings, frozenset()), "every_rule", codes))


@pytest.mark.parametrize("strict", [False, True])
def test_every_writer_shows_the_tables_code_name_summary_severity_and_message(
    one_finding_per_rule: Path, strict: bool
) -> None:
    shown = [rule for rule in RULES if strict or rule.severity == "error"]
    message = {rule.code: example_finding(rule).message for rule in shown}

    text = write("text", strict).splitlines()[:-1]
    assert [line.split(" ", 2)[1:] for line in text] == [[rule.code, message[rule.code]] for rule in shown]

    github = write("github", strict).splitlines()[:-1]
    assert [line.split(",title=", 1)[0].split(" ", 1)[0] for line in github] == [f"::{r.severity}" for r in shown]
    assert [line.split(",title=", 1)[1].split("::", 1)[0] for line in github] == [f"{r.code} {r.name}" for r in shown]

    run = json.loads(write("sarif", strict))["runs"][0]
    assert [
        (r["id"], r["name"], r["shortDescription"]["text"], r["defaultConfiguration"]["level"])
        for r in run["tool"]["driver"]["rules"]
    ] == [(rule.code, rule.name, rule.summary, rule.severity) for rule in shown]
    assert [(r["ruleId"], r["level"], r["message"]["text"]) for r in run["results"]] == [
        (rule.code, rule.severity, message[rule.code]) for rule in shown
    ]

    document = json.loads(write("json", strict))
    assert [(f["code"], f["kind"]) for f in document["findings"]] == [(rule.code, rule.kind) for rule in RULES]


def test_the_cli_offers_every_registered_format(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["audit", "--help"])
    usage = capsys.readouterr().out
    assert f"--format {{{','.join(FORMATS)}}}" in usage
    assert all(f.label in " ".join(usage.split()) for f in FORMATS.values())
