"""Fault injection: code the tool imports that tries to end the process, through the real command line.

A `--platform` module or a plugin's `register()` raising `SystemExit(0)` made `sites`, `guards`, `mutate` and
`platforms` exit 0 with no output and no report. In a real process each is now one line naming the module and exit 4.
The mutmut session imports the target in a process of its own: a target that would end that process while the
guards import it (`SystemExit(0)`, `os._exit(0)`) leaves its site unreached, the gate naming the module (exit 1); a
suite that ends it as pytest collects it is one line and exit 4, no report. The user's files (the tree, the
plugins) are as they were after each. The same cases in process are tests/cli/test_cli_imports.py.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.faults import ROOT, hash_tree, one_line_error
from tests.toy import CLI, make_tree

pytestmark = pytest.mark.slow

REGISTERS = "[vllm.platform_plugins]\nexiting = exiting_plugin:register\n"


def users_area(home: Path, registered: bool = False) -> Path:
    """A toy vLLM tree, and plugins: `exiting_platform` (raises SystemExit(0) when imported) and `exiting_plugin`
    whose `register()` does the same, installed (registered as vLLM's platform plugin) if `registered`."""
    make_tree(home / "tree")
    plugins = home / "plugins"
    plugins.mkdir()
    (plugins / "exiting_platform.py").write_text("raise SystemExit(0)\n")
    (plugins / "exiting_plugin.py").write_text("def register():\n    raise SystemExit(0)\n")
    if not registered:
        return home
    dist = plugins / "exiting_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: exiting-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(REGISTERS)
    return home


def command_line(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command line run as a user runs it, from `home`, the plugins on its path, writing no bytecode."""
    paths = os.pathsep.join([str(home / "plugins"), str(ROOT)])
    env = dict(os.environ, PYTHONPATH=paths, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=home, env=env, timeout=300)


MUTATE = ("mutate", "--out", "report", "--work-dir", "work")


@pytest.mark.parametrize("command", ["sites", "guards", "mutate"])
def test_a_platform_module_raising_system_exit_0_is_exit_4_and_one_line_in_a_real_process(
    command: str, tmp_path: Path
) -> None:
    home = users_area(tmp_path / "home")
    before = hash_tree(home)
    args = MUTATE if command == "mutate" else (command,)

    done = command_line(home, *args, "--vllm-src", "tree", "--platform", "exiting_platform:P")

    assert done.returncode == 4, done.stdout + done.stderr
    assert one_line_error(done.stderr) == (
        "warnonce-guard: error: --platform exiting_platform:P: importing exiting_platform would end the process "
        f"(SystemExit(0) at {home / 'plugins' / 'exiting_platform.py'}:1); a platform module must not exit when "
        "imported"
    )
    assert hash_tree(home) == before  # no report, no work directory, nothing of the user's changed


@pytest.mark.parametrize("command", ["platforms", "guards", "mutate"])
def test_a_plugin_whose_register_raises_system_exit_0_is_exit_4_in_a_real_process(command: str, tmp_path: Path) -> None:
    """`guards` ended with six tracebacks and exit 1 (vLLM loads the plugins when a guard first logs), `mutate` said
    each site was unreached: both load the plugins first now, as `platforms` does."""
    home = users_area(tmp_path / "home", registered=True)
    before = hash_tree(home)
    args = {
        "platforms": ("platforms",),
        "guards": ("guards", "--vllm-src", "tree"),
        "mutate": (*MUTATE, "--vllm-src", "tree"),
    }

    done = command_line(home, *args[command])

    assert done.returncode == 4, done.stdout + done.stderr
    assert one_line_error(done.stderr) == (
        "warnonce-guard: error: platform plugin exiting: loading exiting_plugin:register would end the process "
        f"(SystemExit(0) at {home / 'plugins' / 'exiting_plugin.py'}:2); a plugin must not exit while vLLM loads it"
    )
    assert ("exiting" in done.stdout) == (command == "platforms")  # the table, printed first
    assert hash_tree(home) == before


@pytest.mark.parametrize(
    ("where", "source"),
    [("conftest.py", "import sys\n\nsys.exit(0)\n"), ("test_a.py", "import os\n\nos._exit(0)\n")],
    ids=["conftest-sys-exit-0", "test-module-os-exit-0"],
)
def test_a_suite_that_ends_the_process_as_pytest_collects_it_is_exit_4_and_one_line_never_a_score(
    tmp_path: Path, where: str, source: str
) -> None:
    home = users_area(tmp_path / "home")
    (home / "suite").mkdir()
    (home / "suite" / "test_a.py").write_text("def test_a():\n    pass\n")
    (home / "suite" / where).write_text(source)
    before = hash_tree(home / "tree", home / "suite")

    done = command_line(home, *MUTATE, "--vllm-src", "tree", "--tests", "suite")

    assert done.returncode == 4, done.stdout + done.stderr
    line = one_line_error(done.stderr)
    assert "before the tests (pytest in " in line and "ran on the unmutated code" in line, line
    assert "a conftest.py or test module of the suite, or importing the target" in line, line
    assert not (home / "report").exists()
    assert hash_tree(home / "tree", home / "suite") == before


@pytest.mark.parametrize(
    ("source", "raised"),
    [("raise SystemExit(0)\n", "SystemExit(0) at {init}:1"), ("import os\n\nos._exit(0)\n", "os._exit(0) at {init}:3")],
    ids=["system-exit-0", "os-exit-0"],
)
def test_a_target_that_would_end_the_sessions_process_leaves_its_site_unreached_naming_the_module(
    source: str, raised: str, tmp_path: Path
) -> None:
    """The mutmut session (a process of its own) imports the target for the guards: `os._exit(0)` there ended it
    with 0 (then one line, exit 4, no report); now the guards' import stops it as it stops a SystemExit."""
    home = users_area(tmp_path / "home")
    init = home / "tree" / "vllm" / "__init__.py"
    init.write_text(source)
    before = hash_tree(home / "tree", home / "plugins")

    done = command_line(home, *MUTATE, "--vllm-src", "tree")

    assert done.returncode == 1, done.stdout + done.stderr
    gate = [line for line in done.stdout.splitlines() if line.startswith("gate: ")]
    assert gate[0] == (
        "gate: vllm/platforms/interface.py::Platform.import_kernels::vllm._C is unreached: Failed: importing "
        f"vllm.platforms.interface would end the process ({raised.format(init=init)}); a module of the target must "
        "not exit when imported"
    )
    assert hash_tree(home / "tree", home / "plugins") == before
