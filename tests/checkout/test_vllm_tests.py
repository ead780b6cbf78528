"""`nox -s vllm-tests`: its requirements come from vLLM's lock, its sources from the pinned sdist, its verdict
from two junit files (tools/vllm_tests/)."""

from __future__ import annotations

import io
import re
import tarfile
from pathlib import Path

import pytest
from warnonce_guard.common import files

from tests import layout
from tools.vllm_tests import compare, requirements, sources

LOCK = requirements.parse_lock(requirements.LOCK.read_text(encoding="utf-8"))
TORCH_FAMILY = {"torch", "torchaudio", "torchvision", "torchcodec", "torch-abi-audit", "triton"}


def pins(path: Path) -> dict[str, str]:
    found = (re.match(r"([a-z0-9-]+)==(\S+)", line) for line in path.read_text(encoding="utf-8").splitlines())
    return {m[1]: m[2] for m in found if m}


def test_the_requirements_file_is_what_the_lock_gives() -> None:
    assert requirements.OUTPUT.read_text(encoding="utf-8") == requirements.render(LOCK)
    assert requirements.main(["--check"]) == 0


def test_every_pin_is_the_locks_but_the_replaced_and_the_added_ones() -> None:
    installed = pins(requirements.OUTPUT)
    assert installed["torch"] == "2.13.0"
    assert {name: installed[name] for name in requirements.REPLACED} == {
        name: version for name, (version, _) in requirements.REPLACED.items()
    }
    assert {installed[name] for name in requirements.ADDED} == set(requirements.ADDED.values())
    assert not (installed.keys() & TORCH_FAMILY - {"torch"})
    kept = installed.keys() & LOCK.keys() - requirements.REPLACED.keys()
    assert all(LOCK[name].version == installed[name] for name in kept)
    assert installed.keys() - LOCK.keys() == set(requirements.ADDED)


def test_the_set_holds_vllms_runtime_requirements_and_is_closed_under_the_locks_via_lines() -> None:
    installed = set(pins(requirements.OUTPUT))
    assert {name for name, pin in LOCK.items() if requirements.RUNTIME in pin.via} - TORCH_FAMILY <= installed
    pulled_in = {name for name, pin in LOCK.items() if pin.via & installed} - set(requirements.LEFT_OUT)
    assert pulled_in <= installed
    assert all("-r requirements/test/cuda.in" in LOCK[tool].via for tool in requirements.TEST_TOOLS)


def test_a_pin_only_a_left_out_one_pulls_in_stays_out() -> None:
    lock = requirements.parse_lock(
        "aiohttp==1.0\n    # via -r requirements/test/../common.txt\n"
        "yarl==2.0\n    # via\n    #   aiohttp\n    #   ray\n"
        "xgrammar==3.0\n    # via -r requirements/test/../common.txt\n"
        "triton==4.0\n    # via xgrammar\n"
        "only-triton==5.0\n    # via triton\n"
        "ray==6.0\n    # via -r requirements/test/cuda.in\n"
    )
    assert lock["yarl"].via == {"aiohttp", "ray"}
    chosen = requirements.selected(lock)
    assert {"aiohttp", "yarl", "xgrammar"} <= chosen
    assert not chosen & {"triton", "only-triton", "ray"}


def test_the_pinned_sdist_hash_is_the_one_the_test_data_came_from() -> None:
    assert sources.SHA256 in (layout.DATA / "README.md").read_text(encoding="utf-8")


def sdist(path: Path, members: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, text in members.items():
            info = tarfile.TarInfo(f"vllm-0.33.0/{name}")
            info.size = len(text.encode())
            tf.addfile(info, io.BytesIO(text.encode()))
    return path


def test_only_tests_and_pyproject_are_taken_out_of_the_sdist(tmp_path: Path) -> None:
    members = {
        "tests/conftest.py": "",
        "tests/test_logger.py": "x",
        "pyproject.toml": "[tool.pytest.ini_options]\n",
        "vllm/__init__.py": "",
        "setup.py": "",
        "testsfoo/a.py": "",
    }
    tree = tmp_path / "vllm-0.33.0"
    sources.extract(sdist(tmp_path / "vllm-0.33.0.tar.gz", members), tree, "abc")
    taken = {p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file()}
    assert taken == {"tests/conftest.py", "tests/test_logger.py", "pyproject.toml", files.MARKER}
    assert sources.extracted(tree, "abc") and not sources.extracted(tree, "other")


def test_a_folder_not_extracted_here_is_never_replaced(tmp_path: Path) -> None:
    tree = tmp_path / "vllm-0.33.0"
    (tree / "mine").mkdir(parents=True)
    archive = sdist(tmp_path / "vllm-0.33.0.tar.gz", {"tests/conftest.py": ""})
    with pytest.raises(sources.FetchFailed, match="not extracted here"):
        sources.extract(archive, tree, "abc")
    assert (tree / "mine").is_dir() and not list(tmp_path.glob(".vllm-0.33.0.*"))


def test_an_extracted_folder_is_used_without_the_index(tmp_path: Path) -> None:
    tree = tmp_path / "vllm-0.33.0"
    tree.mkdir()
    files.mark(tree, sources.KIND, sha256=sources.SHA256)
    assert sources.fetch(tmp_path, base="http://127.0.0.1:9/nowhere/") == tree


PLAIN = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" time="2.5">
<testcase classname="tests.test_config" name="test_a" time="0.1"/>
<testcase classname="tests.test_config" name="test_b[x]" time="0.1"/>
<testcase classname="tests.test_config" name="test_c"><skipped type="pytest.skip" message="no GPU"/></testcase>
<testcase classname="tests.test_logger" name="test_d"><skipped type="pytest.xfail" message="known"/></testcase>
<testcase classname="tests.test_logger" name="test_gone"/>
</testsuite></testsuites>"""
STRICT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" time="3.0">
<testcase classname="tests.test_config" name="test_a" time="0.1"/>
<testcase classname="tests.test_config" name="test_b[x]"><failure message="x"/><error message="teardown boom&#10;more"/>
</testcase>
<testcase classname="tests.test_config" name="test_c"><skipped type="pytest.skip" message="no GPU"/></testcase>
<testcase classname="tests.test_logger" name="test_d"><skipped type="pytest.xfail" message="known"/></testcase>
<testcase classname="tests.test_logger" name="test_new"><failure message="warnonce strict: 1 argument(s) ...:&#10;
  compilation.py:1473: argument 2 is CUDAGraphMode&#10;Pass only str"/></testcase>
</testsuite></testsuites>"""


def runs(tmp_path: Path) -> tuple[compare.Run, compare.Run]:
    (tmp_path / "plain.xml").write_text(PLAIN, encoding="utf-8")
    (tmp_path / "strict.xml").write_text(STRICT, encoding="utf-8")
    return compare.read(tmp_path / "plain.xml"), compare.read(tmp_path / "strict.xml")


def test_junit_outcomes_are_read_per_test_worst_entry_first(tmp_path: Path) -> None:
    plain, strict = runs(tmp_path)
    assert plain.counts() == {"passed": 3, "skipped": 1, "xfailed": 1, "failed": 0, "error": 0}
    assert strict.results["tests.test_config::test_b[x]"] == compare.Result("error", "teardown boom")
    assert (plain.seconds, strict.seconds) == (2.5, 3.0)


def test_the_report_lists_every_test_whose_outcome_differs(tmp_path: Path) -> None:
    plain, strict = runs(tmp_path)
    assert [(key, a.outcome, b.outcome) for key, a, b in compare.differences(plain, strict)] == [
        ("tests.test_config::test_b[x]", "passed", "error"),
        ("tests.test_logger::test_gone", "passed", "absent"),
        ("tests.test_logger::test_new", "absent", "failed"),
    ]
    lines = compare.report(plain, strict)
    assert lines[1].split() == ["without", "strict", "3", "1", "1", "0", "0", "5", "2.5s"]
    assert lines[2].split() == ["with", "strict", "1", "1", "1", "1", "1", "5", "3.0s"]
    assert lines[3] == "3 test(s) differ (without strict -> with strict):"
    assert lines[4] == "  tests.test_config::test_b[x]: passed -> error  (teardown boom)"
    assert lines[6] == (
        "  tests.test_logger::test_new: absent -> failed"
        "  (warnonce strict: 1 argument(s) ...: compilation.py:1473: argument 2 is CUDAGraphMode)"
    )


def test_the_same_outcomes_say_so_and_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.xml").write_text(PLAIN, encoding="utf-8")
    assert compare.main([str(tmp_path / "a.xml"), str(tmp_path / "a.xml")]) == 0
    assert "every test has the same outcome" in capsys.readouterr().out
    (tmp_path / "b.xml").write_text(STRICT, encoding="utf-8")
    assert compare.main([str(tmp_path / "a.xml"), str(tmp_path / "b.xml")]) == 1
