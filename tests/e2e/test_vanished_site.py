"""No site vanishes, on vLLM itself (issue 33): a leak written in a form the site rule once did not read is a site,
its guard fails and the mutation run reports it exposed; a site deleted fails a run that expects it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from rich.console import Console
from warnonce_guard.cli.main import main
from warnonce_guard.common.errors import ExitCode
from warnonce_guard.mutations.run import mutate

from tests import layout
from tests.exported_support import vllm_copy
from tests.toy import CLI

pytestmark = pytest.mark.slow

FIXED = """\
            except ImportError as e:
                logger.warning_once("Failed to import from vllm._C: %s", repr(e))"""
ALIAS = """\
            except ImportError as e:
                err = e
                logger.warning_once("Failed to import from vllm._C: %r", err)"""
ARM_BRANCH = "not (Platform.get_cpu_architecture() in (CpuArchEnum.X86,))"
ARM_SITE = f"vllm/platforms/cpu.py::CpuPlatform.import_kernels::vllm._C [{ARM_BRANCH}]"  # cpu.py's fourth
RECORD = layout.ROOT / "expected-sites" / "vllm-0.34.0.json"  # the pinned vLLM's, which vllm_copy copies


def rewritten(root: Path, old: str, new: str) -> Path:
    tree = vllm_copy(root)
    cpu = tree / "vllm" / "platforms" / "cpu.py"
    text = cpu.read_text(encoding="utf-8")
    assert text.count(old) == 1  # the ARM branch's handler, the last site of the file
    cpu.write_text(text.replace(old, new), encoding="utf-8")
    return tree


def test_an_aliased_leak_is_a_live_site_whose_guard_fails_and_the_run_reports_it_exposed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = rewritten(tmp_path / "alias", FIXED, ALIAS)
    assert main(["sites", "--vllm-src", str(tree), "--json", "--expect-sites", str(RECORD)]) == ExitCode.OK
    sites = {s["id"]: s for s in json.loads(capsys.readouterr().out)["sites"] if s["cached"]}
    assert len(sites) == 6 and sites[ARM_SITE]["form"] == "live"

    out = tmp_path / "report"
    code = mutate(str(tree), out, tmp_path / "work", 100.0, None, Console(width=200), expect_sites=RECORD)

    assert code == ExitCode.CHECK_FAILED
    summary = (out / "summary.md").read_text(encoding="utf-8")
    (row,) = [line for line in summary.splitlines() if line.startswith(f"| `{ARM_SITE}` |")]
    assert "| **live** | **exposed** | exception retained, owner pinned, warning repeated |" in row
    assert "6 sites: 5 guarded, 1 exposed, 0 unreached." in summary
    assert "**Mutation score:** 100.00% (15 killed of 15 reached)" in summary  # the other sites' mutants still ran


def test_a_site_whose_handler_is_deleted_fails_a_run_that_expects_it(tmp_path: Path) -> None:
    tree = rewritten(
        tmp_path / "deleted",
        "            try:\n                import vllm._C  # noqa: F401\n" + FIXED,
        "            import vllm._C  # noqa: F401",
    )
    # the command as a user runs it, in a process of its own: the guards import this vLLM tree, and a worker of
    # this suite may already hold the installed vLLM (and its torch) imported
    guards = [*CLI, "guards", "-q", "--vllm-src", str(tree), "--expect-sites", str(RECORD)]
    done = subprocess.run(guards, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == ExitCode.CHECK_FAILED, done.stderr
    said = done.stderr.strip().splitlines()[-1]
    assert said.startswith(
        f"warnonce-guard: error: 1 expected site(s) of {RECORD} not found, so not guarded: {ARM_SITE}"
    )
