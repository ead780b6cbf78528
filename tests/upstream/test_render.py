"""The pieces of an export, in process and without vLLM: a site's case, the module's text, reading one back."""

from __future__ import annotations

import ast
import enum
import signal
import textwrap
from dataclasses import replace

import pytest
from warnonce_guard.rule.site_row import Site
from warnonce_guard.rule.sites import sites_in_source
from warnonce_guard.upstream.cases import (
    CannotExport,
    Case,
    Export,
    blocked,
    case_of,
    python_literal,
    top_level_kernels,
    value_source,
    warning_template,
)
from warnonce_guard.upstream.export import difference, is_export, listed_cases
from warnonce_guard.upstream.render import (
    case_lines,
    import_block,
    patch,
    render,
    stand_ins_lines,
)
from warnonce_guard.upstream.words import BLOCKED_CLASS, HEADER, MARKER


def site_of(call: str, kernel: str = "vllm._C", receiver: str = "logger", method: bool = True) -> Site:
    """The one site of a platform module whose handler makes `call` (with `e` the exception)."""
    body = f"try:\n    import {kernel}  # noqa: F401\nexcept ImportError as e:\n    {call}\n"
    if method:
        body = "class Platform:\n    @classmethod\n    def import_kernels(cls):\n" + textwrap.indent(body, " " * 8)
    source = f"import logging\n{receiver} = logging.getLogger(__name__)\n{body}"
    (site,) = sites_in_source(source, "vllm/platforms/toy.py", "vllm.platforms.toy")
    return site


@pytest.mark.parametrize(
    ("call", "template"),
    [
        ('logger.warning_once("Failed: %s", repr(e))', "Failed: {error!r}"),
        ('logger.warning_once("Failed: %r", e)', "Failed: {error!r}"),  # the bug renders the same text
        ('logger.warning_once(f"Failed: {e!r}")', "Failed: {error!r}"),
        ('logger.warning_once("Failed: %s", e.msg)', "Failed: {error}"),
        ('logger.warning_once("Failed {x}: %s", str(e))', "Failed {{x}}: {error}"),  # braces of its own, kept
    ],
)
def test_a_sites_text_becomes_a_template_of_the_blocked_exception(call: str, template: str) -> None:
    site = site_of(call)
    assert warning_template(site) == template
    assert template.format(error=blocked("vllm._C")) == template.format(error=blocked("vllm._C"))


@pytest.mark.parametrize(
    "call",
    ['logger.warning_once("Failed: %s", describe(e))', 'logger.warning_once("Failed: %s", type(e).__name__)'],
)
def test_a_text_without_the_exception_in_it_cannot_be_exported(call: str) -> None:
    with pytest.raises(CannotExport):
        warning_template(site_of(call))


def test_a_case_says_what_runs_the_site_and_what_it_logs() -> None:
    case = case_of(site_of('logger.warning_once("Failed: %s", repr(e))'), None)
    assert case == Case(
        id="toy-Platform.import_kernels-vllm._C",
        site="vllm/platforms/toy.py:9",
        call="vllm.platforms.toy:Platform.import_kernels",
        kernel="vllm._C",
        warning="Failed: {error!r}",
        steer=(),
        imports=(),
    )
    driven = case_of(replace(site_of('logger.warning_once("x: %r", e)'), driver="plugin.p:MyPlatform"), None)
    assert (driven.id, driven.call, driven.caller) == (case.id, "plugin.p:MyPlatform.import_kernels", "plugin.p")


@pytest.mark.parametrize(
    ("site", "why"),
    [
        (site_of('logger.warning_once("x: %s", repr(e))', method=False), "runs when its module is imported"),
        (site_of('log.warning_once("x: %s", repr(e))', receiver="log"), "logs through `log`"),
        (replace(site_of('logger.warning_once("x: %s", repr(e))'), grouped=True), "an `except\\*`"),
    ],
)
def test_a_site_the_exported_test_cannot_drive_is_refused(site: Site, why: str) -> None:
    with pytest.raises(CannotExport, match=why):
        case_of(site, None)


class Arch(enum.Enum):
    X86 = 1


def test_steering_values_are_written_as_source_with_their_imports() -> None:
    assert value_source(True) == ("True", None)
    assert value_source("x86") == ('"x86"', None)
    assert value_source(signal.Signals.SIGINT) == ("Signals.SIGINT", ("signal", "Signals"))
    assert value_source(Arch.X86) == ("Arch.X86", (__name__, "Arch"))
    with pytest.raises(CannotExport, match="no source form"):
        value_source(object())
    local = enum.Enum("Local", "A")
    with pytest.raises(CannotExport):
        value_source(local.A)  # no module attribute leads to it


def test_strings_are_written_as_ruff_format_writes_them() -> None:
    assert python_literal("plain") == '"plain"'
    assert python_literal("it's") == '"it\'s"'
    assert python_literal('say "x"') == "'say \"x\"'"
    assert python_literal("tab\there") == '"tab\\there"'


def test_kernel_modules_imported_at_a_modules_top_are_found_by_the_site_rule() -> None:
    source = textwrap.dedent(
        """
        import contextlib
        import vllm._C_stable_libtorch  # noqa
        from vllm import _flash_C, utils
        with contextlib.suppress(ImportError):
            import vllm._qutlass_C  # noqa
        from . import _local_C

        def later():
            import vllm._C_later
        """
    )
    kernels = top_level_kernels(source, "vllm/platforms/cuda.py", "vllm.platforms.cuda", ("vllm",))
    assert kernels == ("vllm._C_stable_libtorch", "vllm._flash_C", "vllm._qutlass_C", "vllm.platforms._local_C")


def test_stand_ins_are_broken_only_where_a_line_is_long() -> None:
    assert stand_ins_lines(()) == ["STAND_INS = {}"]
    assert stand_ins_lines((("m", ("k",)),)) == ['STAND_INS = {"m": ("k",)}']
    long = ("vllm.platforms.cuda", ("vllm._C_stable_libtorch", "vllm._qutlass_C", "vllm._C"))
    assert stand_ins_lines((long,)) == [
        "STAND_INS = {",
        '    "vllm.platforms.cuda": ("vllm._C_stable_libtorch", "vllm._qutlass_C", "vllm._C"),',
        "}",
    ]
    longer = ("vllm.platforms.cuda", (*long[1], "vllm._flash_C"))
    assert stand_ins_lines((longer,))[1:3] == ['    "vllm.platforms.cuda": (', '        "vllm._C_stable_libtorch",']


def export_of(*cases: Case, first_party: str = "vllm") -> Export:
    return Export(cases, (), first_party, "a toy")


CASE = Case(
    "toy-Platform.import_kernels-vllm._C",
    "vllm/platforms/toy.py:8",
    "vllm.platforms.toy:Platform.import_kernels",
    "vllm._C",
    "Failed: {error!r}",
    (("Platform.get_arch()", "Arch.X86"),),
    (("vllm.platforms.toy", "Arch"),),
)


def test_imports_follow_isort_sections_with_the_target_first_party() -> None:
    assert import_block(export_of(CASE)).split("\n\n")[1:] == [
        "import pytest",
        "import vllm.logger\nfrom vllm.platforms.toy import Arch",
    ]
    plugin = replace(CASE, imports=(("my_plugin.p", "Kind"), ("vllm.platforms.toy", "Arch")))
    assert import_block(export_of(plugin, first_party="my_plugin")).split("\n\n")[1:] == [
        "import pytest\nimport vllm.logger\nfrom vllm.platforms.toy import Arch",
        "from my_plugin.p import Kind",
    ]


def test_a_case_is_one_argument_a_line_and_a_long_steer_is_broken() -> None:
    assert case_lines(CASE)[4:6] == ['        "Failed: {error!r}",', '        {"Platform.get_arch()": Arch.X86},']
    steer = tuple((f"torch.cpu._is_feature_{i}_supported()", "True") for i in range(3))
    assert case_lines(replace(CASE, steer=steer))[5:7] == [
        "        {",
        '            "torch.cpu._is_feature_0_supported()": True,',
    ]
    long = replace(CASE, warning="x" * 90)
    assert case_lines(long)[4].endswith(",  # noqa: E501")  # no formatter can split a string


def test_the_exception_the_module_raises_is_the_one_its_texts_were_worked_out_with() -> None:
    module = ast.parse(render(export_of(CASE)))
    wanted = {BLOCKED_CLASS, "_blocked"}
    code = ast.Module([node for node in module.body if getattr(node, "name", None) in wanted], type_ignores=[])
    namespace: dict[str, object] = {}
    exec(compile(code, "<export>", "exec"), namespace)
    made = namespace["_blocked"]("vllm._C")  # type: ignore[operator]
    assert repr(made) == repr(blocked("vllm._C")) and isinstance(made, ImportError)
    assert f"Failed: {made!r}" == f"Failed: {blocked('vllm._C')!r}"


def test_a_render_reads_back_as_its_cases_and_carries_its_header() -> None:
    text = render(export_of(CASE))
    assert text.startswith("# SPDX-License-Identifier: Apache-2.0\n") and HEADER in text
    assert render(export_of(CASE, first_party="plugin")).startswith(HEADER)
    assert [(c.id, c.site, c.kernel) for c in listed_cases(text) or []] == [(CASE.id, CASE.site, CASE.kernel)]
    assert is_export(text) and is_export(patch(export_of(CASE), text)) and not is_export("x = 1\n")
    assert listed_cases(patch(export_of(CASE), text)) == listed_cases(text)


def test_difference_names_each_case_new_gone_or_changed_by_id_then_any_other_change() -> None:
    old = render(export_of(CASE))
    other = replace(CASE, id="toy-Platform.import_kernels-vllm._C_AVX2", kernel="vllm._C_AVX2", site="v/t.py:20")
    moved = replace(CASE, site="vllm/platforms/toy.py:9")
    reworded = replace(CASE, warning="Failed again: {error!r}", steer=(("Platform.get_arch()", "Arch.ARM"),))
    assert difference(old, old) is None
    assert difference(old, render(export_of(CASE, other))) == (
        "case toy-Platform.import_kernels-vllm._C_AVX2 is new (v/t.py:20); re-export"
    )
    assert difference(render(export_of(CASE, other)), old) == (
        "case toy-Platform.import_kernels-vllm._C_AVX2 is gone (v/t.py:20); re-export"
    )
    assert difference(old, render(export_of(moved))) == (
        "case toy-Platform.import_kernels-vllm._C changed: its site (vllm/platforms/toy.py:8 -> "
        "vllm/platforms/toy.py:9); re-export"
    )
    assert difference(render(export_of(other, CASE)), render(export_of(reworded))) == (
        "case toy-Platform.import_kernels-vllm._C_AVX2 is gone (v/t.py:20); "
        "case toy-Platform.import_kernels-vllm._C changed: its warning, its steer; re-export"
    )
    edited = old.replace("gc.collect()", "gc.collect()  # edited")
    assert difference(edited, old) == "its text differs from a fresh export outside its cases; re-export"
    assert difference(f"{MARKER}\nCASES = 1\n", old) == "its case table cannot be read; re-export"
