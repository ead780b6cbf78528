"""The command line in process (`cli.main`): what each command prints, and how every way of ending becomes one
line on stderr and one exit code of the table (`common.errors.ExitCode`). The same command line run as a user
runs it, in a subprocess, is tests/cli/test_cli.py (slow tier)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace

import pytest
from warnonce_guard.cli.main import GUARDS_DIR, ReaderMayLeave, _pytest_args, build_parser, main
from warnonce_guard.common.errors import EngineFailed, ExitCode
from warnonce_guard.guards.outcome import UNIMPORTED
from warnonce_guard.rule import platforms
from warnonce_guard.rule.platforms import RegisteredPlatform
from warnonce_guard.rule.target import source_tree

from tests.faults import hash_tree
from tests.toy import INTERFACE, make_tree

SITE_ID = "vllm/platforms/interface.py::Platform.import_kernels::vllm._C"
# a guarded import at module level only: run at import time, which no guard repeats: listed, nothing to guard
AT_IMPORT = (
    "import logging\nlogger = logging.getLogger(__name__)\n"
    "try:\n    import vllm._C\nexcept ImportError as e:\n    logger.warning('%r', e)\n"
)


def stderr_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


def test_sites_prints_a_table_of_the_sites_and_counts_them(toy_tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sites", "--vllm-src", str(toy_tree)]) == ExitCode.OK
    shown = capsys.readouterr().out
    assert "vLLM 9.9.9 (gtoy), source tree at" in shown and "Platform.import_kernels" in shown
    assert "1 guarded site(s): 1 eager, 0 live, 0 unknown; 0 without a recognised *_once call; 0 not guarded" in shown


def test_sites_lists_a_guarded_import_whose_call_is_not_recognised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hidden = "\n\nclass Hidden(Platform):\n    @classmethod\n    def import_kernels(cls) -> None:\n"
    hidden += "        try:\n            import vllm._C_AVX2\n        except ImportError as e:\n"
    hidden += "            getattr(logger, 'warning_once')('Failed: %r', e)\n"
    tree = make_tree(tmp_path / "tree", INTERFACE + hidden)
    assert main(["sites", "--vllm-src", str(tree), "--json"]) == ExitCode.OK
    rows = {s["qualname"]: s for s in json.loads(capsys.readouterr().out)["sites"]}
    assert (rows["Hidden.import_kernels"]["log_method"], rows["Hidden.import_kernels"]["form"]) == ("", "unknown")
    assert main(["sites", "--vllm-src", str(tree)]) == ExitCode.OK
    shown = capsys.readouterr().out
    assert "not recognised" in shown
    assert "2 guarded site(s): 1 eager, 0 live, 1 unknown; 1 without a recognised" in shown


def test_a_second_sites_write_of_one_record_meanwhile_is_refused(
    toy_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from warnonce_guard.rule import expected

    record = tmp_path / "sites.json"
    with expected.writing(record):
        assert main(["sites", "--vllm-src", str(toy_tree), "--write", str(record)]) == ExitCode.ENVIRONMENT
    (line,) = stderr_lines(capsys)
    assert line.endswith("another warnonce-guard run is writing it; wait for it to finish, then run again")
    assert not record.exists()


def test_sites_counts_a_site_that_passes_the_exception_itself_as_live(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = make_tree(tmp_path / "tree", INTERFACE.replace('%s", repr(e)', '%r", e'))
    assert main(["sites", "--vllm-src", str(tree)]) == ExitCode.OK
    assert "1 guarded site(s): 0 eager, 1 live, 0 unknown; 0 without a recognised" in capsys.readouterr().out


def test_sites_json_is_the_target_and_its_site_records(toy_tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sites", "--vllm-src", str(toy_tree), "--json"]) == ExitCode.OK
    shown = json.loads(capsys.readouterr().out)
    assert shown["target"] == f"vLLM 9.9.9 (gtoy), source tree at {toy_tree.resolve() / 'vllm'}"
    assert [(s["id"], s["cached"], s["form"]) for s in shown["sites"]] == [(SITE_ID, True, "eager")]


def test_sites_of_a_tree_without_a_cached_site_are_listed_then_fail_as_nothing_to_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = make_tree(tmp_path / "tree", AT_IMPORT)
    assert main(["sites", "--vllm-src", str(tree), "--json"]) == ExitCode.NOTHING_TO_CHECK
    captured = capsys.readouterr()
    assert [(s["qualname"], s["cached"]) for s in json.loads(captured.out)["sites"]] == [("<module>", False)]
    assert captured.err.startswith("warnonce-guard: error: no guarded kernel import (a try importing a kernel module")


def test_bad_input_is_one_line_naming_the_problem_and_its_own_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sites", "--vllm-src", str(tmp_path / "nope")]) == ExitCode.BAD_INPUT
    (line,) = stderr_lines(capsys)
    assert line.startswith("warnonce-guard: error: --vllm-src ") and "no such directory" in line


# --- a tree under a path that is not UTF-8 -----------------------------------------------------------------

TORCH_INTERFACE = "import torch  # noqa: F401\n" + INTERFACE  # as vLLM's imports it (never imported here)


@pytest.fixture
def non_utf8_tree(tmp_path: Path) -> Path:
    """A vLLM-shaped tree under `tree\\xff` (a name Linux allows and UTF-8 does not) whose interface imports torch."""
    return make_tree(Path(os.fsdecode(os.fsencode(tmp_path) + b"/tree\xff")), TORCH_INTERFACE)


@pytest.mark.parametrize("command", ["guards", "mutate"])
def test_a_torch_importing_tree_under_a_path_that_is_not_utf8_is_refused_up_front_as_shown(
    command: str, non_utf8_tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every site came out unreached (torch refuses the file names), after the whole run for `mutate`."""
    monkeypatch.setattr(pytest, "main", lambda *args, **kwargs: pytest.fail("pytest ran"))
    home = non_utf8_tree.parent
    before = hash_tree(home)
    out = ["--out", str(home / "report"), "--work-dir", str(home / "work")] if command == "mutate" else []

    assert main([command, "--vllm-src", str(non_utf8_tree), *out]) == ExitCode.BAD_INPUT

    shown = f"{home}/tree\\xff"
    assert stderr_lines(capsys) == [
        f"warnonce-guard: error: --vllm-src {shown}: its path is not UTF-8, and torch, which the target imports, "
        "refuses a module whose file name is not (every site would be unreached); rename the directory or copy the "
        "tree to a UTF-8 path"
    ]
    assert hash_tree(home) == before  # no report, no work directory


def test_sites_lists_a_tree_under_a_path_that_is_not_utf8_showing_the_byte_as_an_escape(
    non_utf8_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reading the tree needs no import: `sites` works, and printed the raw byte (`\\377`) where the reports
    show `\\xff`."""
    shown = f"source tree at {non_utf8_tree.parent}/tree\\xff/vllm"
    assert main(["sites", "--vllm-src", str(non_utf8_tree)]) == ExitCode.OK
    table = capsys.readouterr().out
    assert "".join(shown.split()) in "".join(table.split()) and "\udcff" not in table  # the title may wrap
    assert main(["sites", "--vllm-src", str(non_utf8_tree), "--json"]) == ExitCode.OK
    assert json.loads(capsys.readouterr().out)["target"] == f"vLLM 9.9.9 (gtoy), {shown}"


# --- the command line itself ------------------------------------------------------------------------------


def test_help_starts_with_what_the_tool_does(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    usage, description, *_ = capsys.readouterr().out.split("\n\n")
    assert stop.value.code == 0 and usage.startswith("usage: warnonce-guard [-h] [--version]")
    assert " ".join(description.split()) == metadata.metadata("warnonce-guard")["Summary"]  # setup.cfg's description
    assert description.startswith("Mutation-tested guards that keep vLLM's kernel-import warnings")


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out == f"warnonce-guard {metadata.version('warnonce-guard')}\n"


def test_an_unknown_option_is_a_usage_error_pointing_at_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["sites", "--bogus"])
    assert stop.value.code == ExitCode.USAGE
    assert stderr_lines(capsys) == [
        "warnonce-guard: error: unrecognized arguments: --bogus (see `warnonce-guard --help`)"
    ]


@pytest.mark.parametrize(
    ("option", "value", "why"),
    [
        ("--fail-under", "abc", "'abc' is not a number; give a percentage from 0 to 100"),
        ("--fail-under", "101", "101 is not a percentage from 0 to 100"),
        ("--fail-under", "-1", "-1 is not a percentage from 0 to 100"),
        ("--fail-under", "nan", "nan is not a percentage from 0 to 100"),
        ("--fail-under", "inf", "inf is not a percentage from 0 to 100"),
        ("--confirm", "0", "0 is not from 1 to 10: a kill is confirmed by one re-run at least, and 10 at most"),
        ("--confirm", "1000", "1000 is not from 1 to 10: a kill is confirmed by one re-run at least, and 10 at most"),
        ("--confirm", "two", "'two' is not a whole number; give 1 to 10"),
        ("--timeout", "0", "0 is not a number of seconds above 0"),
        ("--timeout", "-1", "-1 is not a number of seconds above 0"),
        ("--timeout", "inf", "inf is not a number of seconds above 0"),
        ("--timeout", "soon", "'soon' is not a number; give seconds above 0"),
    ],
)
def test_a_number_out_of_its_range_is_a_usage_error(
    option: str, value: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["mutate", option, value])
    assert stop.value.code == ExitCode.USAGE
    (line,) = stderr_lines(capsys)
    assert line.startswith("warnonce-guard: error: ") and why in line


@pytest.mark.parametrize(
    ("option", "value", "parsed"),
    [
        ("--fail-under", "0", 0.0),
        ("--fail-under", "99.5", 99.5),
        ("--fail-under", "100", 100.0),
        ("--confirm", "3", 3),
        ("--confirm", "10", 10),
        ("--timeout", "2.5", 2.5),
    ],
)
def test_a_number_in_its_range_is_taken(option: str, value: str, parsed: float) -> None:
    args = build_parser().parse_args(["mutate", option, value])
    assert getattr(args, option.removeprefix("--").replace("-", "_")) == parsed


def test_mutate_defaults_to_a_perfect_score_and_the_default_directories() -> None:
    args = build_parser().parse_args(["mutate"])
    assert (args.fail_under, args.out, args.work_dir, args.viewer_js) == (
        100.0, "mutation-report", ".warnonce-work", None
    )  # fmt: skip


def test_mutate_help_states_the_fail_under_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["mutate", "--help"])
    assert "--fail-under PERCENT minimum score, 0-100 (default: 100)" in " ".join(capsys.readouterr().out.split())


def valued_arguments() -> list[tuple[str, str]]:
    """(command, argument) for every argument of every command that takes a value: options and positionals."""
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return [
        (name, (action.option_strings or [action.metavar or action.dest])[0])
        for name, command in commands.choices.items()
        for action in command._actions
        if action.nargs != 0
    ]


VALUED = valued_arguments()


def test_every_command_has_arguments_that_take_a_value() -> None:
    """Not vacuous: the next test covers the options the issue names, and the audit's and history's."""
    assert {("sites", "--vllm-src"), ("guards", "--platform"), ("mutate", "--out"), ("history", "--from")} <= set(
        VALUED
    )
    assert ("audit", "PATH") in VALUED and ("audit", "--select") in VALUED and len(VALUED) >= 25


@pytest.mark.parametrize("blank", ["", "  "], ids=["empty", "blank"])
@pytest.mark.parametrize(("command", "argument"), VALUED, ids=[f"{c} {a}" for c, a in VALUED])
def test_an_empty_or_blank_value_is_a_usage_error_naming_the_argument_never_its_default(
    command: str, argument: str, blank: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--vllm-src "$UNSET"` in CI once checked the installed vLLM and exited 0: an unset variable turned the gate
    off. Every argument that takes a value refuses an empty one, before any work."""
    given = [blank] if argument == "PATH" else [argument, blank]
    with pytest.raises(SystemExit) as stop:
        main([command, *given])
    assert stop.value.code == ExitCode.USAGE
    (line,) = stderr_lines(capsys)
    label = "an empty value" if not blank else f"a blank value {blank!r}"
    assert line == (
        f"warnonce-guard: error: argument {argument}: {label} (is a variable unset?); give one, or leave the option "
        f"out (see `warnonce-guard {command} --help`)"
    )


def test_a_value_with_words_is_taken_as_given() -> None:
    args = build_parser().parse_args(["sites", "--vllm-src", " my tree ", "--platform", "p:P"])
    assert (args.vllm_src, args.platform) == (" my tree ", "p:P")
    assert build_parser().parse_args(["mutate", "--fail-under", "90"]).fail_under == 90.0  # converted after


def test_an_abbreviated_option_is_unrecognized_never_taken_for_a_longer_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--vllm` is nox's option; argparse's prefix matching took `sites --vllm 0.29.0` for `--vllm-src 0.29.0`."""
    with pytest.raises(SystemExit) as stop:
        main(["sites", "--vllm", "0.29.0"])
    assert stop.value.code == ExitCode.USAGE
    assert stderr_lines(capsys) == [
        "warnonce-guard: error: unrecognized arguments: --vllm 0.29.0 (see `warnonce-guard --help`)"
    ]


# --- guards: pytest in this process -----------------------------------------------------------------------


class FakePytest:
    """Stands in for `pytest.main`: records what it was given (and the sites file it was handed) and returns `code`,
    after the session's end reached the plugins it was given with `unimported` in the session's stash."""

    def __init__(self, code: int | pytest.ExitCode = 0, unimported: list[str] | None = None) -> None:
        self.code = code
        self.unimported = unimported
        self.args: list[str] = []
        self.sites: list[dict[str, object]] = []

    def __call__(self, args: list[str], plugins: Sequence[object] = ()) -> int | pytest.ExitCode:
        self.args = list(args)
        (sites_file,) = [arg.removeprefix("--sites-file=") for arg in args if arg.startswith("--sites-file=")]
        self.sites = json.loads(Path(sites_file).read_text(encoding="utf-8"))
        stash = {UNIMPORTED: self.unimported} if self.unimported is not None else {}
        for plugin in plugins:
            plugin.pytest_sessionfinish(session=SimpleNamespace(config=SimpleNamespace(stash=stash)))
        return self.code


def test_guards_hand_pytest_the_discovered_sites_the_tree_and_every_option_they_do_not_know(
    toy_tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakePytest()
    monkeypatch.setattr(pytest, "main", fake)

    assert main(["guards", "-q", "-k", "cpu", "--vllm-src", str(toy_tree)]) == ExitCode.OK

    assert [site["id"] for site in fake.sites] == [SITE_ID]
    assert fake.args[0] == str(GUARDS_DIR) and "--import-mode=importlib" in fake.args
    at = fake.args.index("-q")
    assert fake.args[at : at + 3] == ["-q", "-k", "cpu"]
    assert fake.args[-1] == f"--vllm-src={toy_tree.resolve()}"
    assert capsys.readouterr().out.startswith("guarding vLLM 9.9.9 (gtoy)")


def test_guards_name_a_tree_whose_path_is_not_utf8_with_the_byte_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The header printed the raw byte, where every other line and report shows it as \\xff."""
    tree = make_tree(Path(os.fsdecode(bytes(tmp_path) + b"/tree\xff")))
    monkeypatch.setattr(pytest, "main", FakePytest())

    assert main(["guards", "-q", "--vllm-src", str(tree)]) == ExitCode.OK

    assert capsys.readouterr().out.startswith(f"guarding vLLM 9.9.9 (gtoy), source tree at {tmp_path}/tree\\xff")


def test_guards_give_pytest_no_path_but_the_guards_and_no_settings_or_conftest_around_them(
    toy_tree: Path, tmp_path: Path
) -> None:
    argv = ["guards", "-q", "--vllm-src", str(toy_tree), "--platform", "vllm.platforms.interface:Platform"]
    args, args.pytest_args = build_parser().parse_known_args(argv)
    given = _pytest_args(args, source_tree(toy_tree), tmp_path / "sites.json")

    # pytest reads its command line before it knows the guards' options: a value of its own word is a path to it
    ours = [arg for arg in given if arg.startswith(("--vllm-src", "--sites-file", "--platform"))]
    assert ours == [
        f"--sites-file={tmp_path / 'sites.json'}",
        f"--vllm-src={toy_tree.resolve()}",
        "--platform=vllm.platforms.interface:Platform",
    ]
    at = given.index("-c")
    assert given[at + 1] == os.devnull  # no pytest.ini, pyproject.toml, setup.cfg or tox.ini is read
    del given[at : at + 2]
    assert [arg for arg in given if not arg.startswith("-") and Path(arg).exists()] == [str(GUARDS_DIR)]
    assert {f"--rootdir={GUARDS_DIR}", f"--confcutdir={GUARDS_DIR}", "-q"} <= set(given)


def test_guards_whose_platform_module_did_not_import_exit_7_with_one_line_naming_it(
    toy_tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    failed = ["importing vllm.platforms.cpu failed: no module named 'numa'; install it"] * 2
    monkeypatch.setattr(pytest, "main", FakePytest(pytest.ExitCode.TESTS_FAILED, failed))

    assert main(["guards", "--vllm-src", str(toy_tree)]) == ExitCode.ENVIRONMENT
    assert stderr_lines(capsys) == [f"warnonce-guard: error: {failed[0]} (2 guards could not run)"]

    # Not vacuous: a failed run whose guards all imported their platform module is a failed check.
    monkeypatch.setattr(pytest, "main", FakePytest(pytest.ExitCode.TESTS_FAILED, []))
    assert main(["guards", "--vllm-src", str(toy_tree)]) == ExitCode.CHECK_FAILED


@pytest.mark.parametrize(
    ("pytest_code", "ours"),
    [
        (0, ExitCode.OK),
        (1, ExitCode.CHECK_FAILED),
        (2, ExitCode.INTERNAL_ERROR),  # without a signal of ours: the guards failed to collect
        (3, ExitCode.INTERNAL_ERROR),
        (4, ExitCode.USAGE),
        (5, ExitCode.NOTHING_TO_CHECK),
        (99, ExitCode.INTERNAL_ERROR),
    ],
)
def test_guards_exit_with_pytests_status_as_a_row_of_our_table(
    toy_tree: Path, monkeypatch: pytest.MonkeyPatch, pytest_code: int, ours: ExitCode
) -> None:
    monkeypatch.setattr(pytest, "main", FakePytest(pytest_code))
    assert main(["guards", "--vllm-src", str(toy_tree)]) == ours


def test_guards_that_fail_to_collect_are_our_bug_in_one_line_never_an_interrupt(
    toy_tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """pytest says "interrupted" (2) for errors during collection too; no signal came, so it is not 130."""
    monkeypatch.setattr(pytest, "main", FakePytest(pytest.ExitCode.INTERRUPTED))
    assert main(["guards", "--vllm-src", str(toy_tree)]) == ExitCode.INTERNAL_ERROR
    lines = stderr_lines(capsys)
    assert "RuntimeError: the guards' pytest session ended with status 2" in "\n".join(lines)
    assert lines[-1].startswith("warnonce-guard: internal error:")


def test_guards_on_a_tree_without_a_cached_site_stop_before_pytest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pytest, "main", lambda args: pytest.fail("pytest ran"))
    assert main(["guards", "--vllm-src", str(make_tree(tmp_path / "tree", AT_IMPORT))]) == ExitCode.NOTHING_TO_CHECK


def test_guards_stopped_by_sigterm_exit_143_not_pytests_interrupted(
    toy_tree: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def terminated_pytest(args: list[str], plugins: Sequence[object] = ()) -> pytest.ExitCode:
        try:  # pytest turns the KeyboardInterrupt our handler raises into its own "interrupted"
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except KeyboardInterrupt:
            return pytest.ExitCode.INTERRUPTED
        pytest.fail("SIGTERM did not interrupt")

    monkeypatch.setattr(pytest, "main", terminated_pytest)
    assert main(["guards", "--vllm-src", str(toy_tree)]) == ExitCode.TERMINATED
    assert stderr_lines(capsys) == ["warnonce-guard: terminated"]


# --- platforms --------------------------------------------------------------------------------------------


def test_platforms_lists_each_registered_plugin_with_its_class_or_why_it_is_not_available(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    found = [
        RegisteredPlatform("broken", "broken_plugin:register", None, "ImportError: no module named torch_npu"),
        RegisteredPlatform("npu", "npu_plugin:register", "npu_plugin.platform.NPUPlatform"),
    ]
    monkeypatch.setattr(platforms, "registered_platforms", lambda: found)

    assert main(["platforms"]) == ExitCode.OK

    shown = capsys.readouterr().out
    assert "npu_plugin.platform.NPUPlatform" in shown and "ImportError: no module named torch_npu" in shown
    assert "2 registered platform plugin(s)" in shown


# --- how a command ends -----------------------------------------------------------------------------------


def test_a_command_that_needs_the_mutation_extra_names_it_and_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "rich.table", None)  # as if rich were not installed
    assert main(["platforms"]) == ExitCode.ENVIRONMENT
    assert stderr_lines(capsys) == [
        "warnonce-guard: error: `warnonce-guard platforms` needs rich, part of the mutation extra: "
        "pip install 'rich>=13.4' (or, in a checkout of warnonce-guard, pip install '.[mutation]')"
    ]


def failing_command(error: BaseException) -> Callable[[object], int]:
    """A command (as the parser calls one) that raises `error`."""

    def command(args: object) -> int:
        raise error

    return command


def test_a_missing_module_outside_the_extra_is_a_bug_with_its_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        "warnonce_guard.cli.main.cmd_platforms", failing_command(ModuleNotFoundError("no numpy", name="numpy"))
    )
    assert main(["platforms"]) == ExitCode.INTERNAL_ERROR
    assert "ModuleNotFoundError: no numpy" in capsys.readouterr().err


def test_a_bug_of_ours_keeps_its_traceback_and_exits_70(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("warnonce_guard.cli.main.cmd_platforms", failing_command(RuntimeError("an invariant broke")))
    assert main(["platforms"]) == ExitCode.INTERNAL_ERROR
    said = stderr_lines(capsys)
    assert said[0] == "Traceback (most recent call last):" and "RuntimeError: an invariant broke" in said
    assert said[-1].startswith("warnonce-guard: internal error: the traceback above is a bug in warnonce-guard")


@pytest.mark.parametrize("code", [0, 1, "boom", None])
def test_a_system_exit_through_a_command_is_a_bug_with_its_traceback_never_its_own_code(
    code: object, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Code a command runs that ends it where no guard of ours stood: `SystemExit(0)` was exit 0 with nothing said."""
    monkeypatch.setattr("warnonce_guard.cli.main.cmd_platforms", failing_command(SystemExit(code)))
    assert main(["platforms"]) == ExitCode.INTERNAL_ERROR
    said = stderr_lines(capsys)
    assert said[0] == "Traceback (most recent call last):" and said[-2].startswith("SystemExit")
    assert said[-1].startswith("warnonce-guard: internal error: the traceback above is a bug in warnonce-guard")


@pytest.mark.parametrize(
    ("sig", "code", "line"),
    [
        (signal.SIGINT, ExitCode.INTERRUPTED, "warnonce-guard: interrupted"),
        (signal.SIGTERM, ExitCode.TERMINATED, "warnonce-guard: terminated"),
    ],
)
def test_a_signal_during_a_command_is_one_line_and_its_exit_code_and_the_handlers_are_put_back(
    sig: signal.Signals, code: ExitCode, line: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def signalled(args: object) -> int:
        os.kill(os.getpid(), sig)
        time.sleep(5)
        return pytest.fail("the signal did not stop the command")

    def callers_handler(signum: int, frame: object) -> None:
        pytest.fail("the caller's handler ran")

    previous = signal.signal(sig, callers_handler)
    try:
        monkeypatch.setattr("warnonce_guard.cli.main.cmd_platforms", signalled)

        assert main(["platforms"]) == code
        assert stderr_lines(capsys) == [line]
        assert signal.getsignal(sig) is callers_handler
    finally:
        signal.signal(sig, previous)


CODES = {signal.SIGINT: ExitCode.INTERRUPTED, signal.SIGTERM: ExitCode.TERMINATED}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_whose_interrupt_python_swallows_in_a_callback_is_delivered_again_and_stops_the_command(
    sig: signal.Signals, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class Held:
        pass

    def callback(ref: object) -> None:  # as the import system's module locks have: what it raises is swallowed
        signal.raise_signal(sig)  # the handler runs here, on the callback's next instructions
        sum(range(1000))

    def command(args: object) -> int:
        held = Held()
        kept = weakref.ref(held, callback)
        del held
        time.sleep(5)
        return pytest.fail(f"the signal did not stop the command ({kept})")

    monkeypatch.setattr("warnonce_guard.cli.main.cmd_platforms", command)
    started = time.monotonic()
    assert main(["platforms"]) == CODES[sig]
    assert time.monotonic() - started < 4
    assert stderr_lines(capsys) == [f"warnonce-guard: {CODES[sig].name.lower()}"]  # no "Exception ignored in"


def test_a_second_signal_before_the_swallowed_first_is_delivered_again_still_ends_with_the_firsts_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGTERM's interrupt swallowed in a callback, then Ctrl-C before the process sends SIGTERM again: 143."""

    class Held:
        pass

    def callback(ref: object) -> None:
        signal.raise_signal(signal.SIGTERM)
        sum(range(1000))

    def command(args: object) -> int:
        held = Held()
        kept = weakref.ref(held, callback)
        del held  # the callback ran: SIGTERM's interrupt was swallowed, its second sending not yet arrived
        signal.raise_signal(signal.SIGINT)
        time.sleep(5)
        return pytest.fail(f"the signals did not stop the command ({kept})")

    monkeypatch.setattr("warnonce_guard.cli.main.cmd_platforms", command)
    assert main(["platforms"]) == ExitCode.TERMINATED
    assert stderr_lines(capsys) == ["warnonce-guard: terminated"]


def test_a_sending_again_handled_while_the_swallowed_interrupt_is_raised_raises_it_never_ends_the_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`exiting`: the first signal's interrupt was swallowed and is being raised again when the next sending is
    handled inside its construction (Python code): that one raises it too; none reads as a later signal."""
    from warnonce_guard.cli import main as cli_main

    stops = cli_main.Stops(exiting=True)
    stops.first, stops.undelivered = ExitCode.TERMINATED, True
    exits: list[int] = []
    monkeypatch.setattr(os, "_exit", exits.append)
    made = cli_main.Interrupted

    sending = [signal.SIGTERM]

    class HandledWhileMade(made):  # type: ignore[misc, valid-type]
        def __init__(self, code: ExitCode) -> None:
            if sending:
                stops.handle(sending.pop(), None)
            super().__init__(code)

    monkeypatch.setattr(cli_main, "Interrupted", HandledWhileMade)
    with pytest.raises(made) as raised:
        stops.handle(signal.SIGTERM, None)
    assert raised.value.exit_code == ExitCode.TERMINATED and exits == [] and not stops.undelivered


def signalled_then(sig: signal.Signals, then: Callable[[BaseException], object]) -> Callable[[object], int]:
    """A command stopped by `sig`, whose cleanup then does `then` with the interrupt (raises, or signals again)."""

    def command(args: object) -> int:
        try:
            os.kill(os.getpid(), sig)
            time.sleep(5)
        except KeyboardInterrupt as stop:
            then(stop)
            return int(ExitCode.OK)  # `then` swallowed it: the command ends as if nothing happened
        return pytest.fail("the signal did not stop the command")

    return command


def raise_key_error(stop: BaseException) -> None:
    raise KeyError("a position libcst never recorded") from stop


def raise_engine_failed(stop: BaseException) -> None:
    raise EngineFailed("the mutmut session failed (exit code -2)")  # it got the terminal's Ctrl-C too


def swallow(stop: BaseException) -> None:  # as pytest does, or a pool that breaks
    pass


@pytest.mark.parametrize("then", [raise_key_error, raise_engine_failed, swallow], ids=lambda f: f.__name__)
@pytest.mark.parametrize(("sig", "code"), CODES.items())
def test_once_a_signal_reached_a_command_its_code_is_the_exit_whatever_surfaces_after_it(
    sig: signal.Signals,
    code: ExitCode,
    then: Callable[[BaseException], object],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """libcst turned a Ctrl-C into a KeyError: exit 70 with megabytes of traceback."""
    monkeypatch.setattr("warnonce_guard.cli.main.cmd_platforms", signalled_then(sig, then))
    assert main(["platforms"]) == code
    assert stderr_lines(capsys) == [f"warnonce-guard: {code.name.lower()}"]


@pytest.mark.parametrize(
    "order",
    [(signal.SIGINT, signal.SIGINT), (signal.SIGTERM, signal.SIGINT), (signal.SIGINT, signal.SIGTERM)],
    ids=lambda o: "-".join(s.name for s in o),
)
def test_a_later_signal_does_not_raise_into_the_cleanup_the_first_one_started(
    order: tuple[signal.Signals, signal.Signals], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second Ctrl-C raised a second interrupt into the cleanup (exit 1 and a traceback, or -2), and TERM then
    INT said 130: the first signal decides."""
    first, second = order
    cleaned = []

    def again(stop: BaseException) -> None:
        os.kill(os.getpid(), second)
        time.sleep(0.05)  # the handler runs here
        cleaned.append("the cleanup ran to its end")
        raise stop

    monkeypatch.setattr("warnonce_guard.cli.main.cmd_platforms", signalled_then(first, again))
    code = CODES[first]
    assert main(["platforms"]) == code
    assert cleaned == ["the cleanup ran to its end"]
    assert stderr_lines(capsys) == [f"warnonce-guard: {code.name.lower()}"]


@pytest.mark.parametrize(
    "order",
    [(signal.SIGTERM, signal.SIGINT), (signal.SIGINT, signal.SIGTERM)],
    ids=lambda o: "-".join(s.name for s in o),
)
def test_the_first_of_two_signals_that_land_during_one_long_c_call_decides(
    order: tuple[signal.Signals, signal.Signals], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Python runs the handlers of signals pending together lowest number first: SIGTERM then Ctrl-C while the
    run wrote a 200 MB report in one call was 130."""
    in_the_call = threading.Event()

    def send_both() -> None:
        in_the_call.wait()
        for sig in order:
            time.sleep(0.02)
            os.kill(os.getpid(), sig)

    def long_c_call(args: object) -> int:
        sender = threading.Thread(target=send_both)
        sender.start()
        data = bytes(400_000_000)
        in_the_call.set()
        hashlib.sha256(data)  # one C call (no handler runs in it): both signals arrive meanwhile
        sender.join()
        time.sleep(5)
        return pytest.fail("the signals did not stop the command")

    monkeypatch.setattr("warnonce_guard.cli.main.cmd_platforms", long_c_call)
    code = CODES[order[0]]
    assert main(["platforms"]) == code
    assert stderr_lines(capsys) == [f"warnonce-guard: {code.name.lower()}"]


@pytest.mark.parametrize(
    "order",
    [(signal.SIGINT, signal.SIGINT), (signal.SIGTERM, signal.SIGINT), (signal.SIGINT, signal.SIGTERM)],
    ids=lambda o: "-".join(s.name for s in o),
)
def test_a_process_ends_at_once_with_the_first_code_and_one_line_on_a_later_signal_during_cleanup(
    order: tuple[signal.Signals, signal.Signals], monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    first, second = order
    exits: list[int] = []

    def again(stop: BaseException) -> None:
        os.kill(os.getpid(), second)
        time.sleep(0.05)
        raise stop

    previous = {sig: signal.getsignal(sig) for sig in CODES}
    try:
        monkeypatch.setattr(os, "_exit", exits.append)  # the process would end here
        monkeypatch.setattr("warnonce_guard.cli.main.cmd_platforms", signalled_then(first, again))
        code = CODES[first]
        assert main(["platforms"], exiting=True) == code
        assert exits == [code]
        assert capfd.readouterr().err.splitlines() == [f"warnonce-guard: {code.name.lower()}"]
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def test_a_keyboard_interrupt_from_anywhere_is_an_interrupt_not_a_bug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("warnonce_guard.cli.main.cmd_platforms", failing_command(KeyboardInterrupt()))
    assert main(["platforms"]) == ExitCode.INTERRUPTED
    assert stderr_lines(capsys) == ["warnonce-guard: interrupted"]


def test_output_to_a_pipe_whose_reader_left_goes_to_devnull_without_an_error() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "w") as stream:
        out = ReaderMayLeave(stream)
        assert out.write("a line\n") == len("a line\n")  # still in the buffer
        assert not os.path.samestat(os.fstat(write_end), os.stat(os.devnull))
        out.flush()  # EPIPE: the reader has left
        assert os.path.samestat(os.fstat(write_end), os.stat(os.devnull))  # what follows is discarded
        out.write("x" * 100_000)
        out.flush()


def test_a_process_stopped_by_a_signal_exits_at_once_with_its_code_on_a_second_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(args: object) -> int:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
        return pytest.fail("the signal did not stop the command")

    def exit_now(code: int) -> None:
        raise SystemExit(code)

    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        monkeypatch.setattr("warnonce_guard.cli.main.cmd_platforms", interrupted)
        assert main(["platforms"], exiting=True) == ExitCode.INTERRUPTED
        assert stderr_lines(capsys) == ["warnonce-guard: interrupted"]
        # Ctrl-C pressed again, or SIGTERM, while the process ends: it exits now, still 130 (not -2, not a hang)
        monkeypatch.setattr(os, "_exit", exit_now)
        for sig in previous:
            handler = signal.getsignal(sig)
            assert callable(handler) and handler not in previous.values()
            with pytest.raises(SystemExit) as exited:
                handler(sig, None)
            assert exited.value.code == ExitCode.INTERRUPTED
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def test_a_process_that_ran_to_its_end_keeps_its_signal_handlers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("warnonce_guard.cli.main.cmd_platforms", lambda args: ExitCode.OK)
    before = signal.getsignal(signal.SIGINT)
    assert main(["platforms"], exiting=True) == ExitCode.OK
    assert signal.getsignal(signal.SIGINT) is before  # only a stopped process stops listening


# --- the sites a target must have: sites --write, --expect-sites ------------------------------------------


def test_sites_write_records_them_and_expect_sites_passes_on_the_same_tree(
    toy_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = tmp_path / "expected.json"
    assert main(["sites", "--vllm-src", str(toy_tree), "--write", str(record)]) == ExitCode.OK
    assert f"{record}: 1 site(s) recorded" in capsys.readouterr().out
    assert [row["id"] for row in json.loads(record.read_text(encoding="utf-8"))["sites"]] == [SITE_ID]

    assert main(["sites", "--vllm-src", str(toy_tree), "--expect-sites", str(record)]) == ExitCode.OK


@pytest.mark.parametrize("command", ["sites", "guards"])
@pytest.mark.parametrize("left", ["another site", "no site"])
def test_a_site_gone_from_the_tree_fails_expect_sites_naming_it(
    command: str, left: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    record = tmp_path / "expected.json"
    before = make_tree(tmp_path / "before")
    (before / "vllm" / "platforms" / "second.py").write_text(INTERFACE, encoding="utf-8")
    assert main(["sites", "--vllm-src", str(before), "--write", str(record)]) == ExitCode.OK
    # interface.py's handler catches something else now: its site, and its guard, are gone
    after = make_tree(tmp_path / "after", INTERFACE.replace("except ImportError as e:", "except ValueError as e:"))
    if left == "another site":
        (after / "vllm" / "platforms" / "second.py").write_text(INTERFACE, encoding="utf-8")
    monkeypatch.setattr(pytest, "main", FakePytest())
    capsys.readouterr()

    assert main([command, "--vllm-src", str(after), "--expect-sites", str(record)]) == ExitCode.CHECK_FAILED

    said = stderr_lines(capsys)[-1]
    gone = 1 if left == "another site" else 2  # second.py's too
    assert said.startswith(f"warnonce-guard: error: {gone} expected site(s) of {record} not found, so not guarded: ")
    assert f"{SITE_ID} (line " in said


def test_mutate_with_every_recorded_site_gone_fails_naming_them_not_nothing_to_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As `sites` and `guards` do: a record's sites all gone is the verdict (exit 1 naming them), where `mutate` said
    only "no kernel-import site logs through a *_once call" (exit 5)."""
    record = tmp_path / "expected.json"
    assert main(["sites", "--vllm-src", str(make_tree(tmp_path / "before")), "--write", str(record)]) == ExitCode.OK
    after = make_tree(tmp_path / "after", INTERFACE.replace("except ImportError as e:", "except ValueError as e:"))
    capsys.readouterr()
    argv = ["--vllm-src", str(after), "--out", str(tmp_path / "out"), "--work-dir", str(tmp_path / "work")]

    assert main(["mutate", *argv, "--expect-sites", str(record)]) == ExitCode.CHECK_FAILED

    said = stderr_lines(capsys)[-1]
    assert said.startswith(f"warnonce-guard: error: 1 expected site(s) of {record} not found, so not guarded: ")
    assert f"{SITE_ID} (line " in said
    assert main(["mutate", *argv]) == ExitCode.NOTHING_TO_CHECK  # without a record: nothing to check, as before


def test_a_new_site_is_noted_on_stderr_and_guarded_all_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    record = tmp_path / "expected.json"
    assert main(["sites", "--vllm-src", str(make_tree(tmp_path / "before")), "--write", str(record)]) == ExitCode.OK
    tree = make_tree(tmp_path / "after", INTERFACE)
    (tree / "vllm" / "platforms" / "second.py").write_text(INTERFACE, encoding="utf-8")
    fake = FakePytest()
    monkeypatch.setattr(pytest, "main", fake)
    capsys.readouterr()

    assert main(["guards", "--vllm-src", str(tree), "--expect-sites", str(record)]) == ExitCode.OK

    assert len(fake.sites) == 2
    (note,) = [line for line in stderr_lines(capsys) if line.startswith("warnonce-guard: note:")]
    assert "1 site(s) found that it does not record: vllm/platforms/second.py::Platform.import_kernels" in note


@pytest.mark.parametrize(
    "argv",
    [
        ["sites", "--write", "a.json", "--expect-sites", "b.json"],
        ["sites", "--write", ""],
        ["guards", "--expect-sites", " "],
    ],
    ids=["write-and-expect", "empty-write", "blank-expect"],
)
def test_write_and_expect_sites_refuse_each_other_and_an_empty_value(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(argv)
    except SystemExit as parser_said:  # the parser's refusal of an empty value ends the process as a command line's
        code = parser_said.code
    assert code == ExitCode.USAGE
    assert len(stderr_lines(capsys)) == 1


def test_the_console_prints_a_path_holding_an_emoji_code_as_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    """`--out /tmp/:thumbs_up:` was said as `report: /tmp/👍`: rich replaced emoji codes in every line."""
    from warnonce_guard.cli.console import console
    from warnonce_guard.common.console import print_line

    print_line(console(), "report: /tmp/:thumbs_up:")
    assert capsys.readouterr().out == "report: /tmp/:thumbs_up:\n"
