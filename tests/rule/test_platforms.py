"""Platform plugins: a plugin class is targeted by dotted path, and registered plugins are listed.

Two small plugins over a small vLLM-shaped tree: one inherits the base `import_kernels` (so the guard
drives vLLM's own site through the plugin class), one overrides it with a kernel-import site of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from warnonce_guard.common.errors import ExitCode, NothingToCheck, PlatformNotFound
from warnonce_guard.guards.detectors import EXCEPTION_RETAINED, OWNER_PINNED
from warnonce_guard.rule.platforms import load_class

from tests import layout
from tests.toy import INTERFACE, fitting_operators, make_tree

INHERITS = """
from vllm.platforms.interface import Platform


class InheritingPlatform(Platform):
    device_name = "inheriting"
"""

OVERRIDES = """
from vllm.logger import init_logger
from vllm.platforms.interface import Platform

logger = init_logger(__name__)


class OwnKernelsPlatform(Platform):
    @classmethod
    def import_kernels(cls) -> None:
        try:
            import own_plugin._own_C  # noqa: F401
        except ImportError as err:
            logger.warning_once("Failed to import own_plugin._own_C: {args})
"""

pytestmark = pytest.mark.slow  # runs the command line in subprocesses

EAGER, LIVE = '%s", repr(err)', '%r", err'


def make_plugins(root: Path, override_args: str = EAGER) -> Path:
    for name, source in (("inherit_plugin", INHERITS), ("own_plugin", OVERRIDES.replace("{args}", override_args))):
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text(f"def register():\n    return '{name}.platform.Cls'\n")
        (root / name / "platform.py").write_text(source)
    dist = root / "inherit_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: inherit-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[vllm.platform_plugins]\ninheriting = inherit_plugin:register\n")
    return root


def cli(tree: Path, plugins: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [sys.executable, "-m", "warnonce_guard.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=layout.ROOT,
    )


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    return make_tree(tmp_path / "tree"), make_plugins(tmp_path / "plugins")


def test_inheriting_plugin_runs_the_base_site_through_its_own_class(world: tuple[Path, Path]) -> None:
    tree, plugins = world
    listed = cli(
        tree,
        plugins,
        "sites",
        "--vllm-src",
        str(tree),
        "--platform",
        "inherit_plugin.platform:InheritingPlatform",
        "--json",
    )
    (site,) = [s for s in json.loads(listed.stdout)["sites"]]
    assert (site["file"], site["qualname"]) == ("vllm/platforms/interface.py", "Platform.import_kernels")
    assert site["driver"] == "inherit_plugin.platform:InheritingPlatform"

    run = cli(
        tree,
        plugins,
        "guards",
        "--vllm-src",
        str(tree),
        "--platform",
        "inherit_plugin.platform:InheritingPlatform",
        "-q",
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout


def test_overriding_plugin_has_its_own_site_and_its_leak_is_caught(tmp_path: Path) -> None:
    tree, plugins = make_tree(tmp_path / "tree"), make_plugins(tmp_path / "plugins", LIVE)
    spec = "own_plugin.platform:OwnKernelsPlatform"

    listed = cli(tree, plugins, "sites", "--vllm-src", str(tree), "--platform", spec, "--json")
    (site,) = json.loads(listed.stdout)["sites"]
    assert (site["file"], site["kernel_module"], site["form"]) == (
        "own_plugin/platform.py",
        "own_plugin._own_C",
        "live",
    )

    run = cli(tree, plugins, "guards", "--vllm-src", str(tree), "--platform", spec, "-q")
    assert run.returncode == ExitCode.CHECK_FAILED
    assert EXCEPTION_RETAINED in run.stdout and OWNER_PINNED in run.stdout and "own_plugin._own_C" in run.stdout


def test_overriding_plugin_with_the_fix_passes(world: tuple[Path, Path]) -> None:
    tree, plugins = world
    run = cli(
        tree, plugins, "guards", "--vllm-src", str(tree), "--platform", "own_plugin.platform:OwnKernelsPlatform", "-q"
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_registered_plugins_are_listed_with_the_class_they_resolve_to(world: tuple[Path, Path]) -> None:
    tree, plugins = world
    listed = cli(tree, plugins, "platforms")
    assert listed.returncode == 0
    assert "inheriting" in listed.stdout and "inherit_plugin.platform.Cls" in listed.stdout


def test_a_platform_that_is_not_there_is_a_one_line_error(world: tuple[Path, Path]) -> None:
    tree, plugins = world
    run = cli(tree, plugins, "sites", "--vllm-src", str(tree), "--platform", "no_such_plugin:Thing")
    assert run.returncode == PlatformNotFound.exit_code
    assert run.stderr.count("\n") == 1 and "cannot import no_such_plugin" in run.stderr


def test_a_platform_whose_import_kernels_has_no_guarded_kernel_import_is_nothing_to_check(tmp_path: Path) -> None:
    """(A plain-warning site is a guarded site since issue 40: it is listed, and guarded.)"""
    tree = make_tree(tmp_path / "tree", INTERFACE.replace("import vllm._C", "import vllm.no_kernel"))
    plugins = make_plugins(tmp_path / "plugins")
    run = cli(
        tree, plugins, "sites", "--vllm-src", str(tree), "--platform", "inherit_plugin.platform:InheritingPlatform"
    )
    assert run.returncode == NothingToCheck.exit_code and "nothing to guard" in run.stderr


def test_load_class_rejects_a_spec_without_a_class() -> None:
    with pytest.raises(PlatformNotFound, match="module:Class"):
        load_class("justamodule")


def mutation_run(world: tuple[Path, Path], tmp_path: Path, spec: str) -> dict[str, list[dict[str, object]]]:
    """`mutate --platform spec` over the toy world; the mutants of each file in the Stryker report."""
    tree, plugins = world
    out = tmp_path / "report"
    args = ["mutate", "--vllm-src", str(tree), "--platform", spec, "--work-dir", str(tmp_path / "work")]
    run = cli(tree, plugins, *args, "--out", str(out))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return {name: f["mutants"] for name, f in json.loads((out / "mutation.json").read_text())["files"].items()}


def test_the_mutation_run_targets_a_plugin_and_mutates_its_own_site(world: tuple[Path, Path], tmp_path: Path) -> None:
    files = mutation_run(world, tmp_path, "own_plugin.platform:OwnKernelsPlatform")

    mutants = files["own_plugin/platform.py"]
    # the plugin's own site is `%s, repr(err)` through the `own_plugin` package: the same operators fit as on vLLM's
    assert sorted(m["mutatorName"] for m in mutants) == fitting_operators(INTERFACE)
    assert {m["status"] for m in mutants} == {"Killed"}
    assert (world[1] / "own_plugin" / "platform.py").read_text().count("__mutmut") == 0


def test_the_mutation_run_through_an_inheriting_plugin_mutates_the_base_site(
    world: tuple[Path, Path], tmp_path: Path
) -> None:
    files = mutation_run(world, tmp_path, "inherit_plugin.platform:InheritingPlatform")

    (mutants,) = files.values()
    assert {m["status"] for m in mutants} == {"Killed"} and len(mutants) == len(fitting_operators(INTERFACE))
    assert all("via-inherit_plugin.platform.InheritingPlatform" in m["killedBy"][0] for m in mutants)
