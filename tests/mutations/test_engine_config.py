"""mutmut's settings for a run (`mutations.engine.config`), read back by mutmut itself as the settings we mean."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from warnonce_guard.guards.isolation import isolated
from warnonce_guard.mutations.engine import config, naming, seam

FILES = ["vllm/platforms/interface.py", "vllm/platforms/cpu.py"]


def test_mutmut_reads_the_written_settings_as_the_runs_files_guards_and_fixed_settings(tmp_path: Path) -> None:
    from mutmut import configuration
    from mutmut.configuration import ProcessIsolation

    config.write(tmp_path / "setup.cfg", [*FILES, FILES[0]], "guard_tests")

    with naming.settings(tmp_path):
        read = configuration.config()
        assert Path.cwd() == tmp_path
    assert Path.cwd() != tmp_path and configuration._config is None  # mutmut forgets them after the block
    assert read.source_paths == sorted(Path(f) for f in FILES)  # each file once
    assert [read.should_mutate(f) for f in (*FILES, "vllm/platforms/rocm.py")] == [True, True, False]
    assert Path("guard_tests/") in read.also_copy and read.pytest_add_cli_args_test_selection == ["guard_tests/"]
    assert read.process_isolation is ProcessIsolation.FORK  # vLLM imported once, one forked worker per mutant
    # and the guards' session reads no pytest settings or conftest.py of the folders around the workspace, and loads
    # none of pytest's plugins it never uses
    unused = [option for plugin in config.UNUSED for option in ("-p", f"no:{plugin}")]
    kept_out = ["-p", "no:cacheprovider", "-p", "no:unraisableexception", *unused]
    assert read.pytest_add_cli_args == [*kept_out, *isolated(".")]
    assert "no:capture" not in unused and "no:faulthandler" not in unused  # what a failing guard's diagnostics use
    assert "no:logging" in unused  # the guards read the records themselves (guards.observe)
    assert (read.timeout_multiplier, read.timeout_constant) == (15.0, 5.0)
    assert read.use_git_change_detection is False  # the workspace's fingerprint decides what is stale


def test_mutmut_forks_no_git_in_the_session_even_in_a_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A workspace inside a git checkout: mutmut's baseline of changes (taken before its stats) asks git nothing."""
    from mutmut.mutation.data import SourceFileMutationData

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    config.write(tmp_path / "setup.cfg", FILES, "guard_tests")
    ran: list[list[str]] = []
    real_run = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda args, *a, **k: ran.append(list(args)) or real_run(args, *a, **k))
    monkeypatch.setattr(SourceFileMutationData, "save", SourceFileMutationData.save)
    with naming.settings(tmp_path):
        import mutmut.__main__ as mutmut_main

        for name in ("Pool", "create_mutants", "git_head"):
            monkeypatch.setattr(mutmut_main, name, getattr(mutmut_main, name))
        seam.patched_main(mutmut_main.Pool, lambda create: create)
        mutmut_main._refresh_change_detection_baseline()
    assert ran == []
    assert mutmut_main.state().git_commit is None


def test_a_runs_settings_are_the_fixed_ones_then_its_files_and_guards() -> None:
    fixed = config.section()  # what the workspace's fingerprint covers
    assert fixed.startswith("[mutmut]\n") and "process_isolation = fork\n" in fixed
    assert "source_paths" not in fixed and "only_mutate" not in fixed
    run = config.section(FILES, "guard_tests")
    assert run.startswith(fixed) and "only_mutate = \n    vllm/platforms/cpu.py\n" in run


def test_the_settings_file_says_who_wrote_it_and_is_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "setup.cfg"
    path.write_text("[mutmut]\nsource_paths = an/earlier/run.py\n")
    config.write(path, FILES, "guard_tests")
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# Written by warnonce-guard for one mutation run") and "an/earlier" not in text
    assert [p.name for p in tmp_path.iterdir()] == ["setup.cfg"]  # no partial file left beside it


def test_a_timeout_loads_pytest_timeout_in_every_session_of_the_guards_or_of_a_suite(tmp_path: Path) -> None:
    from warnonce_guard.mutations.suite import Suite

    stop = ["-p", "timeout", "--timeout=2.5", "--timeout-method=signal"]  # its signal method fails the test
    assert config.timeout_args(None) == [] and config.timeout_args(2.5) == stop
    guards = config.section(FILES, "guard_tests", timeout=2.5)
    suite = config.section(FILES, "", Suite(tmp_path, ("tests",)), timeout=2.5)
    for written in (guards, suite):
        assert "".join(f"\n    {arg}" for arg in stop) in written
    assert "--timeout" not in config.section(FILES, "guard_tests")
