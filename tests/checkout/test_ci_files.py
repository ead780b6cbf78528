"""The CI files: valid against their published schemas, and calling only what a person runs locally.

The workflow's schema is check-jsonschema's vendored copy (`--builtin-schema vendor.github-workflows`).
The Buildkite file is a job file of vLLM's pipeline generator, which plain Buildkite schemas do not
describe; `tests/schemas/vllm-buildkite-job.json` does, and is itself checked against every job file of
vLLM 0.33.0. The checks run with every HTTP(S) proxy pointed at a closed local port, so an attempt to
download a schema fails the test instead of passing online.
Nox sessions are read from noxfile.py's syntax tree: nox itself is not installed in the sessions'
environments, where these tests run.
"""

from __future__ import annotations

import ast
import configparser
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML  # check-jsonschema's own YAML parser (YAML 1.2: `on` stays a string)

from tests import layout
from tools.release import package_version

ROOT = layout.ROOT
WORKFLOW = ROOT / ".github" / "workflows" / "mutation-guard.yml"
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
BUILDKITE = ROOT / ".buildkite" / "mutation-guard.yml"
JOB_SCHEMA = ROOT / "tests" / "schemas" / "vllm-buildkite-job.json"
VLLM_JOBS = sorted((ROOT / "tests" / "data" / "vllm-0.33.0-buildkite" / "test_areas").glob("*.yaml"))
NOXFILE = ROOT / "noxfile.py"
PR_PATHS = {"guards/**", "mutations/**", "setup.cfg", "noxfile.py"}

OFFLINE = "http://127.0.0.1:9"  # the discard port: nothing listens, every request through it fails
NOX_SESSION = re.compile(r"\bnox\b[^\n;&|]*?(?:\s-s|\s--sessions?)[ =]+([\w-]+)")


def load(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


def check_jsonschema(schema: str | Path, *paths: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", "http_proxy", "https_proxy")}
    env.update(HTTP_PROXY=OFFLINE, HTTPS_PROXY=OFFLINE, http_proxy=OFFLINE, https_proxy=OFFLINE)
    which = ["--schemafile", str(schema)] if isinstance(schema, Path) else ["--builtin-schema", schema]
    command = [sys.executable, "-m", "check_jsonschema", *which, *map(str, paths)]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def nox_sessions() -> set[str]:
    """Names of the functions noxfile.py decorates with `@nox.session` (or their `name=`)."""
    names = set()
    for node in ast.parse(NOXFILE.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            call = decorator.func if isinstance(decorator, ast.Call) else decorator
            if ast.unparse(call) in ("nox.session", "session"):
                keywords = decorator.keywords if isinstance(decorator, ast.Call) else []
                renamed = [k.value.value for k in keywords if k.arg == "name" and isinstance(k.value, ast.Constant)]
                names.add(renamed[0] if renamed else node.name)
    return names


def pinned_vllm() -> str:
    for node in ast.parse(NOXFILE.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["PINNED_VLLM"]:
            return ast.literal_eval(node.value)
    raise AssertionError("noxfile.py defines no PINNED_VLLM")


def workflow_commands(path: Path = WORKFLOW) -> list[str]:
    return [step["run"] for job in load(path)["jobs"].values() for step in job["steps"] if "run" in step]


def buildkite_commands() -> list[str]:
    commands = []
    for step in load(BUILDKITE)["steps"]:
        for key in ("command", "commands"):
            value = step.get(key, [])
            commands += [value] if isinstance(value, str) else value
    return commands


def sessions_called(commands: list[str]) -> set[str]:
    return {name for command in commands for name in NOX_SESSION.findall(command.replace("\\\n", " "))}


@pytest.mark.parametrize(
    ("schema", "path"),
    [("vendor.github-workflows", WORKFLOW), ("vendor.github-workflows", RELEASE), (JOB_SCHEMA, BUILDKITE)],
    ids=["gha", "gha-release", "bk"],
)
def test_ci_file_validates_against_its_schema_offline(schema: str | Path, path: Path) -> None:
    result = check_jsonschema(schema, path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_job_file_schema_accepts_every_job_file_vllm_writes() -> None:
    assert len(VLLM_JOBS) >= 30
    result = check_jsonschema(JOB_SCHEMA, *VLLM_JOBS)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("schema", "path", "good", "bad"),
    [
        ("vendor.github-workflows", WORKFLOW, "runs-on: ubuntu-24.04", "runs-on: 24.04"),
        (JOB_SCHEMA, BUILDKITE, "  optional: true", "  optional: sometimes"),
        (JOB_SCHEMA, BUILDKITE, "  commands:\n  - 'python3 -m pip", "  command:\n  - 'python3 -m pip"),
    ],
    ids=["gha", "bk-value", "bk-command-key"],
)
def test_schema_check_rejects_the_file_with_one_wrong_value(
    schema: str | Path, path: Path, good: str, bad: str, tmp_path: Path
) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(good) >= 1
    broken = tmp_path / path.name
    broken.write_text(text.replace(good, bad, 1), encoding="utf-8")
    result = check_jsonschema(schema, broken)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Schema validation errors" in result.stdout


def test_session_names_are_read_from_the_noxfile() -> None:
    assert {"tests", "guards", "sites", "mutation", "lint"} <= nox_sessions()


@pytest.mark.parametrize(
    ("path", "needed"), [(WORKFLOW, {"tests", "build", "mutation"}), (RELEASE, {"build", "wheel"})]
)
def test_workflow_calls_only_nox_sessions_the_noxfile_defines(path: Path, needed: set[str]) -> None:
    called = sessions_called(workflow_commands(path))
    assert needed <= called
    assert called <= nox_sessions(), f"unknown nox sessions: {sorted(called - nox_sessions())}"


def test_buildkite_steps_need_nothing_but_pip_and_the_tool() -> None:
    commands = buildkite_commands()
    assert sessions_called(commands) == set() and not any("npm" in c or "chromium" in c for c in commands)
    assert all(c.startswith(("python3 -m pip install --no-deps ", "warnonce-guard ")) for c in commands)


def test_session_pattern_reads_the_forms_people_type() -> None:
    commands = ["python -m nox -s tests", 'nox -s mutation -- --vllm "$VLLM"', "nox --session=lint", "nox -l"]
    assert sessions_called(commands) == {"tests", "mutation", "lint"}


def test_workflow_runs_nightly_on_demand_and_on_pull_requests_touching_the_guards() -> None:
    triggers = load(WORKFLOW)["on"]
    assert triggers["schedule"] and all("cron" in entry for entry in triggers["schedule"])
    assert "vllm" in triggers["workflow_dispatch"]["inputs"]
    assert set(triggers["pull_request"]["paths"]) >= PR_PATHS


def test_workflow_pins_the_vllm_the_noxfile_pins() -> None:
    workflow = load(WORKFLOW)
    assert workflow["on"]["workflow_dispatch"]["inputs"]["vllm"]["default"] == pinned_vllm()
    assert workflow["env"]["PINNED_VLLM"] == pinned_vllm()


def test_workflow_keeps_the_report_whatever_the_gate_says() -> None:
    steps = load(WORKFLOW)["jobs"]["mutation"]["steps"]
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()" and upload["with"]["path"].rstrip("/") == "mutation-report"
    summary = next(s for s in steps if "GITHUB_STEP_SUMMARY" in s.get("run", ""))
    assert summary["if"].startswith("always()") and "hashFiles('mutation-report/summary.md')" in summary["if"]


def test_buildkite_steps_are_written_as_vllm_writes_its_own() -> None:
    job = load(BUILDKITE)
    assert job["depends_on"] == ["image-build-cpu"]
    guards, nightly = job["steps"]
    for step in (guards, nightly):
        assert set(step["source_file_dependencies"]) == {"vllm/platforms/", "vllm/logger.py"}
        assert step["device"].startswith("cpu-") and "command" not in step and "if" not in step
    assert nightly["optional"] is True and nightly["key"].endswith("-nightly") and "[Nightly]" in nightly["label"]
    assert "optional" not in guards
    upload = nightly["commands"][-1]
    assert 'buildkite-agent artifact upload "mutation-report/**/*"' in upload and upload.endswith("exit $$status")


@pytest.mark.parametrize("path", [WORKFLOW, RELEASE], ids=["gha", "gha-release"])
def test_workflow_pins_every_action_by_commit_with_its_version_in_a_comment(path: Path) -> None:
    uses = re.findall(r"uses: (\S+)(.*)", path.read_text(encoding="utf-8"))
    assert uses
    for action, comment in uses:
        assert re.fullmatch(r"[\w-]+/[\w-]+@[0-9a-f]{40}", action), action
        assert re.fullmatch(r" # v\d+\.\d+\.\d+", comment), (action, comment)


def test_buildkite_steps_fail_on_a_site_their_record_lists_and_discovery_no_longer_finds() -> None:
    guards, nightly = load(BUILDKITE)["steps"]
    for step in (guards, nightly):
        (run,) = [c for c in step["commands"] if c.startswith("warnonce-guard ")]
        assert "--expect-sites .buildkite/warnonce_guard_sites.json" in run


def test_the_pinned_vllms_committed_sites_record_is_what_sites_write_records_today(tmp_path: Path) -> None:
    """The record `nox -s mutation` and `nox -s guards` pass as --expect-sites for the pinned vLLM (noxfile.py
    `_expected_sites`): written by the tool from the installed vLLM, so it can never list a site the tool does not
    find (a run would fail) nor miss one it finds (a vanished site would go unnoticed)."""
    from warnonce_guard.cli.main import main

    committed = ROOT / "expected-sites" / f"vllm-{pinned_vllm()}.json"
    fresh = tmp_path / "sites.json"
    assert main(["sites", "--write", str(fresh)]) == 0
    assert committed.read_text(encoding="utf-8") == fresh.read_text(encoding="utf-8")
    assert 'EXPECTED_SITES = ROOT / "expected-sites"' in NOXFILE.read_text(encoding="utf-8")


SPEC = "WARNONCE_GUARD_SPEC"
STUBBED = ("python3", "warnonce-guard", "buildkite-agent")  # every program the steps run


def run_step_as_buildkite(step: dict[str, Any], env: dict[str, str], stubs: Path) -> subprocess.CompletedProcess[str]:
    """The step's commands as Buildkite's agent runs them: `$$` unescaped (Buildkite's interpolation), one bash script
    with -e, here with every program it calls a stub that appends its arguments, one per line, to `stubs/calls`."""
    stubs.mkdir(exist_ok=True)
    for name in STUBBED:
        stub = stubs / name
        stub.write_text(f'#!/bin/bash\n{{ echo "== {name}"; printf "%s\\n" "$@"; }} >> "{stubs}/calls"\n')
        stub.chmod(0o755)
    script = "\n".join(step["commands"]).replace("$$", "$")
    bash = [shutil.which("bash") or "/bin/bash", "-e", "-c", script]
    return subprocess.run(bash, env={"PATH": str(stubs), **env}, capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("env", [{}, {SPEC: ""}], ids=["unset", "empty"])
def test_a_buildkite_step_without_the_variable_stops_in_one_line_naming_it(env: dict[str, str], tmp_path: Path) -> None:
    for step in load(BUILDKITE)["steps"]:
        done = run_step_as_buildkite(step, env, tmp_path)
        assert done.returncode != 0 and not (tmp_path / "calls").exists()  # nothing installed, nothing run
        (line,) = done.stderr.splitlines()
        assert f"{SPEC}: set it to what pip installs warnonce-guard from: a wheel, a checkout, or " in line


def test_a_buildkite_step_installs_what_the_variable_names_as_one_argument(tmp_path: Path) -> None:
    wheel = f"{tmp_path}/a folder/warnonce_guard-{package_version()}-py3-none-any.whl"
    for step in load(BUILDKITE)["steps"]:
        (tmp_path / "calls").unlink(missing_ok=True)
        done = run_step_as_buildkite(step, {SPEC: wheel}, tmp_path)
        assert done.returncode == 0, done.stderr
        pip, tool, *upload = (tmp_path / "calls").read_text().split("== ")[1:]
        assert [call.split()[:3] for call in upload] in ([], [["buildkite-agent", "artifact", "upload"]])
        assert pip.splitlines()[:6] == ["python3", "-m", "pip", "install", "--no-deps", wheel]
        assert not any(line.startswith("warnonce-guard") for line in pip.splitlines()[6:])
        assert tool.splitlines()[:2] in (["warnonce-guard", "guards"], ["warnonce-guard", "mutate"])


# What names a release: pip's NAME==VERSION, a wheel's file name, a pre-commit `rev:`, a PEP 508 URL, a PyPI page, a
# repository on a git host (none is published).
RELEASE_NAMES = re.compile(
    r"warnonce[-_]guard==(?P<pin>[0-9][\w.]*)|warnonce_guard-(?P<wheel>[0-9][\w.]*)-py3-none-any\.whl"
    r"|^\s*rev: v(?P<rev>[0-9][\w.]*)|warnonce-guard\s*@|pypi\.org/(?:p|project)/warnonce"
    r"|github\.com/(?:[\w.-]+/)?warnonce",
    re.MULTILINE,
)


def tracked_text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    paths = [ROOT / name for name in listed.stdout.splitlines() if not name.startswith("tests/data/")]
    return [path for path in paths if path.is_file() and path.suffix not in (".png", ".js", ".whl", ".gz")]


def test_nothing_names_a_release_that_does_not_exist_and_a_wheel_names_the_packages_version() -> None:
    """No release is published (CHANGELOG.md has no dated section): no pin, tag, URL or index page of one; a wheel file
    the CI files and README name (one `nox -s build` makes) carries setup.cfg's version."""
    assert not re.search(r"^## \[\d", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.MULTILINE)
    naming_the_wheel, wrong = set(), []
    for path in tracked_text_files():
        for found in RELEASE_NAMES.finditer(path.read_text(encoding="utf-8", errors="replace")):
            if found["wheel"] == package_version():
                naming_the_wheel.add(path.relative_to(ROOT).as_posix())
            else:
                wrong.append(f"{path.relative_to(ROOT)}: {found[0].strip()}")
    assert not wrong, wrong
    assert {"README.md", ".buildkite/mutation-guard.yml"} <= naming_the_wheel  # what they say to set the variable to


def test_the_release_names_the_package_name_the_workflow_installs() -> None:
    """release.yml installs `dist/warnonce_guard-${TAG#v}-py3-none-any.whl`: the name setup.cfg's metadata makes."""
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg", encoding="utf-8")
    assert setup["metadata"]["name"].replace("-", "_") == "warnonce_guard"
    assert 'dist/warnonce_guard-${TAG#v}-py3-none-any.whl"' in "\n".join(workflow_commands(RELEASE))


def test_release_publishes_on_a_version_tag_only_after_building_and_checking() -> None:
    release = load(RELEASE)
    assert release["on"] == {"push": {"tags": ["v*"]}}
    assert release["permissions"] == {"contents": "read"}
    build, publish = release["jobs"]["build"], release["jobs"]["publish"]
    runs = [step["run"] for step in build["steps"] if "run" in step]
    assert any('nox -s build -- --tag "$TAG"' in run for run in runs)
    assert any("nox -s wheel -- --wheel " in run for run in runs)
    tags = [step["env"]["TAG"] for step in build["steps"] if "TAG" in step.get("env", {})]
    assert len(tags) == 2 and set(tags) == {"${{ github.ref_name }}"}
    assert publish["needs"] == "build" and publish["environment"] == "pypi"
    assert publish["permissions"] == {"id-token": "write"}  # trusted publishing, and nothing more
    assert "permissions" not in build
    assert publish["steps"][-1]["uses"].startswith("pypa/gh-action-pypi-publish@")
    assert not any("password" in step.get("with", {}) for step in publish["steps"])  # no stored token


def test_ci_builds_and_checks_both_artifacts_on_every_run() -> None:
    assert "build" in sessions_called((ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines())
    steps = load(WORKFLOW)["jobs"]["mutation"]["steps"]
    (build,) = [step for step in steps if "nox -s build" in step.get("run", "")]
    assert build["if"] == "matrix.vllm == 'pinned'"
