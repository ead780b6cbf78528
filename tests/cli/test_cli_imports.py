"""Code the command line imports that is not ours: a `--platform` module, a `vllm.platform_plugins` entry point's
`register()`, the target itself. Whatever it does to end the process while it is imported (`SystemExit` with any
code, `os._exit`, a `KeyboardInterrupt` it raises itself) is one line naming it and exit 4, never the exit 0 of a
run that checked nothing; a real Ctrl-C or SIGTERM meanwhile stays the interrupt it is. A class that is not a
platform, and a `--platform` that is no module:Class, are one line and exit 3. Every user file is as it was after
each.

In process (`cli.main`); the same through a real process, and `os._exit` in the mutmut session, are
tests/e2e/test_faults_imports.py (slow tier).
"""

from __future__ import annotations

import os
import signal
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from warnonce_guard.cli.main import main
from warnonce_guard.common.errors import ExitCode, PlatformImportFailed, PlatformNotFound
from warnonce_guard.rule.platforms import must_not_exit

from tests.faults import hash_tree
from tests.toy import make_tree, purge, unique_package

# What a module may do to end the process when imported, and how the line names it.
ENDINGS = {
    "exit-0": ("raise SystemExit(0)", "SystemExit(0)"),
    "exit-string": ("raise SystemExit('boom')", "SystemExit('boom')"),
    "exit-3": ("raise SystemExit(3)", "SystemExit(3)"),
    "exit-none": ("raise SystemExit", "SystemExit(None)"),
    "keyboard-interrupt": ("raise KeyboardInterrupt", "KeyboardInterrupt"),
    "os-exit": ("__import__('os')._exit(0)", "os._exit(0)"),  # ended the process at once, exit 0 and no word
}


@dataclass
class Area:
    """The user's files: a toy vLLM tree and a folder of plugins on sys.path, each plugin a symlink to its file."""

    home: Path
    tree: Path
    plugins: Path
    modules: list[str] = field(default_factory=list)  # the plugins made, forgotten after the test

    def plugin(self, source: str, name: str | None = None) -> str:
        """A plugin module of `source` (a symlink to the file, as an editable install has it); its name."""
        name = name or unique_package()
        real = self.home / "sources" / f"{name}.py"
        real.parent.mkdir(exist_ok=True)
        real.write_text(textwrap.dedent(source), encoding="utf-8")
        (self.plugins / f"{name}.py").symlink_to(real)
        self.modules.append(name)
        return name


@pytest.fixture
def area(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Area]:
    home = tmp_path / "home"
    made = Area(home, make_tree(home / "tree"), home / "plugins")
    made.plugins.mkdir()
    monkeypatch.syspath_prepend(str(made.plugins))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # Python's own cache beside a module is not our write
    yield made
    for module in made.modules:
        purge(module)
    purge("vllm")


def run(area: Area, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[str]]:
    """`cli.main(argv)`: its exit code, stdout and stderr's lines; the user's files and sys.path as they were,
    asserted."""
    before, path = hash_tree(area.home), list(sys.path)
    code = main(argv)
    captured = capsys.readouterr()
    assert hash_tree(area.home) == before  # nothing created, changed or removed; the symlink still one
    assert sys.path == path  # the tree it put first is gone: a later `import vllm` here finds what it found before
    return code, captured.out, captured.err.strip().splitlines()


def target_options(command: str, area: Area) -> list[str]:
    out = ["--out", str(area.home / "report"), "--work-dir", str(area.home / "work")] if command == "mutate" else []
    return [command, "--vllm-src", str(area.tree), *out]


@pytest.mark.parametrize("command", ["sites", "guards", "mutate"])
@pytest.mark.parametrize("ending", ENDINGS)
def test_a_platform_module_that_would_end_the_process_on_import_is_one_line_naming_it_and_exit_4(
    command: str, ending: str, area: Area, capsys: pytest.CaptureFixture[str]
) -> None:
    """`SystemExit(0)` made all three exit 0 with no output and no report; `SystemExit('boom')` exited 1 with a bare
    `boom`; a KeyboardInterrupt was 130, as if the user had pressed Ctrl-C."""
    statement, raised = ENDINGS[ending]
    module = area.plugin(statement)

    code, _, lines = run(area, [*target_options(command, area), "--platform", f"{module}:P"], capsys)

    assert code == PlatformImportFailed.exit_code == ExitCode.ENVIRONMENT
    assert lines == [
        f"warnonce-guard: error: --platform {module}:P: importing {module} would end the process ({raised} at "
        f"{area.plugins / module}.py:1); a platform module must not exit when imported"
    ]
    assert not (area.home / "report").exists() and not (area.home / "work").exists()


def test_the_target_that_would_end_the_process_when_its_platform_is_imported_is_named_where_it_exits(
    area: Area, capsys: pytest.CaptureFixture[str]
) -> None:
    (area.tree / "vllm" / "__init__.py").write_text("raise SystemExit(0)\n")

    code, _, lines = run(area, [*target_options("sites", area), "--platform", "vllm.platforms.interface:P"], capsys)

    assert code == ExitCode.ENVIRONMENT
    assert lines == [
        "warnonce-guard: error: --platform vllm.platforms.interface:P: importing vllm.platforms.interface would end "
        f"the process (SystemExit(0) at {area.tree / 'vllm' / '__init__.py'}:1); a platform module must not exit "
        "when imported"
    ]


def plugin_entry_point(area: Area, register: str) -> str:
    """An installed distribution (a dist-info on sys.path) whose `vllm.platform_plugins` entry point is a module's
    `register()` with the body `register`; the module's name."""
    module = area.plugin(f"def register():\n    {register}\n")
    dist = area.plugins / f"{module}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[vllm.platform_plugins]\n{module} = {module}:register\n")
    return module


@pytest.mark.parametrize("ending", ENDINGS)
def test_a_plugin_whose_register_would_end_the_process_is_listed_then_one_line_and_exit_4(
    ending: str, area: Area, capsys: pytest.CaptureFixture[str]
) -> None:
    statement, raised = ENDINGS[ending]
    module = plugin_entry_point(area, statement)

    code, out, lines = run(area, ["platforms"], capsys)

    why = (
        f"loading {module}:register would end the process ({raised} at {area.plugins / module}.py:2); a plugin must "
        "not exit while vLLM loads it"
    )
    assert code == ExitCode.ENVIRONMENT
    assert lines == [f"warnonce-guard: error: platform plugin {module}: {why}"]
    assert module in out and "registered platform plugin(s)" in out  # the table was printed first


@pytest.mark.parametrize("command", ["guards", "mutate"])
@pytest.mark.parametrize("ending", ["exit-0", "keyboard-interrupt", "os-exit"])
def test_a_plugin_whose_register_would_end_the_process_stops_the_guards_and_the_mutation_run_up_front(
    command: str, ending: str, area: Area, capsys: pytest.CaptureFixture[str]
) -> None:
    """vLLM calls every plugin's `register()` when a guard first logs: `guards` ended with 6 tracebacks and exit 1
    (SystemExit), exit 70 and a traceback (KeyboardInterrupt) or a silent 0 (os._exit); `mutate` said only that each
    site was unreached. Both load the plugins first now, as `platforms` does."""
    statement, raised = ENDINGS[ending]
    module = plugin_entry_point(area, statement)

    code, _, lines = run(area, target_options(command, area), capsys)

    assert code == ExitCode.ENVIRONMENT
    assert lines == [
        f"warnonce-guard: error: platform plugin {module}: loading {module}:register would end the process "
        f"({raised} at {area.plugins / module}.py:2); a plugin must not exit while vLLM loads it"
    ]
    assert not (area.home / "report").exists() and not (area.home / "work").exists()


def test_a_plugin_whose_register_returns_no_class_path_is_listed_as_not_usable(
    area: Area, capsys: pytest.CaptureFixture[str]
) -> None:
    """`register()` returning 42 was exit 70 with rich's traceback (an int is no table cell)."""
    plugin_entry_point(area, "return 42")

    code, out, lines = run(area, ["platforms"], capsys)

    assert (code, lines) == (ExitCode.OK, [])
    assert "its function returned 42 (int), not a class path or None" in " ".join(out.split())


STOPS = [(signal.SIGINT, ExitCode.INTERRUPTED), (signal.SIGTERM, ExitCode.TERMINATED)]


@pytest.mark.parametrize(("sig", "code"), STOPS)
def test_a_real_stop_signal_while_a_platform_module_imports_stays_the_interrupt(
    sig: signal.Signals, code: ExitCode, area: Area, capsys: pytest.CaptureFixture[str]
) -> None:
    module = area.plugin(f"import os, time\nos.kill(os.getpid(), {int(sig)})\ntime.sleep(5)\n")

    exit_code, _, lines = run(area, [*target_options("sites", area), "--platform", f"{module}:P"], capsys)

    assert (exit_code, lines) == (code, [f"warnonce-guard: {code.name.lower()}"])


@pytest.fixture
def python_answers_ctrl_c() -> Iterator[None]:
    """Python's own SIGINT handler, as in a process without the command line's (the mutmut session's guards)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("python_answers_ctrl_c")
def test_under_pythons_own_handler_a_real_ctrl_c_stays_a_keyboard_interrupt_and_a_raised_one_does_not() -> None:
    with pytest.raises(KeyboardInterrupt) as caught, must_not_exit("importing x", "fix x"):
        os.kill(os.getpid(), signal.SIGINT)
        signal.sigtimedwait([], 0)  # the handler runs between bytecodes: give it one
    assert type(caught.value) is KeyboardInterrupt
    ended = r"^importing x would end the process \(KeyboardInterrupt at .*\); fix x$"
    with pytest.raises(PlatformImportFailed, match=ended), must_not_exit("importing x", "fix x"):
        raise KeyboardInterrupt
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back as it was


@pytest.mark.parametrize(
    "spec",
    [".foo:Bar", "..foo:Bar", "foo..bar:Baz", "foo:", ":Bar", "foo-bar:Baz", "foo:Bar:Baz", "foo bar:Baz", "foo"],
)
def test_a_platform_that_is_no_module_and_class_is_one_line_and_exit_3(
    spec: str, area: Area, capsys: pytest.CaptureFixture[str]
) -> None:
    """`.foo:Bar` exited 7 (now 4) with importlib's TypeError text about a 'package' argument."""
    code, _, lines = run(area, [*target_options("sites", area), "--platform", spec], capsys)

    assert code == PlatformNotFound.exit_code == ExitCode.BAD_INPUT
    assert lines == [
        f"warnonce-guard: error: --platform {spec}: give it as module:Class, the module by its full dotted name, "
        "e.g. my_plugin.platform:MyPlatform"
    ]


@pytest.mark.parametrize("command", ["sites", "guards", "mutate"])
def test_a_class_with_import_kernels_that_is_no_platform_says_so_not_nothing_to_guard(
    command: str, area: Area, capsys: pytest.CaptureFixture[str]
) -> None:
    module = area.plugin("class NotPlat:\n    @classmethod\n    def import_kernels(cls):\n        pass\n")

    code, _, lines = run(area, [*target_options(command, area), "--platform", f"{module}:NotPlat"], capsys)

    assert code == ExitCode.BAD_INPUT
    assert lines == [
        f"warnonce-guard: error: --platform {module}:NotPlat: {module}.NotPlat is not a platform class (not a "
        "subclass of vllm.platforms.interface.Platform); pass a vLLM platform class, such as `warnonce-guard "
        "platforms` lists"
    ]


def test_a_subclass_of_the_targets_platform_is_a_platform_class(area: Area, capsys: pytest.CaptureFixture[str]) -> None:
    """Not vacuous: the check reads the class's bases by name, so the target's own Platform and its subclasses pass."""
    module = area.plugin("from vllm.platforms.interface import Platform\n\n\nclass Mine(Platform):\n    pass\n")

    code, out, _ = run(area, [*target_options("sites", area), "--platform", f"{module}:Mine", "--json"], capsys)

    assert code == ExitCode.OK and f'"driver": "{module}:Mine"' in out
