"""`audit --fix` and `--diff`: the mutation operators' inverse, which renders every message as before.

A fix formats the argument first (`"%r", e` -> `"%s", repr(e)`); the table below specifies the forms, a
property test renders `msg % args` before and after for standard exceptions, and vLLM 0.29.0's platforms
come out as vLLM 0.30.0 shipped them (tests/data, see its README).
"""

from __future__ import annotations

import ast
import logging
import re
import shutil
import stat
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from warnonce_guard.audit.codemod import fix_source
from warnonce_guard.audit.scan import findings_in_source
from warnonce_guard.cli.main import main
from warnonce_guard.common.errors import ExitCode
from warnonce_guard.mutations.operators import OPERATORS

from tests import layout
from tests.toy import apply_operator


def in_handler(call: str) -> str:
    return f"try:\n    import my_plugin._C\nexcept ImportError as e:\n    {call}\n"


def fixed(source: str) -> str:
    """The source with every finding fixed (warnings too), as `--fix --strict` writes it."""
    return fix_source(source, findings_in_source(source, "x.py"))[0]


# ---- the forms ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ('logger.warning_once("Failed: %r", e)', 'logger.warning_once("Failed: %s", repr(e))'),
        ('logger.warning_once("Failed: %s", e)', 'logger.warning_once("Failed: %s", str(e))'),
        ('logger.warning_once("Failed: %a", e)', 'logger.warning_once("Failed: %s", ascii(e))'),
        ('logger.info_once("[%-20r] %d%%", e, 3)', 'logger.info_once("[%-20s] %d%%", repr(e), 3)'),
        ('logger.info_once("%s then %r", e, e)', 'logger.info_once("%s then %s", str(e), repr(e))'),
        ('logger.info_once("%*s", width, e)', 'logger.info_once("%*s", width, str(e))'),  # not the width
        ('logger.info_once("%s", (e, 1))', 'logger.info_once("%s", str((e, 1)))'),
        ('logger.info_once("%r", describe(e))', 'logger.info_once("%s", repr(describe(e)))'),
        ('logger.info_once("%s", [e])', 'logger.info_once("%s", str([e]))'),
        ('logger.info_once("%r", lambda: e)', 'logger.info_once("%s", repr(lambda: e))'),
        # the exception's fix is its own; the keyword that makes the call raise is left to the user (WOG011)
        ('logger.info_once("%r", e, exc_info=True)', 'logger.info_once("%s", repr(e), exc_info=True)'),
        ("logger.info_once(e)", "logger.info_once(str(e))"),
        ("logger.info_once(msg=e)", "logger.info_once(msg=str(e))"),
        ("logger.info_once(\"a: \" '%r', e)", "logger.info_once(\"a: \" '%s', repr(e))"),
        ('logger.info_once(r"C:\\dir %r", e)', 'logger.info_once(r"C:\\dir %s", repr(e))'),
        ('logger.info_once("%s", sys.exc_info()[1])', 'logger.info_once("%s", str(sys.exc_info()[1]))'),
        ('warn = logger.warning_once\n    warn("%r", e)', 'warn = logger.warning_once\n    warn("%s", repr(e))'),
        ('getattr(logger, "info_once")("%r", e)', 'getattr(logger, "info_once")("%s", repr(e))'),
        (
            'logger.warning_once(\n        "Failed: %r",  # why\n        e,\n    )',
            'logger.warning_once(\n        "Failed: %s",  # why\n        repr(e),\n    )',
        ),
    ],
)
def test_a_fix_formats_the_argument_first_and_keeps_the_layout(before: str, after: str) -> None:
    assert fixed(in_handler(before)) == in_handler(after)


@pytest.mark.parametrize(
    "call",
    [
        'logger.info_once("%d", e)',  # formatting first would change what %d renders
        'logger.info_once("%(k)s", {"k": e})',  # a mapping, not positions
        'logger.info_once("%s %s", *pair)',
        'logger.info_once("%s", e, extra_arg)',  # logging could not render it before
        'logger.info_once("%\\x72", e)',  # the letter is spelled by an escape
        'logger.info_once(f"{x}: %r", e)',
        'note = functools.partial(logger.info_once, "%r")\n    note(e)',  # the message is elsewhere
        'logger.warning_once("Failed: %r", e)  # warnonce: ok re-raised below',
    ],
)
def test_what_formatting_first_cannot_keep_the_same_is_left_alone(call: str) -> None:
    source = in_handler(call)
    assert fix_source(source, [f for f in findings_in_source(source, "x.py") if f.suppressed is None])[0] == source


def test_every_operator_that_reverts_a_fix_is_undone_by_it() -> None:
    for name in ("eager-repr-revert", "fstring-revert"):
        for example in OPERATORS[name].examples:
            if example.after is None:
                continue
            (mutant,) = apply_operator(name, example.before)
            repaired = fixed(mutant)
            assert repaired == example.before or name == "fstring-revert", (name, repaired)
            assert [f.code for f in findings_in_source(repaired, "x.py")] == []
            assert render_calls(repaired) == render_calls(example.before)


# ---- the message renders byte for byte as before ----------------------------------------------------


class Recorder:
    """A vLLM logger stand-in: each `*_once` call's message as logging renders it (`LogRecord.getMessage`)."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def _once(self, msg: object, *args: object) -> None:
        self.messages.append(logging.LogRecord("x", logging.WARNING, "x.py", 1, msg, args, None).getMessage())

    debug_once = info_once = warning_once = error_once = _once


def render_calls(source: str, exception: BaseException | None = None) -> list[str]:
    """What the source's `*_once` calls log, run in the handler of `exception` (an ImportError by default)."""
    logger = Recorder()
    namespace = {"logger": logger, "describe": lambda x: (type(x).__name__, x.args), "sys": sys, "ignored_msg": "-"}
    raising = exception if exception is not None else ImportError("No module named 'my_plugin._C'")
    code = re.sub(r"^( *)import [\w.]+.*$", r"\1raise RAISING", source, flags=re.MULTILINE)
    code = code.replace("except ImportError as e:", "except BaseException as e:")
    exec(compile(code, "x.py", "exec"), {**namespace, "RAISING": raising})
    return logger.messages


EXCEPTIONS = [
    ImportError("No module named 'vllm._C'", name="vllm._C"),
    ModuleNotFoundError("No module named 'vllm._C_AVX2'"),
    OSError(2, "No such file or directory", "/opt/kernels.so"),
    KeyError("kernel"),
    ValueError("bad ünïcode ✓ and a %s"),
    RuntimeError(),
    Exception("two", 2),
    UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
    SyntaxError("bad", ("f.py", 1, 2, "x y")),
    AttributeError("'NoneType' object has no attribute 'ops'"),
]
TEMPLATES = ["Failed: %s", "Failed: %r", "Failed: %a", "[%-40r]", "[%.12s]", "%10a|", "100%% done: %r", "%s and %r"]
ARGUMENTS = ["e", "(e, 1)", "[e, 2]", "describe(e)", "{'k': e}", "sys.exc_info()[1]", "(e,)"]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(EXCEPTIONS), st.sampled_from(TEMPLATES), st.sampled_from(ARGUMENTS))
def test_a_fixed_call_renders_its_message_byte_for_byte_as_before(
    exception: BaseException, template: str, argument: str
) -> None:
    arguments = ", ".join([argument] * template.replace("%%", "").count("%"))
    source = in_handler(f"logger.warning_once({template!r}, {arguments})")
    after = fixed(source)

    assert after != source
    assert render_calls(after, exception) == render_calls(source, exception)
    assert findings_in_source(after, "x.py") == []  # re-audits clean
    assert fixed(after) == after  # idempotent
    compile(after, "x.py", "exec")


def test_the_message_itself_renders_as_before() -> None:
    source = in_handler("logger.warning_once(e)")
    assert render_calls(fixed(source)) == render_calls(source) == ["No module named 'my_plugin._C'"]


# ---- the command --------------------------------------------------------------------------------------

LEAK = in_handler('logger.warning_once("Failed to import my_plugin._C: %r", e)')
NOISE = 'def helper(x):\n    logger.info_once("%s", x)\n'


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "my_plugin").mkdir()
    (tmp_path / "my_plugin" / "platform.py").write_text(LEAK)
    (tmp_path / "my_plugin" / "helpers.py").write_text(NOISE)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "my_plugin"


def audit(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["audit", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_diff_prints_the_fix_and_changes_nothing(plugin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = audit(capsys, "my_plugin", "--diff")
    assert code == ExitCode.CHECK_FAILED
    assert out.splitlines()[:2] == ["--- a/my_plugin/platform.py", "+++ b/my_plugin/platform.py"]
    assert '-    logger.warning_once("Failed to import my_plugin._C: %r", e)' in out.splitlines()
    assert '+    logger.warning_once("Failed to import my_plugin._C: %s", repr(e))' in out.splitlines()
    assert err == "1 fix(es) would be applied to 1 file(s)\n"
    assert (plugin / "platform.py").read_text() == LEAK


def test_diff_headers_keep_a_file_name_holding_a_newline_on_their_lines(
    plugin: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (plugin / "platform.py").rename(plugin / "plat\nform.py")
    code, out, _ = audit(capsys, "my_plugin", "--diff")
    assert code == ExitCode.CHECK_FAILED
    assert out.splitlines()[:2] == ["--- a/my_plugin/plat\\nform.py", "+++ b/my_plugin/plat\\nform.py"]


def test_fix_writes_the_fix_keeps_the_file_mode_and_reports_what_is_left(
    plugin: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (plugin / "platform.py").chmod(0o640)
    code, out, err = audit(capsys, "my_plugin", "--fix")
    assert code == ExitCode.OK and err == "fixed 1 finding(s) in 1 file(s)\n"
    assert (plugin / "platform.py").read_text() == LEAK.replace('%r", e)', '%s", repr(e))')
    assert stat.S_IMODE((plugin / "platform.py").stat().st_mode) == 0o640
    # the warning in helpers.py is not selected: it is counted, it does not fail
    assert out.startswith("0 failing finding(s); 1 finding(s) in all, 0 live exception(s)")
    assert audit(capsys, "my_plugin", "--diff")[0] == ExitCode.OK  # nothing left to fix
    assert (plugin / "helpers.py").read_text() == NOISE


def test_a_file_under_two_names_is_fixed_once(plugin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two hard links to one file in the folder: the second write found the file changed and said "nothing was
    written" (exit 4) after the first had written it."""
    (plugin / "again.py").hardlink_to(plugin / "platform.py")
    inode = (plugin / "platform.py").stat().st_ino

    code, _, err = audit(capsys, "my_plugin", "--fix")

    assert (code, err) == (ExitCode.OK, "fixed 1 finding(s) in 1 file(s)\n")
    fixed = LEAK.replace('%r", e)', '%s", repr(e))')
    assert (plugin / "platform.py").read_text() == (plugin / "again.py").read_text() == fixed
    assert (plugin / "again.py").stat().st_ino == inode


def test_strict_selects_the_warnings_for_fixing_too(plugin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert audit(capsys, "my_plugin", "--fix", "--strict")[0] == ExitCode.OK
    assert (plugin / "helpers.py").read_text() == NOISE.replace('"%s", x', '"%s", str(x)')


def test_a_finding_the_baseline_accepts_is_not_fixed(plugin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert audit(capsys, "my_plugin", "--write-baseline", "accepted.json")[0] == ExitCode.OK
    assert audit(capsys, "my_plugin", "--baseline", "accepted.json", "--fix")[0] == ExitCode.OK
    assert (plugin / "platform.py").read_text() == LEAK


def test_a_file_that_is_not_utf8_is_left_as_it_is(plugin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    latin = b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + LEAK.encode()
    (plugin / "platform.py").write_bytes(latin)
    code, _, err = audit(capsys, "my_plugin", "--fix")
    assert code == ExitCode.CHECK_FAILED and err == "fixed 0 finding(s) in 0 file(s)\n"
    assert (plugin / "platform.py").read_bytes() == latin


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--fix"], "not the installed vLLM"),
        (["my_plugin", "--fix", "--write-baseline", "b.json"], "do not go together"),
    ],
)
def test_a_fix_that_cannot_be_is_a_usage_error(
    plugin: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    code, out, err = audit(capsys, *argv)
    assert code == ExitCode.USAGE and out == "" and says in err and err.count("\n") == 1


@pytest.mark.parametrize("option", ["--fix", "--diff"])
def test_without_libcst_fixing_says_which_extra_to_install(
    plugin: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    for name in [m for m in sys.modules if m == "libcst" or m.startswith("libcst.")]:
        monkeypatch.setitem(sys.modules, name, None)  # as if libcst were not installed
    for name in ("warnonce_guard.audit.codemod", "warnonce_guard.rule.literals"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    code, out, err = audit(capsys, "my_plugin", option)
    assert code == ExitCode.ENVIRONMENT and out == ""
    assert err == (
        "warnonce-guard: error: `warnonce-guard audit` needs libcst, part of the mutation extra: "
        "pip install 'libcst>=1.1' (or, in a checkout of warnonce-guard, pip install '.[mutation]')\n"
    )
    assert (plugin / "platform.py").read_text() == LEAK


# ---- vLLM 0.29.0's platforms come out as 0.30.0 shipped them ------------------------------------------

PLATFORMS_029 = layout.DATA / "vllm-0.29.0-platforms"
PLATFORMS_030 = layout.DATA / "vllm-0.30.0-platforms"
SITE_MESSAGE = "Failed to import from vllm."


def site_calls(tree: ast.AST) -> list[ast.Call]:
    """The kernel-import sites' logging calls, in source order."""
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and n.args
        and isinstance(n.args[0], ast.Constant)
        and str(n.args[0].value).startswith(SITE_MESSAGE)
    ]
    return sorted(calls, key=lambda n: (n.lineno, n.col_offset))


class _Replace(ast.NodeTransformer):
    def __init__(self, replacements: dict[int, ast.Call]) -> None:
        self.replacements = replacements

    def visit_Call(self, node: ast.Call) -> ast.AST:
        return self.replacements.get(id(node), self.generic_visit(node))


def test_vllm_0_29_0_platforms_are_fixed_into_the_six_calls_vllm_0_30_0_shipped_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    platforms = tmp_path / "vllm" / "platforms"
    platforms.mkdir(parents=True)
    for data in PLATFORMS_029.glob("*.py.txt"):
        shutil.copyfile(data, platforms / data.name.removesuffix(".txt"))
    before = {p.name: p.read_text(encoding="utf-8") for p in platforms.iterdir()}
    monkeypatch.chdir(tmp_path)

    code, _, err = audit(capsys, "vllm/platforms", "--fix")
    after = {p.name: p.read_text(encoding="utf-8") for p in platforms.iterdir()}

    assert code == ExitCode.OK and err == "fixed 6 finding(s) in 3 file(s)\n"
    assert sorted(name for name in before if after[name] != before[name]) == ["cpu.py", "cuda.py", "interface.py"]
    shipped_calls = 0
    for name in ("cpu.py", "cuda.py", "interface.py"):
        old, new = ast.parse(before[name]), ast.parse(after[name])
        shipped = site_calls(ast.parse((PLATFORMS_030 / f"{name}.txt").read_text(encoding="utf-8")))
        assert [ast.dump(c) for c in site_calls(new)] == [ast.dump(c) for c in shipped]  # the same AST
        replaced = _Replace({id(o): s for o, s in zip(site_calls(old), shipped, strict=True)}).visit(old)
        assert ast.dump(replaced) == ast.dump(new)  # and nothing else changed
        shipped_calls += len(shipped)
    assert shipped_calls == 6
    assert audit(capsys, "vllm/platforms", "--diff")[0] == ExitCode.OK  # idempotent
    assert all(f.code != "WOG001" for name in after for f in findings_in_source(after[name], name))


def test_the_platform_data_is_vllms_unchanged() -> None:
    readme = (layout.DATA / "README.md").read_text(encoding="utf-8")
    for folder in (PLATFORMS_029, PLATFORMS_030):
        assert folder.name in readme
        for data in folder.iterdir():
            assert data.name.endswith(".py.txt"), data  # not a module of ours: ruff and pytest leave it alone
            compile(data.read_text(encoding="utf-8"), data.name, "exec")
    assert sorted(p.name for p in PLATFORMS_030.iterdir()) == ["cpu.py.txt", "cuda.py.txt", "interface.py.txt"]
