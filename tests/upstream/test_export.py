"""`warnonce-guard export-test`: the module it writes from the installed vLLM (six cases, vLLM's ruff settings, no
import of ours), from a toy tree (a case per site, a seventh site noticed by --check), and its options."""

from __future__ import annotations

import ast
import os
import subprocess
from pathlib import Path

import pytest
from warnonce_guard.cli.main import main
from warnonce_guard.common.errors import ExitCode
from warnonce_guard.upstream.export import listed_cases
from warnonce_guard.upstream.render import PATH
from warnonce_guard.upstream.words import HEADER, LEAKS, MARKER

from tests.exported_support import (
    ALLOWED_IMPORTS,
    COMMITTED,
    PRINT_ONCE,
    TOY_IDS,
    add_seventh_site,
    export,
    failure_lines,
    imported_modules,
    made_leaky,
    ruff_as_vllm,
    run_exported,
    toy_vllm,
)
from tests.toy import write

VLLM_IDS = [
    "cpu-CpuPlatform.import_kernels-vllm._C-is_avx512_bf16_supported",
    "cpu-CpuPlatform.import_kernels-vllm._C_AVX512-not-is_avx512_bf16_supported",
    "cpu-CpuPlatform.import_kernels-vllm._C_AVX2-not-is_avx512_supported",
    "cpu-CpuPlatform.import_kernels-vllm._C-not-X86",
    "cuda-CudaPlatformBase.import_kernels-vllm._C_stable_libtorch",
    "interface-Platform.import_kernels-vllm._C",
]


@pytest.fixture(scope="module")
def vllm_export(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The module exported from the installed vLLM (the pinned 0.34.0), by the command line in a process of its own."""
    out = tmp_path_factory.mktemp("export") / "test_kernel_import_warnings.py"
    done = export("--out", str(out), cwd=out.parent)
    assert done.returncode == 0, done.stderr
    assert "6 cases from vLLM 0.34.0" in done.stdout
    return out.read_text(encoding="utf-8")


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    return toy_vllm(tmp_path / "tree")


def test_the_installed_vllm_exports_one_case_per_cached_site(vllm_export: str) -> None:
    cases = listed_cases(vllm_export)
    assert cases is not None
    assert [case.id for case in cases] == VLLM_IDS
    assert [case.site.rpartition(":")[0] for case in cases] == [
        *["vllm/platforms/cpu.py"] * 4,
        "vllm/platforms/cuda.py",
        "vllm/platforms/interface.py",
    ]


def test_the_export_is_clean_at_vllms_ruff_settings(vllm_export: str, tmp_path: Path) -> None:
    check, formatted = ruff_as_vllm(vllm_export, tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr


def test_a_misplaced_import_fails_that_ruff_check(vllm_export: str, tmp_path: Path) -> None:
    """Not vacuous: the settings are vLLM's (vllm first-party, its own section) and they are applied."""
    unsorted = vllm_export.replace("import pytest\n\nimport vllm.logger\n", "import pytest\nimport vllm.logger\n")
    check, _ = ruff_as_vllm(unsorted, tmp_path)
    assert check.returncode == 1 and "I001" in check.stdout


def test_the_export_imports_nothing_of_warnonce_guard(vllm_export: str) -> None:
    modules = imported_modules(vllm_export)
    assert {module.split(".")[0] for module in modules} <= ALLOWED_IMPORTS
    assert {"pytest", "vllm.logger"} <= set(modules)
    assert [line for line in vllm_export.splitlines() if "warnonce" in line] == [HEADER.strip()]


def test_the_export_is_short_and_says_what_it_guards(vllm_export: str) -> None:
    tree = ast.parse(vllm_export)
    docstring = ast.get_docstring(tree) or ""
    assert docstring.startswith("Kernel-import warnings must not keep the failed import's exception alive.")
    assert len(vllm_export.splitlines()) <= 180
    assert [node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test")] == [
        "test_kernel_import_warning_keeps_nothing_alive"
    ]
    assert all(f'"{leak}"' in vllm_export for leak in LEAKS)  # the words a failure names what leaked with


def test_the_committed_export_is_what_an_export_writes_now(vllm_export: str) -> None:
    assert COMMITTED.read_text(encoding="utf-8") == vllm_export  # else: warnonce-guard export-test --out <it>


def test_the_same_tree_exports_the_same_bytes(toy: Path, tmp_path: Path) -> None:
    first, second = (export("--vllm-src", str(toy), cwd=tmp_path) for _ in range(2))
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout


def test_a_toy_tree_exports_a_case_per_site_with_its_branches_stand_ins_and_texts(toy: Path, tmp_path: Path) -> None:
    done = export("--vllm-src", str(toy), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    cases = listed_cases(done.stdout)
    assert cases is not None and [case.id for case in cases] == TOY_IDS
    assert "from vllm.platforms.interface import Arch\n" in done.stdout
    assert '{"Platform.get_arch()": Arch.X86, "cpuinfo.avx512()": True},' in done.stdout
    assert '{"Platform.get_arch()": Arch.X86, "cpuinfo.avx512()": False},' in done.stdout
    assert '{"Platform.get_arch()": Arch.ARM},' in done.stdout  # the else branch: another member of the enum
    assert '"Failed to import from vllm._C_AVX512: {error}",' in done.stdout  # `%s`, e.msg: the exception's str
    assert '"Failed to import from vllm._moe_C: {error!r}",' in done.stdout  # an f-string's {e!r}
    assert 'STAND_INS = {"vllm.platforms.cuda": ("vllm._C_stable",)}' in done.stdout
    check, formatted = ruff_as_vllm(done.stdout, tmp_path / "ruff")
    assert check.returncode == formatted.returncode == 0, check.stdout + formatted.stdout


def test_the_toys_export_passes_on_it_and_fails_every_case_once_the_bug_is_back(toy: Path, tmp_path: Path) -> None:
    text = export("--vllm-src", str(toy), cwd=tmp_path).stdout
    passing = run_exported(text, tmp_path / "fixed", [toy])
    assert passing.returncode == 0 and "6 passed" in passing.stdout, passing.stdout + passing.stderr

    made_leaky(toy)
    failing = run_exported(text, tmp_path / "leaky", [toy])
    assert "6 failed" in failing.stdout, failing.stdout
    lines = failure_lines(failing.stdout)
    sites = [case.site for case in listed_cases(text) or []]
    assert len(lines) == 6 and all(any(f"AssertionError: {site}: " in line for line in lines) for site in sites)
    assert all(", ".join(LEAKS) in line for line in lines)  # exception retained, object pinned, warning repeated


# The interference trial: PRINT_ONCE in a module before the export (test_a_...) and one after it (test_z_...), and,
# beside the export, a check after each of its cases that every once-cache of vllm.logger is the same object with the
# same contents as before it.
CACHES_KEPT = """
import pytest
import vllm.logger


def _caches():
    return {n: (f, f.cache_info()) for n, f in vars(vllm.logger).items() if hasattr(f, "cache_info")}


@pytest.fixture(autouse=True)
def once_caches_kept(request):
    before = _caches()
    yield
    if request.node.module.__name__ == "test_kernel_import_warnings":
        assert _caches() == before, "an exported case changed the process's once-caches"
"""
CLEARS = """
import vllm.logger


def test_m_clears_every_once_cache():
    for cached in vars(vllm.logger).values():
        if hasattr(cached, "cache_clear"):
            cached.cache_clear()
"""
ORDERS = {
    "between-its-halves": ("-p", "no:randomly"),
    "before-both-halves": ("-p", "no:randomly", "test_kernel_import_warnings.py", "test_a_print_once.py", "."),
    "randomly": ("-p", "randomly", "--randomly-seed=1"),
    "randomly-xdist": ("-p", "randomly", "--randomly-seed=2", "-n", "2"),
}


@pytest.fixture(scope="module")
def toy_export(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A toy tree, left as it is, and its export."""
    toy = toy_vllm(tmp_path_factory.mktemp("toy") / "tree")
    done = export("--vllm-src", str(toy), cwd=toy.parent)
    assert done.returncode == 0, done.stderr
    return toy, done.stdout


@pytest.mark.parametrize("order", ORDERS)
def test_the_export_leaves_a_print_once_test_around_it_as_it_was(
    toy_export: tuple[Path, str], tmp_path: Path, order: str
) -> None:
    toy, text = toy_export
    for name in ("test_a_print_once.py", "test_z_print_once.py"):
        write(tmp_path, name, PRINT_ONCE)
    done = run_exported(text, tmp_path, [toy], *ORDERS[order], conftest=CACHES_KEPT)
    assert done.returncode == 0 and "8 passed" in done.stdout, done.stdout + done.stderr


def test_the_trial_fails_a_test_that_clears_the_once_caches_between_the_halves(
    toy_export: tuple[Path, str], tmp_path: Path
) -> None:
    toy, text = toy_export
    for name, source in (("test_a_print_once.py", PRINT_ONCE), ("test_m.py", CLEARS), ("test_z.py", PRINT_ONCE)):
        write(tmp_path, name, source)
    done = run_exported(text, tmp_path, [toy], "-p", "no:randomly")
    printed_twice = "test_z.py:17: AssertionError: assert 2 == 1"  # the second half saw its message again
    assert "1 failed, 8 passed" in done.stdout and printed_twice in done.stdout, done.stdout


def test_a_seventh_site_is_a_seventh_case_and_check_names_it(toy: Path, tmp_path: Path) -> None:
    six = tmp_path / "six.py"
    assert export("--vllm-src", str(toy), "--out", str(six), cwd=tmp_path).returncode == 0
    assert export("--vllm-src", str(toy), "--check", str(six), cwd=tmp_path).returncode == 0

    line = add_seventh_site(toy)
    seven = export("--vllm-src", str(toy), cwd=tmp_path)
    assert len(listed_cases(seven.stdout) or []) == 7
    assert run_exported(seven.stdout, tmp_path / "run", [toy]).returncode == 0

    done = export("--vllm-src", str(toy), "--check", str(six), cwd=tmp_path)
    assert done.returncode == ExitCode.CHECK_FAILED
    seventh = f"case cpu-CpuPlatform.import_kernels-vllm._C_extra is new (vllm/platforms/cpu.py:{line})"
    assert done.stdout == f"{six}: {seventh}; re-export\n"


def test_check_names_a_site_that_moved(toy: Path, tmp_path: Path) -> None:
    before = tmp_path / "before.py"
    export("--vllm-src", str(toy), "--out", str(before), cwd=tmp_path)
    cuda = toy / "vllm" / "platforms" / "cuda.py"
    cuda.write_text("# a comment line above everything\n" + cuda.read_text(encoding="utf-8"), encoding="utf-8")
    done = export("--vllm-src", str(toy), "--check", str(before), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.endswith(
        ": case cuda-CudaPlatform.import_kernels-vllm._C_stable changed: its site (vllm/platforms/cuda.py:14 -> "
        "vllm/platforms/cuda.py:15); re-export\n"
    )


def test_check_of_an_edited_export_names_the_edited_case_or_says_the_text_differs(toy: Path, tmp_path: Path) -> None:
    out = tmp_path / "edited.py"
    export("--vllm-src", str(toy), "--out", str(out), cwd=tmp_path)
    text = out.read_text(encoding="utf-8")
    out.write_text(text.replace("gc.collect()", "gc.collect()  # edited"))
    done = export("--vllm-src", str(toy), "--check", str(out), cwd=tmp_path)
    assert done.returncode == 1 and "its text differs from a fresh export outside its cases; re-export" in done.stdout
    out.write_text(text.replace("vllm._C_AVX2: {error!r}", "vllm._C_AVX2 : {error!r}"))
    done = export("--vllm-src", str(toy), "--check", str(out), cwd=tmp_path)
    assert done.returncode == 1
    case = "cpu-CpuPlatform.import_kernels-vllm._C_AVX2-not-avx512"
    assert done.stdout == f"{out}: case {case} changed: its warning; re-export\n"


def test_the_patch_applies_to_a_checkout_and_adds_the_module(toy: Path, tmp_path: Path) -> None:
    module = export("--vllm-src", str(toy), cwd=tmp_path).stdout
    patch = tmp_path / "export.patch"
    assert export("--vllm-src", str(toy), "--patch", "--out", str(patch), cwd=tmp_path).returncode == 0
    checkout = tmp_path / "checkout"
    write(checkout, "tests/platforms/test_cpu.py", "def test_cpu():\n    pass\n")
    git = ["git", "-c", "safe.directory=*", "-c", "user.email=t@t", "-c", "user.name=t"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "checkout"], ["apply", "--check", str(patch)]):
        subprocess.run([*git, *command], cwd=checkout, check=True)
    subprocess.run([*git, "apply", str(patch)], cwd=checkout, check=True)
    assert (checkout / PATH).read_text(encoding="utf-8") == module
    assert export("--vllm-src", str(toy), "--check", str(patch), cwd=tmp_path).returncode == 0  # a patch is checked too


def test_out_writes_through_a_symlink_to_its_target(toy: Path, tmp_path: Path) -> None:
    target = tmp_path / "real.py"
    link = tmp_path / "link.py"
    link.symlink_to(target)
    assert export("--vllm-src", str(toy), "--out", str(link), cwd=tmp_path).returncode == 0
    assert link.is_symlink() and MARKER in target.read_text(encoding="utf-8")
    target.chmod(0o640)
    assert export("--vllm-src", str(toy), "--out", str(link), cwd=tmp_path).returncode == 0  # an earlier export
    assert link.is_symlink() and (target.stat().st_mode & 0o777) == 0o640
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary left


def test_a_platform_plugins_cases_are_its_own_and_import_it_as_first_party(toy: Path, tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    write(plugin, "my_plugin/__init__.py", "")
    write(
        plugin,
        "my_plugin/platform.py",
        """
        from vllm.logger import init_logger
        from vllm.platforms.interface import Platform

        logger = init_logger(__name__)


        class MyPlatform(Platform):
            @classmethod
            def import_kernels(cls) -> None:
                try:
                    import my_plugin._C  # noqa: F401
                except ImportError as e:
                    logger.warning_once("my_plugin: no kernels (%s)", repr(e))
        """,
    )
    env = {**os.environ, "PYTHONPATH": str(plugin)}
    done = export("--vllm-src", str(toy), "--platform", "my_plugin.platform:MyPlatform", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    cases = listed_cases(done.stdout)
    assert cases is not None and [(c.id, c.site) for c in cases] == [
        ("platform-MyPlatform.import_kernels-my_plugin._C", "my_plugin/platform.py:13")
    ]
    assert "SPDX" not in done.stdout and done.stdout.startswith(HEADER)  # not vLLM's file
    assert "import pytest\nimport vllm.logger\n\n# One case" in done.stdout  # vllm is third-party here
    assert run_exported(done.stdout, tmp_path / "run", [plugin, toy]).returncode == 0


@pytest.mark.parametrize("option", ["--out", "--check", "--vllm-src", "--platform"])
def test_an_empty_value_is_a_usage_error(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["export-test", option, ""])
    assert stopped.value.code == ExitCode.USAGE
    assert f"argument {option}: an empty value" in capsys.readouterr().err


@pytest.mark.parametrize("options", [["--check", "x.py", "--out", "y.py"], ["--check", "x.py", "--patch"]])
def test_check_takes_neither_out_nor_patch(options: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export-test", *options]) == ExitCode.USAGE
    assert "--check FILE" in capsys.readouterr().err


def test_out_refuses_a_file_that_is_no_earlier_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "test_mine.py"
    mine.write_text("def test_mine():\n    pass\n")
    assert main(["export-test", "--out", str(mine)]) == ExitCode.BAD_INPUT
    err = capsys.readouterr().err
    assert err == (
        f"warnonce-guard: error: --out {mine}: not an earlier export (no `{MARKER}` header); "
        "pass a new path or move it away\n"
    )
    assert mine.read_text() == "def test_mine():\n    pass\n"


@pytest.mark.parametrize("kind", ["directory", "fifo", "no parent", "link to another's"])
def test_out_refuses_what_it_cannot_write_before_any_work(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.py"
    if kind == "directory":
        out.mkdir()
    elif kind == "fifo":
        os.mkfifo(out)  # never opened: it would block
    elif kind == "no parent":
        out = tmp_path / "missing" / "out.py"
    else:
        (tmp_path / "theirs.py").write_text("x = 1\n")
        out.symlink_to(tmp_path / "theirs.py")
    assert main(["export-test", "--vllm-src", str(tmp_path / "no-such-tree"), "--out", str(out)]) == ExitCode.BAD_INPUT
    assert "--out" in capsys.readouterr().err  # refused for the path, before the missing tree was noticed


@pytest.mark.parametrize("content", [None, "def test_mine():\n    pass\n"])
def test_check_needs_an_earlier_export(content: str | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = tmp_path / "test_x.py"
    if content is not None:
        file.write_text(content)
    assert main(["export-test", "--check", str(file)]) == ExitCode.BAD_INPUT
    assert ("not an export" if content else "no such file") in capsys.readouterr().err


def test_a_tree_without_a_cached_site_has_nothing_to_export(tmp_path: Path) -> None:
    tree = toy_vllm(tmp_path / "tree")
    for name in ("cpu", "cuda", "interface"):
        (tree / "vllm" / "platforms" / f"{name}.py").write_text("")
    done = export("--vllm-src", str(tree), cwd=tmp_path)
    assert done.returncode == ExitCode.NOTHING_TO_CHECK and "can be exported" in done.stderr
