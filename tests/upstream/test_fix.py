"""`warnonce-guard export-fix`: the patch of `vllm/logger.py` and its test, on vLLM 0.33.0's and 0.29.0's files (their
sdists' `vllm/logger.py` and `tests/test_logger.py`, tests/data): it applies with `git apply`, is clean at vLLM's
ruff settings, and its test passes on the patch and fails on each mutant of it (on the toy logger: no torch)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from warnonce_guard.caches.cache_fix import PATCH_MUTANTS, patched
from warnonce_guard.cli.main import main
from warnonce_guard.common.errors import ExitCode
from warnonce_guard.upstream.fix import (
    FIX_MARKER,
    OWN_TEST_FILE,
    TEST_FILE,
    TEST_NAME,
    collect_fix,
    once_test_source,
    render_patch,
)

from tests import layout
from tests.exported_support import ALLOWED_IMPORTS, PRINT_ONCE, RUFF, VLLM_PYPROJECT, imported_modules
from tests.toy import FIXED_LOGGER_SOURCE, LOGGER_SOURCE, make_tree, write
from tools.vllm_tests.fix_proof import UNMUTATED, prove

RELEASES = ("0.33.0", "0.29.0")
GIT = shutil.which("git")


def release_tree(root: Path, version: str, with_tests: bool = True) -> Path:
    """A vLLM tree holding what the patch touches as the release's sdist has it, and its pyproject.toml (its ruff
    settings); the other vLLM modules its test file imports are empty files (ruff tells first-party imports by them)."""
    data = layout.DATA / f"vllm-{version}-logger"
    make_tree(root, logger=(data / "logger.py.txt").read_text(encoding="utf-8"))
    shutil.copyfile(data / "pyproject.toml.txt" if version != "0.33.0" else VLLM_PYPROJECT, root / "pyproject.toml")
    if not with_tests:
        return root
    (root / "tests").mkdir()
    shutil.copyfile(data / "test_logger.py.txt", root / TEST_FILE)
    for module in imported_modules((root / TEST_FILE).read_text(encoding="utf-8")):
        parts = module.split(".")
        if parts[0] == "vllm" and not root.joinpath(*parts).with_suffix(".py").exists():
            root.joinpath(*parts).mkdir(parents=True, exist_ok=True)  # a package each, which any submodule fits
            root.joinpath(*parts, "__init__.py").touch()
    return root


def git_apply(patch: str, tree: Path, *options: str) -> subprocess.CompletedProcess[str]:
    assert GIT, "git is needed to check the patch as vLLM's developers apply it"
    return subprocess.run([GIT, "apply", *options, "-"], input=patch, cwd=tree, capture_output=True, text=True)


def ruff(tree: Path, *files: str) -> list[subprocess.CompletedProcess[str]]:
    return [
        subprocess.run([str(RUFF), *command, *files], cwd=tree, capture_output=True, text=True, check=False)
        for command in (["check", "--no-cache"], ["format", "--check", "--no-cache"])
    ]


@pytest.mark.parametrize("version", RELEASES)
def test_the_patch_applies_to_the_release_and_is_clean_at_vllms_ruff_settings(version: str, tmp_path: Path) -> None:
    tree = release_tree(tmp_path / "tree", version)
    patch = render_patch(collect_fix(str(tree), None))

    checked = git_apply(patch, tree, "--check")
    assert checked.returncode == 0, checked.stderr
    assert git_apply(patch, tree).returncode == 0
    for done in ruff(tree, "vllm/logger.py", TEST_FILE):
        assert done.returncode == 0, done.stdout + done.stderr
    assert git_apply(patch, tree, "--check", "--reverse").returncode == 0  # and it comes back out whole


def test_the_patch_of_a_logger_with_a_page_break_applies(tmp_path: Path) -> None:
    """A form feed (a page break between definitions) ends no line to git or Python, only to str.splitlines."""
    logger = LOGGER_SOURCE.replace(
        "\n\n@lru_cache\ndef _print_warning_once", "\n\x0c\n@lru_cache\ndef _print_warning_once"
    )
    assert "\x0c" in logger
    tree = make_tree(tmp_path / "tree", logger=logger)
    patch = render_patch(collect_fix(str(tree), None))

    checked = git_apply(patch, tree, "--check")
    assert checked.returncode == 0, checked.stderr
    assert git_apply(patch, tree).returncode == 0
    assert (tree / "vllm/logger.py").read_text(encoding="utf-8") == patched(logger)


def test_the_patch_of_a_checkout_with_crlf_line_ends_applies_and_keeps_them(tmp_path: Path) -> None:
    tree = release_tree(tmp_path / "tree", "0.33.0")
    for name in ("vllm/logger.py", TEST_FILE):
        (tree / name).write_bytes((tree / name).read_bytes().replace(b"\n", b"\r\n"))
    lf = release_tree(tmp_path / "lf", "0.33.0")
    git_apply(render_patch(collect_fix(str(lf), None)), lf)
    patch = render_patch(collect_fix(str(tree), None))

    checked = git_apply(patch, tree, "--check")
    assert checked.returncode == 0, checked.stderr
    assert git_apply(patch, tree).returncode == 0
    for name in ("vllm/logger.py", TEST_FILE):  # the patched files, each line ending as every line did before
        assert (tree / name).read_bytes() == (lf / name).read_bytes().replace(b"\n", b"\r\n")
    assert main(["export-fix", "--vllm-src", str(tree), "--check", str(tree / "vllm/logger.py")]) == 0


@pytest.mark.parametrize("version", RELEASES)
def test_the_test_is_appended_to_tests_test_logger_py_importing_what_the_file_lacks(
    version: str, tmp_path: Path
) -> None:
    fix = collect_fix(str(release_tree(tmp_path, version)), None)

    assert fix.test.path == TEST_FILE
    assert fix.test.before is not None and fix.test.after.startswith(fix.test.before.rstrip("\n"))
    added = fix.test.after[len(fix.test.before.rstrip("\n")) :]
    assert f"def {TEST_NAME}(method, monkeypatch):" in added
    assert "    import gc\n    import weakref\n" in added  # the file imports logging, sys, pytest and init_logger
    assert str(list(fix.methods)).replace("'", '"') in added.replace("\n    ", "")


def test_a_target_without_tests_gets_the_test_as_a_file_of_its_own(tmp_path: Path) -> None:
    tree = release_tree(tmp_path / "tree", "0.33.0", with_tests=False)
    fix = collect_fix(str(tree), None)
    patch = render_patch(fix)

    assert (fix.test.path, fix.test.before) == (OWN_TEST_FILE, None)
    assert f"diff --git a/{OWN_TEST_FILE} b/{OWN_TEST_FILE}\nnew file mode 100644\n--- /dev/null\n" in patch
    assert git_apply(patch, tree).returncode == 0
    for done in ruff(tree, OWN_TEST_FILE):
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_test_imports_only_pytest_the_standard_library_and_the_logger_module() -> None:
    for standalone in (True, False):
        text = once_test_source(("debug", "warning"), "vllm.logger", frozenset(), standalone)
        assert {module.split(".")[0] for module in imported_modules(text)} <= ALLOWED_IMPORTS
        assert "warnonce" not in text
        ast.parse(text)


def test_the_patch_starts_with_its_marker_and_a_commit_message_git_skips(tmp_path: Path) -> None:
    patch = render_patch(collect_fix(str(release_tree(tmp_path, "0.33.0")), None))
    head = patch.split("diff --git", 1)[0]

    assert patch.startswith(f"{FIX_MARKER}: re-export it rather than edit it.\n")
    assert "[Bugfix] Key the *_once caches on the rendered message, not its arguments" in head
    assert "24 in 0.34.0" in head
    assert f"Test: {TEST_FILE}::{TEST_NAME}" in head
    assert [line for line in patch.splitlines() if line.startswith("diff --git")] == [
        "diff --git a/vllm/logger.py b/vllm/logger.py",
        f"diff --git a/{TEST_FILE} b/{TEST_FILE}",
    ]


def test_the_patchs_test_passes_on_the_patch_and_fails_on_each_of_its_mutants(tmp_path: Path) -> None:
    rows = prove(FIXED_LOGGER_SOURCE, tmp_path)

    assert [(row.variant, row.outcome) for row in rows] == [
        (UNMUTATED, "passed"),
        *((mutant.name, "failed") for mutant in PATCH_MUTANTS),
    ]
    assert all("the cache kept the exception" in row.message for row in rows[1:])


# ---- the command -----------------------------------------------------------------------------------


def export_fix(*args: str) -> int:
    return main(["export-fix", *args])


def test_export_fix_writes_the_patched_module_or_the_patch_and_checks_either(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = str(release_tree(tmp_path / "tree", "0.33.0"))
    module, patch = tmp_path / "logger.py", tmp_path / "fix.patch"

    assert export_fix("--vllm-src", tree, "--out", str(module)) == ExitCode.OK
    assert export_fix("--vllm-src", tree, "--patch", "--out", str(patch)) == ExitCode.OK
    assert export_fix("--vllm-src", tree, "--patch", "--out", str(patch)) == ExitCode.OK  # an earlier patch of ours
    out = capsys.readouterr().out
    assert f"{module}: vllm/logger.py, patched, from vLLM" in out
    assert f"{patch}: a patch of vllm/logger.py and {TEST_FILE}, from vLLM" in out
    assert module.read_text(encoding="utf-8") == patched((Path(tree) / "vllm" / "logger.py").read_text())
    assert patch.read_text(encoding="utf-8").startswith(FIX_MARKER)

    assert export_fix("--vllm-src", tree, "--check", str(patch)) == ExitCode.OK
    assert export_fix("--vllm-src", tree, "--check", str(module)) == ExitCode.OK
    patch.write_text(patch.read_text().replace("_ONCE_MAXSIZE = 512", "_ONCE_MAXSIZE = 511", 1))
    assert export_fix("--vllm-src", tree, "--check", str(patch)) == ExitCode.CHECK_FAILED
    assert "differs from a fresh export from line" in capsys.readouterr().out


def test_export_fix_refuses_to_replace_a_file_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = release_tree(tmp_path / "tree", "0.33.0")
    before = (tree / "vllm" / "logger.py").read_bytes()

    assert export_fix("--vllm-src", str(tree), "--out", str(tree / "vllm" / "logger.py")) == ExitCode.BAD_INPUT
    assert "not an earlier export" in capsys.readouterr().err
    assert (tree / "vllm" / "logger.py").read_bytes() == before


def test_export_fix_on_a_logger_that_renders_first_has_nothing_to_patch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = make_tree(tmp_path, logger=FIXED_LOGGER_SOURCE)

    assert export_fix("--vllm-src", str(tree)) == ExitCode.NOTHING_TO_CHECK
    assert "renders *_once messages before caching them already: nothing to patch" in capsys.readouterr().err


def test_export_fix_check_on_a_tree_that_has_the_fix_already_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = release_tree(tmp_path / "tree", "0.33.0")
    patch = tmp_path / "fix.patch"
    assert export_fix("--vllm-src", str(tree), "--patch", "--out", str(patch)) == ExitCode.OK
    assert git_apply(patch.read_text(), tree).returncode == 0  # merged upstream

    assert export_fix("--vllm-src", str(tree), "--check", str(patch)) == ExitCode.OK
    assert f"{patch}: the target has the fix already (vllm/logger.py renders" in capsys.readouterr().out
    assert export_fix("--vllm-src", str(tree), "--patch") == ExitCode.NOTHING_TO_CHECK  # but nothing to export


def test_export_fix_names_the_cache_it_cannot_patch_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = release_tree(tmp_path / "tree", "0.33.0")
    logger = tree / "vllm" / "logger.py"
    logger.write_text(logger.read_text().replace("logger.info(msg, *args, stacklevel=3)", "print(msg % args)"))

    assert export_fix("--vllm-src", str(tree), "--patch") == ExitCode.BAD_INPUT == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "_print_info_once (line " in err and "Traceback" not in err


def test_export_fix_check_reads_a_file_as_it_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert export_fix("--check", str(tmp_path / "x.patch"), "--patch") == ExitCode.USAGE
    assert "--check FILE reads a module or a patch as it is" in capsys.readouterr().err


def test_the_patched_toy_tree_runs_its_own_test_in_a_fresh_interpreter_and_leaves_a_print_once_test_alone(
    tmp_path: Path,
) -> None:
    """The test as written into a checkout (a file of its own, importing the tree's logger) passes there, between the
    halves of a test that relies on a message printed once for the session: it logs into once-caches of its own."""
    tree = make_tree(tmp_path / "tree")
    patch = render_patch(collect_fix(str(tree), None))
    assert git_apply(patch, tree).returncode == 0
    halves = ["tests/test_a_print_once.py", OWN_TEST_FILE, "tests/test_z_print_once.py"]
    for half in (halves[0], halves[2]):
        write(tree, half, PRINT_ONCE)

    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *halves],
        cwd=tree,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stdout[-2000:]
    assert "6 passed" in done.stdout  # the patch's 4 cases, and each half saw its message once


PLUGIN = """
from vllm.platforms.interface import Platform
from LOGGER import init_logger

logger = init_logger(__name__)


class MyPlatform(Platform):
    @classmethod
    def import_kernels(cls) -> None:
        try:
            import myplug._C  # noqa: F401
        except ImportError as e:
            logger.warning_once("Failed to import from myplug._C: %r", e)
"""


def test_with_platform_the_logger_the_plugins_sites_log_through_is_patched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tree = make_tree(tmp_path / "tree")
    for package, logger in (("myplug", "myplug.logger"), ("vllmplug", "vllm.logger")):
        write(tmp_path / "plugins", f"{package}/__init__.py", "")
        write(tmp_path / "plugins", f"{package}/logger.py", LOGGER_SOURCE)
        write(tmp_path / "plugins", f"{package}/platform.py", PLUGIN.replace("LOGGER", logger))
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    own, vllms = tmp_path / "own.patch", tmp_path / "vllm.patch"

    for plugin, out in (("myplug", own), ("vllmplug", vllms)):
        platform = f"{plugin}.platform:MyPlatform"
        assert export_fix("--vllm-src", str(tree), "--platform", platform, "--patch", "--out", str(out)) == 0

    assert "diff --git a/myplug/logger.py b/myplug/logger.py" in own.read_text()
    assert "+from myplug.logger import init_logger" in own.read_text()
    assert "SPDX" not in own.read_text().split(f"b/{OWN_TEST_FILE}")[1]  # vLLM's licence header is for vLLM's files
    assert "diff --git a/vllm/logger.py b/vllm/logger.py" in vllms.read_text()
    said = capsys.readouterr().out
    assert "myplug.logger (the logger of myplug.platform:MyPlatform) on vLLM 9.9.9" in said
