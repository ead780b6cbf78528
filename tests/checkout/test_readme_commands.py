"""README's commands for a vLLM maintainer and a plugin maintainer, run as written (`readme_commands.SANDBOXED`),
against the installed vLLM, in a sandbox: `~` is a temporary home holding `vllm/` (a checkout with its tests/),
`vllm_ascend/` a plugin package with a leak, `my_plugin` a platform plugin on the path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.readme_commands import README, SANDBOXED, shown_commands
from tests.toy import PLUGIN_LEAK, write

pytestmark = [pytest.mark.slow, pytest.mark.long]

MY_PLATFORM = """\
from vllm.platforms.interface import Platform


class MyPlatform(Platform):
    device_name = "my-device"
"""
STRICT_TEST = """\
from vllm.logger import init_logger

logger = init_logger(__name__)


def test_a_formatted_warning_passes():
    logger.warning_once("value: %s", "text")
"""


def make_sandbox(root: Path) -> Path:
    """~/vllm with its tests/; a plugin checkout with a package that leaks, a test for strict mode and its tests/;
    a platform plugin."""
    write(root, "home/vllm/tests/test_logger.py", "def test_the_logger_is_there():\n    import vllm.logger\n")
    (root / "home" / "vllm" / "tests" / "platforms").mkdir()
    (root / "home" / "vllm" / ".buildkite").mkdir()  # where vLLM keeps its CI's files
    write(root, "work/vllm_ascend/__init__.py", "")
    write(root, "work/vllm_ascend/platform.py", PLUGIN_LEAK.replace("my_plugin", "vllm_ascend"))
    write(root, "work/test_strict.py", STRICT_TEST)
    (root / "work" / "tests").mkdir()  # the plugin's own tests/, where its exported test goes
    write(root, "plugins/my_plugin/__init__.py", "")
    write(root, "plugins/my_plugin/platform.py", MY_PLATFORM)
    return root


def shell(command: str, sandbox: Path) -> subprocess.CompletedProcess[str]:
    """The command line as a user types it, in the sandbox's work folder (~/vllm for the export, as README shows it
    run there; the mutation run's own `cd` goes there too), with the test's Python environment first on PATH and
    the platform plugin importable."""
    env = {**os.environ, "HOME": str(sandbox / "home"), "PYTHONPATH": str(sandbox / "plugins")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    cwd = sandbox / "home" / "vllm" if "tests/platforms/" in command else sandbox / "work"
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_readme_shows_every_sandboxed_command() -> None:
    assert set(SANDBOXED) <= set(shown_commands(README))


def test_the_maintainers_commands_work_as_written(tmp_path: Path) -> None:
    sandbox = make_sandbox(tmp_path)
    for command, (code, shown, left) in SANDBOXED.items():
        done = shell(command, sandbox)
        said = f"`{command}`: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert done.returncode == code and shown in done.stdout, said
        assert not left or (sandbox / left).is_file(), said
