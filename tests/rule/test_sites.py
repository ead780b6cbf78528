"""Site discovery on synthetic sources: what counts as a kernel-import site, and what is recorded about it."""

from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path

import libcst
import pytest
from libcst.metadata.position_provider import PositionProvidingCodegenState
from warnonce_guard.common.errors import ExitCode, Interrupted, SourceDoesNotParse
from warnonce_guard.rule.liveness import argument_kind_of_source
from warnonce_guard.rule.site_row import Condition, Site
from warnonce_guard.rule.site_rule import anchor, dotted, imported_modules, names_a_kernel, resolve_relative
from warnonce_guard.rule.sites import discover, might_hold_site, sites_in_source

from tests.faults import as_nobody, no_longer_than, shared_tree
from tests.toy import INTERFACE, add_odd_files, make_tree

FILE, MODULE = "vllm/platforms/x.py", "vllm.platforms.x"


def rows(source: str, file: str = FILE, module: str = MODULE, package: str = "vllm") -> list[Site]:
    """Every row discovery gives: one per recognised *_once call, or one per guarded import without one."""
    return sites_in_source(textwrap.dedent(source), file, module, package)


def find(source: str, file: str = FILE, module: str = MODULE, package: str = "vllm") -> list[Site]:
    """The rows whose call discovery recognises (what the rule's recognition of calls decides: the columns)."""
    return [site for site in rows(source, file, module, package) if site.recognised]


def only(source: str, **where: str) -> Site:
    found = find(source, **where)
    assert len(found) == 1, found
    return found[0]


def guarded(body: str, handler: str = 'logger.warning_once("Failed: %s", repr(e))', name: str = "e") -> str:
    """A method whose `try` runs `body` and whose `except ImportError as name` runs `handler`."""
    return (
        "class P:\n"
        "    @classmethod\n"
        "    def import_kernels(cls):\n"
        "        try:\n"
        f"            {body}\n"
        f"        except ImportError as {name}:\n"
        f"            {handler}\n"
    )


# ---- import forms ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "kernel"),
    [
        ("import vllm._C  # noqa: F401", "vllm._C"),
        ("from vllm import _C  # noqa: F401", "vllm._C"),
        ("from vllm._C import ops  # noqa: F401", "vllm._C"),
        ("from vllm import (_C,)  # noqa: F401", "vllm._C"),
        ('importlib.import_module("vllm._C")', "vllm._C"),
        ("import vllm._C_AVX2  # noqa: F401", "vllm._C_AVX2"),
        ("import vllm._moe_C_stable_libtorch  # noqa: F401", "vllm._moe_C_stable_libtorch"),
    ],
)
def test_every_import_form_names_its_kernel_module(body: str, kernel: str) -> None:
    assert only(guarded(body)).kernel_module == kernel


@pytest.mark.parametrize(
    "body",
    [
        "from vllm import (\n                _C,\n            )",
        'importlib.import_module(\n                "vllm._C"\n            )',
    ],
    ids=["from-import-in-parentheses", "import-module-call"],
)
def test_kernel_import_spanning_lines_is_found(body: str) -> None:
    assert only(guarded(body)).kernel_module == "vllm._C"


@pytest.mark.parametrize(
    ("body", "file", "module", "kernel"),
    [
        ("from . import _C", FILE, MODULE, "vllm.platforms._C"),
        ("from .. import _C", FILE, MODULE, "vllm._C"),
        ("from . import _C", "vllm/platforms/__init__.py", "vllm.platforms", "vllm.platforms._C"),
    ],
    ids=["sibling", "parent", "in-package-init"],
)
def test_relative_import_resolves_against_the_files_package(body: str, file: str, module: str, kernel: str) -> None:
    assert only(guarded(body), file=file, module=module).kernel_module == kernel


@pytest.mark.parametrize("name", ["e", "err", "exc"])
def test_any_exception_name_is_followed(name: str) -> None:
    site = only(guarded("import vllm._C", f'logger.warning_once("Failed: %r", {name})', name=name))

    assert site.exc_name == name
    assert site.form == "live"


def test_site_records_message_arguments_receiver_and_lines() -> None:
    site = only(guarded("import vllm._C", 'self_logger.warning_once("Failed %s in %s", repr(e), "x")'))

    assert (site.file, site.module, site.qualname) == (FILE, MODULE, "P.import_kernels")
    assert site.message == "Failed %s in %s"
    assert site.args == ("repr(e)", '"x"')
    assert site.exc_arg_index == 0
    assert site.receiver == "self_logger"
    assert (site.import_line, site.line) == (5, 7)
    assert site.id == "vllm/platforms/x.py::P.import_kernels::vllm._C"
    assert "::" not in site.test_id and "/" not in site.test_id


def test_exception_in_a_later_argument_records_its_index() -> None:
    site = only(guarded("import vllm._C", 'logger.warning_once("%s: %s", "vllm._C", e)'))

    assert site.exc_arg_index == 1
    assert site.form == "live"


def test_multi_line_call_is_located_at_its_first_line() -> None:
    source = """
        def import_kernels():
            try:
                import vllm._C
            except ImportError as e:
                logger.warning_once(
                    "Failed to import from vllm._C: %s",
                    repr(e),
                )
    """
    site = only(source)

    assert (site.import_line, site.line, site.end_line) == (4, 6, 9)
    assert site.qualname == "import_kernels"


# ---- branches -----------------------------------------------------------------------------------------

CPU_LIKE = """
class CpuPlatform(Platform):
    @classmethod
    def import_kernels(cls) -> None:
        if Platform.get_cpu_architecture() in (CpuArchEnum.X86,):
            ignored_msg = "dynamic module does not define module export function"
            if torch.cpu._is_avx512_supported():
                if torch.cpu._is_avx512_bf16_supported():
                    try:
                        import vllm._C  # noqa: F401
                    except ImportError as e:
                        logger.warning_once("Failed to import from vllm._C: %s", repr(e))
                else:
                    try:
                        import vllm._C_AVX512  # noqa: F401
                    except ImportError as e:
                        if ignored_msg not in e.msg:
                            logger.warning_once("Failed to import from vllm._C_AVX512: %s", repr(e))
            else:
                try:
                    import vllm._C_AVX2  # noqa: F401
                except ImportError as e:
                    if ignored_msg not in e.msg:
                        logger.warning_once("Failed to import from vllm._C_AVX2: %s", repr(e))
        else:
            try:
                import vllm._C  # noqa: F401
            except ImportError as e:
                logger.warning_once("Failed to import from vllm._C: %s", repr(e))
"""

ARCH = "Platform.get_cpu_architecture() in (CpuArchEnum.X86,)"
AVX512 = "torch.cpu._is_avx512_supported()"
BF16 = "torch.cpu._is_avx512_bf16_supported()"
IGNORED = "ignored_msg not in e.msg"


def test_nested_branches_are_recorded_with_the_truth_value_each_site_needs() -> None:
    by_id = {site.id.split("::", 1)[1].split(" [")[0] + str(site.line): site.conditions for site in find(CPU_LIKE)}
    lines = sorted(site.line for site in find(CPU_LIKE))

    assert by_id == {
        f"CpuPlatform.import_kernels::vllm._C{lines[0]}": (
            Condition(ARCH, True),
            Condition(AVX512, True),
            Condition(BF16, True),
        ),
        f"CpuPlatform.import_kernels::vllm._C_AVX512{lines[1]}": (
            Condition(ARCH, True),
            Condition(AVX512, True),
            Condition(BF16, False),
            Condition(IGNORED, True, in_handler=True),
        ),
        f"CpuPlatform.import_kernels::vllm._C_AVX2{lines[2]}": (
            Condition(ARCH, True),
            Condition(AVX512, False),
            Condition(IGNORED, True, in_handler=True),
        ),
        f"CpuPlatform.import_kernels::vllm._C{lines[3]}": (Condition(ARCH, False),),
    }


def test_elif_chain_negates_every_earlier_test() -> None:
    source = """
        def import_kernels():
            if a.first():
                pass
            elif a.second():
                pass
            else:
                try:
                    import vllm._C
                except ImportError as e:
                    logger.warning_once("%s", repr(e))
    """
    assert only(source).conditions == (Condition("a.first()", False), Condition("a.second()", False))


def test_handler_else_branch_is_recorded_negated_in_handler() -> None:
    handler = "\n".join(
        [
            'if e.msg.startswith("x"):',
            "                pass",
            "            else:",
            '                logger.info("%r", e)',
        ]
    )

    assert only(guarded("import vllm._C", handler)).conditions == (Condition('e.msg.startswith("x")', False, True),)


@pytest.mark.parametrize(
    ("handler", "conditions"),
    [
        ("if cls.a:\n                pass\n            elif cls.b:\n                logger.warning_once('F: %r', e)",
         (Condition("cls.a", False, True), Condition("cls.b", True, True))),
        ("if logger.warning_once('F: %r', e):\n                pass", ()),
        ("if cls.a:\n                pass\n            elif logger.warning_once('F: %r', e):\n                pass\n"
         "            else:\n                pass", ()),
    ],
    ids=["in-an-elif", "an-ifs-test", "an-elifs-test"],
)  # fmt: skip
def test_a_call_in_a_handlers_elif_needs_every_earlier_test_false_and_one_in_a_test_needs_none(
    handler: str, conditions: tuple[Condition, ...]
) -> None:
    assert only(guarded("import vllm._C", handler)).conditions == conditions


def test_branches_of_the_enclosing_function_do_not_leak_into_a_nested_def() -> None:
    source = """
        if HAS_CUDA:
            class P:
                def import_kernels(self):
                    try:
                        import vllm._C
                    except ImportError as e:
                        logger.warning_once("%s", repr(e))
    """
    assert only(source).conditions == ()


def test_imports_of_one_module_in_one_function_are_told_apart_by_their_branch_never_by_position() -> None:
    ids = [site.id for site in find(CPU_LIKE)]
    prefix = "vllm/platforms/x.py::CpuPlatform.import_kernels::vllm._C "

    assert f"{prefix}[{ARCH} / {AVX512} / {BF16}]" in ids
    assert f"{prefix}[not ({ARCH})]" in ids
    # the first one gone: the other keeps its id (a positional index would have renumbered it)
    renamed = CPU_LIKE.replace("import vllm._C  # noqa: F401", "import vllm._C_X  # noqa: F401", 1)
    assert f"{prefix}[not ({ARCH})]" in [s.id for s in find(renamed)]


def test_two_tries_of_one_branch_are_told_apart_by_a_disambiguator() -> None:
    source = """
        def import_kernels():
            try:
                import vllm._C
            except ImportError as e:
                logger.warning_once("a: %s", repr(e))
            try:
                import vllm._C
            except ImportError:
                pass
    """
    ids = [site.id for site in rows(source)]
    assert ids == ["vllm/platforms/x.py::import_kernels::vllm._C", "vllm/platforms/x.py::import_kernels::vllm._C#2"]


def test_ids_survive_a_shift_of_lines() -> None:
    before, after = find(CPU_LIKE), find("\n\n\n" + CPU_LIKE)

    assert [s.id for s in after] == [s.id for s in before]
    assert [s.line for s in after] == [s.line + 3 for s in before]


def test_site_in_a_subclass_override_is_qualified_by_the_subclass() -> None:
    source = """
        class Base:
            @classmethod
            def import_kernels(cls):
                pass

        class Sub(Base):
            @classmethod
            def import_kernels(cls):
                try:
                    import vllm._C
                except ImportError as e:
                    logger.warning_once("%r", e)
    """
    site = only(source)

    assert site.qualname == "Sub.import_kernels"
    assert site.function_name == "import_kernels"


def test_module_level_site_is_qualified_as_module() -> None:
    site = only("try:\n    import vllm._C\nexcept ImportError as e:\n    logger.warning_once('%r', e)\n")

    assert site.qualname == "<module>"


def test_sites_outside_functions_keep_their_branch_and_class_and_lines() -> None:
    source = """\
        import vllm

        # kernels with AVX2, where the CPU has it
        if HAS_AVX2:
            try:
                import vllm._C_AVX2
            except ImportError as e:
                logger.warning("no avx2: %r", e)


        class Platform:
            try:
                import vllm._C
            except ImportError as e:
                logger.warning_once("no kernels: %s", repr(e))
        """

    found = find(source)

    assert [(s.qualname, s.line, s.import_line, [(c.expr, c.want) for c in s.conditions]) for s in found] == [
        ("<module>", 8, 6, [("HAS_AVX2", True)]),
        ("Platform", 15, 13, []),
    ]


# ---- logging methods and forms ----------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["warning_once", "info_once", "debug_once", "error_once"])
def test_every_once_method_is_a_cached_site(method: str) -> None:
    site = only(guarded("import vllm._C", f'logger.{method}("Failed: %s", repr(e))'))

    assert site.log_method == method
    assert site.cached


@pytest.mark.parametrize("method", ["warning", "info", "error", "exception"])
def test_plain_logging_method_is_listed_but_not_cached(method: str) -> None:
    site = only(guarded("import vllm._C", f'logger.{method}("Failed: %s", repr(e))'))

    assert site.log_method == method
    assert not site.cached
    assert site.to_json()["cached"] is False


@pytest.mark.parametrize(
    "arg",
    ["repr(e)", "str(e)", 'f"{e}"', '"%s" % e', '"{}".format(e)', "e.msg", "e.name", "e.args", "type(e)"],
)
def test_exception_formatted_before_the_call_or_only_its_data_is_eager(arg: str) -> None:
    assert only(guarded("import vllm._C", f'logger.warning_once("Failed: %s", {arg})')).form == "eager"


@pytest.mark.parametrize("arg", ["e", "e.__traceback__", "(e,)", "foo(e)", "e.with_traceback(None)"])
def test_exception_object_reaching_the_call_is_live(arg: str) -> None:
    assert only(guarded("import vllm._C", f'logger.warning_once("Failed: %s", {arg})')).form == "live"


@pytest.mark.parametrize(
    ("call", "form"),
    [
        ('logger.warning_once(f"Failed to import from vllm._C: {e!r}")', "eager"),
        ('logger.warning_once("Failed: " + repr(e))', "eager"),
        ("logger.warning_once(e)", "live"),
        ('logger.warning_once("Failed: %s", repr(e), exc_info=e)', "live"),
        ('logger.warning_once("Failed: %s", repr(e), scope="local")', "eager"),
    ],
    ids=["fstring-message", "concatenated-message", "exception-as-message", "exc-info-keyword", "scope-keyword"],
)
def test_the_exception_in_the_message_or_a_keyword_makes_a_site_with_the_policys_form(call: str, form: str) -> None:
    site = only(guarded("import vllm._C", call))
    assert (site.form, site.exc_arg_index) == (form, 0 if "repr(e)," in call else -1)


def test_one_live_argument_makes_the_site_live() -> None:
    assert only(guarded("import vllm._C", 'logger.warning_once("%s %r", repr(e), e)')).form == "live"


# ---- what is not a site ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        guarded("import vllm._custom_ops  # noqa: F401"),
        guarded("import numpy  # noqa: F401"),
        guarded("import other._C  # noqa: F401"),
        guarded("import vllm._C").replace("except ImportError", "except ValueError"),
        guarded("import vllm._C", 'print("Failed: %s" % e)'),
        "import vllm._C\nlogger.warning_once('%r', e)\n",
        "def f():\n    import vllm._C\n    logger.warning_once('%r', e)\n",
    ],
    ids=[
        "custom-ops",
        "numpy",
        "other-package",
        "catches-value-error",
        "not-a-logger-call",
        "module-level-outside-try",
        "function-outside-try",
    ],
)
def test_not_a_site(source: str) -> None:
    assert find(source) == []


@pytest.mark.parametrize(
    ("handler", "form", "logs_exception"),
    [
        ('logger.warning_once("Failed to import vllm._C")', "eager", False),
        ('logger.warning_once("Failed: %s", other)', "unknown", False),
        ('logger.warning_once("Failed: %r", sys.exc_info()[1])', "live", True),
        ('logger.warning_once("Failed: %s", repr(e))', "eager", True),
        ("logger.warning_once()", "eager", False),  # it raises TypeError (no message): still the handler's call
    ],
    ids=["no-exception-argument", "another-name", "sys-exc-info", "formatted", "no-argument"],
)
def test_every_once_call_a_kernel_import_handler_runs_is_a_site_whatever_it_passes(
    handler: str, form: str, logs_exception: bool
) -> None:
    site = only(guarded("import vllm._C", handler))
    assert (site.form, site.logs_exception, site.cached) == (form, logs_exception, True)


def test_a_handler_without_a_name_has_sites_too() -> None:
    source = guarded("import vllm._C", 'logger.warning_once("Failed: %r", sys.exc_info()[1])')
    site = only(source.replace("except ImportError as e:", "except ImportError:"))
    assert (site.exc_name, site.form) == ("", "live")


@pytest.mark.parametrize(
    "except_clause",
    ["except ModuleNotFoundError as e:", "except (OSError, ImportError) as e:", "except Exception as e:"],
)
def test_handlers_that_catch_import_error_count(except_clause: str) -> None:
    source = guarded("import vllm._C").replace("except ImportError as e:", except_clause)

    assert len(find(source)) == 1


@pytest.mark.parametrize(
    "except_clause", ["except:", "except _ERRORS as e:", "except (OSError, errors.KernelMissing) as e:"]
)
def test_a_handler_the_source_cannot_tell_from_one_catching_import_error_is_a_site(except_clause: str) -> None:
    """A bare `except:` catches the blocked import; a class the source only names may: the guard's drive decides.
    Dropping either made a leak at the site a silent pass."""
    source = guarded("import vllm._C", 'logger.warning_once("Failed: %r", sys.exc_info()[1])')

    (site,) = find(source.replace("except ImportError as e:", except_clause))

    assert (site.kernel_module, site.form) == ("vllm._C", "live")


def test_a_handler_of_builtin_exceptions_that_do_not_catch_import_error_is_no_site() -> None:
    source = guarded("import vllm._C").replace("except ImportError as e:", "except (OSError, KeyError) as e:")

    assert rows(source) == []


# ---- the prefilter and parse errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        guarded("import vllm._C"),
        guarded("from vllm._C import ops"),
        guarded('importlib.import_module("vllm._C_AVX2")'),
        guarded('__import__("vllm._C_AVX2")'),
        "try:\n    from vllm import (\n        _C,\n    )\nexcept ImportError:\n    pass\n",
    ],
    ids=["import", "from-kernel-module", "import-module", "dunder-import", "parenthesised"],
)
def test_prefilter_keeps_files_that_might_hold_a_site(source: str) -> None:
    assert might_hold_site(source)


@pytest.mark.parametrize(
    "source",
    ["import vllm._C\n", guarded("import numpy"), "try:\n    x = vllm_C\nexcept ImportError:\n    pass\n"],
    ids=["no-except", "no-kernel-import", "kernel-name-not-imported"],
)
def test_prefilter_skips_files_that_cannot_hold_a_site(source: str) -> None:
    assert not might_hold_site(source)


def test_prefilter_skips_the_parse_of_a_broken_file_without_sites() -> None:
    assert find("def broken(:\n") == []


@pytest.mark.parametrize(
    ("broken", "line"),
    [
        (guarded("import vllm._C)"), 5),
        (guarded("import vllm._C").replace("except ImportError as e:", "except ImportError as e"), 6),
        ("\0" + guarded("import vllm._C"), 1),  # CPython's SyntaxError has no line for it: libcst's
    ],
    ids=["tokenizer-error", "parser-error", "null-byte"],
)
def test_source_that_does_not_parse_names_file_and_line(broken: str, line: int) -> None:
    with pytest.raises(SourceDoesNotParse, match=rf"^vllm/platforms/x\.py:{line}: does not parse"):
        find(broken)


# ---- records and the tree --------------------------------------------------------------------------------


def test_site_round_trips_through_json() -> None:
    for site in find(CPU_LIKE):
        data = json.loads(json.dumps(site.to_json()))

        assert data["id"] == site.id
        assert Site.from_json(data) == site


SITE_FILE = """\
def import_kernels():
    try:
        import vllm._C
    except ImportError as e:
        logger.warning_once("%r", e)
"""


def test_discover_finds_sites_inside_the_package_sorted_by_file_and_line(tmp_path: Path) -> None:
    files = {
        "vllm/__init__.py": "",
        "vllm/platforms/__init__.py": "",
        "vllm/platforms/z.py": SITE_FILE,
        "vllm/platforms/cpu.py": SITE_FILE + "\n\n" + SITE_FILE.replace("import_kernels", "again"),
        "vllm/platforms/cuda.py": "\n" * 5 + SITE_FILE,
        "vllm/platforms/plain.py": "import os\n",
        "other/platforms/x.py": SITE_FILE,
        "setup.py": SITE_FILE,
    }
    for relative, text in files.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text, encoding="utf-8")

    found = discover(tmp_path)

    assert [(s.file, s.line, s.qualname) for s in found] == [
        ("vllm/platforms/cpu.py", 5, "import_kernels"),
        ("vllm/platforms/cpu.py", 12, "again"),
        ("vllm/platforms/cuda.py", 10, "import_kernels"),
        ("vllm/platforms/z.py", 5, "import_kernels"),
    ]
    assert {s.module for s in found} == {"vllm.platforms.cpu", "vllm.platforms.cuda", "vllm.platforms.z"}


def test_discovery_decodes_only_the_files_whose_bytes_hold_an_except(tmp_path: Path) -> None:
    """A file without the word cannot hold a site: not even decoded (one Python could not read is no error here);
    one with it is read as Python reads it, its coding line included, and one that is no text names itself."""
    package = tmp_path / "vllm" / "platforms"
    package.mkdir(parents=True)
    (package / "binary.py").write_bytes(b"# \xff\xfe not text, no handler\nx = 1\n")
    latin = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + SITE_FILE
    (package / "latin.py").write_bytes(latin.encode("latin-1"))
    assert [(s.file, s.qualname) for s in discover(tmp_path)] == [("vllm/platforms/latin.py", "import_kernels")]

    (package / "broken.py").write_bytes(b"try:\n    pass\nexcept ImportError:\n    x = '\xff'\n")
    with pytest.raises(SourceDoesNotParse, match=r"broken\.py: not utf-8 text"):
        discover(tmp_path)


def test_discover_takes_another_package_name(tmp_path: Path) -> None:
    (tmp_path / "toyllm").mkdir()
    (tmp_path / "toyllm" / "p.py").write_text(guarded("import toyllm._C"), encoding="utf-8")

    (site,) = discover(tmp_path, package="toyllm")

    assert (site.file, site.module, site.kernel_module) == ("toyllm/p.py", "toyllm.p", "toyllm._C")


def test_a_signal_while_discovery_records_positions_stays_the_interrupt_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """libcst's position recording turned the interrupt into a chain of KeyErrors (`sites`, `guards`: exit 70)."""

    def signalled(state: PositionProvidingCodegenState, value: str) -> None:  # where the handler would raise
        raise Interrupted(ExitCode.INTERRUPTED)

    monkeypatch.setattr(PositionProvidingCodegenState, "add_token", signalled)
    with pytest.raises(Interrupted):
        sites_in_source(INTERFACE, "vllm/platforms/interface.py", "vllm.platforms.interface")


def test_discovery_skips_what_is_no_file_to_read_with_a_note_and_never_waits_on_a_fifo(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A FIFO named *.py hung `sites`, `guards` and `mutate` for ever; a dangling symlink, a loop or a directory
    named x.py was a traceback (exit 70)."""
    tree = make_tree(tmp_path / "tree")
    odd = add_odd_files(tree)
    with no_longer_than(20):
        sites = discover(tree)
    assert [site.file for site in sites] == ["vllm/platforms/interface.py"]
    noted = sorted(record.getMessage() for record in caplog.records)
    modules = {path: what for path, what in odd.items() if path.suffix == ".py"}
    assert noted == sorted(f"skipped {path}: {what}, not a file to read" for path, what in modules.items())


def test_a_site_file_this_user_may_not_read_is_exit_5_naming_it() -> None:
    with shared_tree() as tree:
        site_file = tree / "vllm" / "platforms" / "interface.py"
        site_file.chmod(0o600)
        discover(tree)  # as root: it reads

        def discover_as_user() -> str:
            try:
                discover(tree)
            except SourceDoesNotParse as err:
                return str(err)
            return "discovered"

        said = as_nobody(discover_as_user)
    assert said.startswith(f"{site_file}: cannot be read (Permission denied); make it readable")


def test_every_import_error_handler_of_one_try_has_its_sites() -> None:
    source = textwrap.dedent(
        """\
        def import_kernels():
            try:
                import vllm._C
            except ModuleNotFoundError as missing:
                logger.warning_once("Missing: %r", missing)
            except ImportError as broken:
                logger.warning_once("Broken: %r", broken)
        """
    )
    sites = sites_in_source(source, FILE, MODULE)
    assert [(s.exc_name, s.line, s.form) for s in sites] == [("missing", 5, "live"), ("broken", 7, "live")]


@pytest.mark.parametrize(
    ("dots", "base", "package", "resolved"),
    [
        (1, "_C", "", None),  # a top-level module has no package to be relative to
        (2, "_C", "vllm", None),  # above the top
        (1, "_C", "vllm", "vllm._C"),
        (2, "_C", "vllm.platforms", "vllm._C"),
        (1, "", "vllm.platforms", "vllm.platforms"),
    ],
)
def test_a_relative_import_resolves_in_its_package_or_not_at_all(
    dots: int, base: str, package: str, resolved: str | None
) -> None:
    assert resolve_relative(dots, base, package) == resolved


@pytest.mark.parametrize(
    ("statement", "imported"),
    [
        ("from ._C import ops", ["vllm.platforms._C", "vllm.platforms._C.ops"]),
        ("from .. import _C", ["vllm", "vllm._C"]),
        ("if x:\n    from .... import a\n    import vllm._C\n", ["vllm._C"]),  # one climbs above the top: the next
        ("get().import_module('vllm._C')", []),  # not a dotted name: nothing known is called
        ("importlib.import_module('vllm._C')", ["vllm._C"]),
        ("__import__('vllm._C')", ["vllm._C"]),
    ],
)
def test_what_a_statement_imports(statement: str, imported: list[str]) -> None:
    assert list(imported_modules(libcst.parse_statement(statement), "vllm.platforms")) == imported


@pytest.mark.parametrize(("source", "name"), [("a.b.c", "a.b.c"), ("f().b", None), ("a[0].b", None), ("1", None)])
def test_a_dotted_name_is_a_chain_of_names_only(source: str, name: str | None) -> None:
    assert dotted(libcst.parse_expression(source)) == name


@pytest.mark.parametrize(
    ("module", "kernel"),
    [("vllm._C", True), ("vllm._moe_C", True), ("vllm.C_x._C", True), ("vllm._C_x.ops", False)],
)
def test_only_the_last_part_of_a_module_name_names_a_kernel(module: str, kernel: bool) -> None:
    assert names_a_kernel(module) is kernel


NESTED = """\
def import_kernels():
    try:
        import vllm._C
    except ImportError as e:
        try:
            logger.warning_once("outer, in a nested body: %r", e)
            from . import _C_AVX2
        except ImportError as inner:
            logger.warning_once("both: %r %r", e, inner)
            logger.warning_once("outer, in the inner handler: %r", e)
            try:
                from . import _C_AVX512
            except ImportError as deepest:
                logger.warning_once("deepest and outer: %r %r", deepest, e)
"""


def test_each_call_of_nested_handlers_belongs_to_the_innermost_site_handler_that_runs_it() -> None:
    sites = sites_in_source(NESTED, FILE, MODULE)
    assert [(s.exc_name, s.line, s.kernel_module, s.form) for s in sites] == [
        ("e", 6, "vllm._C", "live"),  # in a nested try's body, still the outer handler's
        ("inner", 9, "vllm.platforms._C_AVX2", "live"),  # the inner site's (a relative import)
        ("inner", 10, "vllm.platforms._C_AVX2", "live"),  # logs the outer exception, which is live there too
        ("deepest", 14, "vllm.platforms._C_AVX512", "live"),  # three levels down, relative again
    ]


def test_a_sites_anchor_digests_its_try_from_the_try_line_to_its_last_line_of_code() -> None:
    code = "try:\n    import vllm._C\nexcept ImportError as e:\n    logger.warning_once('%r', e)"
    module = libcst.parse_module(f"# a comment before\n{code}\n# a comment after\n\n")
    (try_node,) = [node for node in module.body if isinstance(node, libcst.Try)]
    assert anchor(try_node) == hashlib.sha256(code.encode()).hexdigest()[:16]


@pytest.mark.parametrize("caught", ["builtins.ImportError", "a.b.ModuleNotFoundError", "(ValueError, x.y.ImportError)"])
def test_an_import_error_named_through_its_module_is_caught(caught: str) -> None:
    source = f"try:\n    import vllm._C\nexcept {caught} as e:\n    logger.warning_once('%r', e)\n"
    assert [s.exc_name for s in sites_in_source(source, FILE, MODULE)] == ["e"]


def test_a_nested_relative_site_under_a_branch_owns_the_calls_it_runs() -> None:
    source = textwrap.dedent(
        """\
        try:
            import vllm._C
        except ImportError as e:
            if e:
                try:
                    from . import _C_AVX2
                except ImportError as inner:
                    logger.warning_once("both: %r %r", e, inner)
        """
    )
    # the outer try is a guarded import too, whose handler runs no call of its own
    assert [(s.exc_name, s.kernel_module, s.log_method) for s in sites_in_source(source, FILE, MODULE)] == [
        ("e", "vllm._C", ""),
        ("inner", "vllm.platforms._C_AVX2", "warning_once"),
    ]


# ---- no site vanishes in a block discovery did not walk (review of issue 33) ----------------------------------

_TRY = """\
try:
    import vllm._C  # noqa: F401
except ImportError as e:
    logger.warning_once("Failed: %r", e)
"""


@pytest.mark.parametrize(
    "block",
    ["for _ in ():\n    pass\nelse:\n", "while False:\n    pass\nelse:\n", "match cls.kind:\n    case 'cpu':\n"],
    ids=["for-else", "while-else", "match-case"],
)
def test_a_site_try_in_an_else_of_a_loop_or_a_case_of_a_match_is_found(block: str) -> None:
    depth = 8 if block.startswith("match") else 4
    body = textwrap.indent(block + textwrap.indent(_TRY, " " * depth), " " * 8)
    site = only(f"class P:\n    @classmethod\n    def import_kernels(cls):\n{body}")
    assert (site.qualname, site.form, site.kernel_module) == ("P.import_kernels", "live", "vllm._C")


AFTER = """\
class P:
    @classmethod
    def import_kernels(cls):
        err = None
        try:
            import vllm._C  # noqa: F401
        except ImportError as e:
            err = e
{after}
"""


@pytest.mark.parametrize(
    "after",
    [
        "        finally:\n            if err is not None:\n                logger.warning_once('Failed: %r', err)",
        "        if err is not None: logger.warning_once('Failed: %r', err)",
        "        for _ in (1,): logger.warning_once('Failed: %r', err)",
        "        reported = err\n        logger.warning_once('Failed: %r', reported)",
        "        reported: object = err\n        if reported:\n            logger.warning_once('Failed: %r', reported)",
        "        match err:\n            case None:\n                pass\n            case _:\n"
        "                logger.warning_once('Failed: %r', err)",
        "        reported, code = err, 1\n        logger.warning_once('Failed: %r', reported)",
        "        first, *rest = err, err\n        logger.warning_once('Failed: %r', rest)",
        "        reported = (kept := err)\n        logger.warning_once('Failed: %r', reported)",
        "        reported = (code, extra) = err, 1\n        logger.warning_once('Failed: %r', reported)",
    ],
    ids=[
        "in-its-finally",
        "one-line-if",
        "one-line-for",
        "rebound",
        "rebound-annotated",
        "in-a-match",
        "rebound-unpacked",
        "rebound-starred",
        "rebound-beside-a-walrus",  # each binding of one statement, not only its last
        "rebound-beside-an-unpacking",  # each target of a chained assignment, not only an unpacking's
    ],
)
def test_a_call_after_the_handler_logging_what_it_bound_is_found_wherever_it_stands(after: str) -> None:
    site = only(AFTER.format(after=after))
    assert (site.place, site.form, site.exc_name) == ("after", "live", "e")


def test_a_name_rebound_after_the_handler_to_something_else_logs_nothing_of_it() -> None:
    after = "        reported = 'none'\n        logger.warning_once('Failed: %s', reported)"
    assert find(AFTER.format(after=after)) == []


def test_a_name_the_handler_binds_to_something_else_logs_nothing_of_it_after() -> None:
    source = AFTER.replace("            err = e\n", "            err = e\n            note = cls.other\n")
    assert find(source.format(after="        logger.warning_once('Note: %s', note)")) == []


def test_a_call_after_the_handler_through_an_alias_is_a_site_through_it() -> None:
    source = AFTER.replace("        err = None\n", "        err = None\n        warn = logger.warning_once\n")
    site = only(source.format(after="        warn('Failed: %r', err)"))
    assert (site.place, site.via, site.log_method, site.form) == ("after", "warn", "warning_once", "live")


def test_an_if_after_the_handler_testing_what_it_bound_is_a_condition_no_drive_can_steer() -> None:
    after = (
        "        if err is None:\n            pass\n        else:\n            logger.warning_once('Failed: %r', err)"
    )
    assert only(AFTER.format(after=after)).conditions == (Condition("err is None", False, True),)


def test_a_site_in_a_packages_init_is_of_the_package_and_resolves_its_relative_imports_there(tmp_path: Path) -> None:
    init = tmp_path / "vllm" / "platforms" / "__init__.py"
    init.parent.mkdir(parents=True)
    init.write_text(SITE_FILE.replace("import vllm._C", "from .. import _C"), encoding="utf-8")
    assert [(s.file, s.module, s.kernel_module) for s in discover(tmp_path)] == [
        ("vllm/platforms/__init__.py", "vllm.platforms", "vllm._C")
    ]


HELPERS = """\
class Base:
    @classmethod
    def _log_failure(cls, err):
        logger.warning_once("Failed: %r", err)


class Quiet(Base):
    @classmethod
    def _log_failure(cls, err):
        print(err)


class P({base}):
    @classmethod
    def import_kernels(cls):
        warn = logger.warning_once
        try:
            import vllm._C  # noqa: F401
        except ImportError as e:
            {call}
"""


@pytest.mark.parametrize(
    ("base", "call", "via"),
    [
        ("Base", "cls._log_failure(e)", "cls._log_failure"),
        ("Quiet", "self._log_failure(e)", None),  # Quiet's own, which logs nothing, hides Base's
        ("object", "Base._log_failure(e)", "Base._log_failure"),
        ("object", "warn('Failed: %r', e)", "warn"),  # a local alias: found (its guard says it cannot drive it)
    ],
    ids=["inherited", "overridden", "another-class", "a-local-alias"],
)
def test_a_helper_is_followed_where_the_handler_can_call_it(base: str, call: str, via: str | None) -> None:
    found = find(HELPERS.format(base=base, call=call))
    assert [(s.via, s.form) for s in found] == ([(via, "live")] if via else [])


def test_a_call_of_a_later_handler_logging_an_earlier_handlers_name_is_that_handlers_site_alone() -> None:
    """One site per call: the handler that runs it owns it (its guard drives it, its mutants are its), not also the
    earlier handler whose name it logs (two sites at one position: the mutants went to the wrong one)."""
    after = (
        "        try:\n            import vllm._C_AVX2  # noqa: F401\n        except ImportError as e2:\n"
        "            logger.warning_once('Failed: %r %r', err, e2)"
    )
    site = only(AFTER.format(after=after))
    assert (site.kernel_module, site.place, site.form) == ("vllm._C_AVX2", "handler", "live")


@pytest.mark.parametrize(
    ("argument", "form"),
    [("repr(e)", "eager"), ("e", "live"), ("(\n                e\n            )", "live")],
    ids=["eager", "live", "in-parentheses"],
)
def test_a_message_concatenated_over_lines_is_read_for_the_form(argument: str, form: str) -> None:
    """As ruff formats a long message: implicit concatenation over lines. Its text alone does not parse (the second
    line is indented): the form was an IndentationError out of discovery, a traceback and exit 70 from `sites`."""
    lines = ['"Failed: %s; "', '"some ops are missing",', f"{argument},"]
    call = "logger.warning_once(\n" + "".join(f"{' ' * 16}{line}\n" for line in lines) + " " * 12 + ")"
    site = only(guarded("import vllm._C", call))
    assert (site.form, site.message) == (form, "Failed: %s; some ops are missing")


ATTRIBUTE = """\
class P:
    @classmethod
    def import_kernels(cls):
        try:
            import vllm._C  # noqa: F401
        except ImportError as e:
            cls.kernel_error = {bound}
        logger.info_once("kernels for %s", cls.device_name)
        logger.warning_once("Failed: %s", cls.kernel_error)
"""


@pytest.mark.parametrize(("bound", "form"), [("repr(e)", "unknown"), ("e", "live")], ids=["fixed", "leaking"])
def test_a_handler_binding_an_attribute_makes_that_attribute_logged_after_it_a_site_not_its_owner(
    bound: str, form: str
) -> None:
    """`cls.kernel_error = ...` binds `cls.kernel_error`, not `cls`: `cls.device_name` logged after the handler is
    no site of it (it was, and its guard failed the fixed code as `message changed`)."""
    site = only(ATTRIBUTE.format(bound=bound))
    assert (site.place, site.message, site.form) == ("after", "Failed: %s", form)


# ---- the form column tells the truth (issue 40) -------------------------------------------------


@pytest.mark.parametrize(
    ("handler", "form"),
    [
        ('logger.warning_once("F: %r", *[e])', "live"),
        ('logger.warning_once("F: %s", *[repr(e)])', "eager"),
        ('logger.warning_once("F: %r", (lambda x=e: x)())', "live"),
        ('logger.warning_once("F: %s", (lambda x=e: repr(x))())', "eager"),
        ('logger.warning_once("F: %r", (lambda x: x)(e))', "live"),
        ('[logger.warning_once("F: %r", x) for x in [e]]', "live"),
        ('[logger.warning_once("F: %s", repr(x)) for x in [e]]', "eager"),
        ('logger.warning_once("F: %r", [x for x in [e]][0])', "live"),
        ("try:\n                raise RuntimeError()\n            except RuntimeError as e2:\n"
         '                logger.warning_once("F: %r", e2.__context__)', "live"),
    ],
    ids=["starred", "starred-eager", "default-lambda", "default-lambda-eager", "called-lambda", "comprehension",
         "comprehension-eager", "comprehension-value", "context"],
)  # fmt: skip
def test_the_form_of_a_call_that_hides_the_exception_is_what_reaches_the_cache(handler: str, form: str) -> None:
    (site,) = find(guarded("import vllm._C", handler))
    assert site.form == form


@pytest.mark.parametrize(
    ("argument", "kind"),
    [("(lambda x=e: x)()", "exception"), ("[x for x in [e]][0]", "exception"), ("(lambda x=e: repr(x))()", "call")],
)
def test_the_audit_reads_those_arguments_as_discovery_does(argument: str, kind: str | None) -> None:
    assert argument_kind_of_source(argument, {"e"}) == kind


def test_a_guarded_import_whose_handler_logs_nothing_discovery_reads_is_a_site_not_recognised() -> None:
    source = guarded("import vllm._C", 'getattr(logger, "warning_once")("F: %r", e)')
    (site,) = rows(source)
    assert (site.recognised, site.guarded, site.form, site.line) == (False, True, "unknown", 5)
    assert site.id == "vllm/platforms/x.py::P.import_kernels::vllm._C"
    assert find(source) == []


def test_sys_exception_is_no_logging_call() -> None:
    (site,) = rows(guarded("import vllm._C", "exc = sys.exception()"))
    assert site.log_method == ""  # the guarded import is the site; `sys.exception()` logs nothing


TAKES = """\
def {signature}:
    try:
        import vllm._C
    except ImportError:
        return 0
"""


@pytest.mark.parametrize(
    ("signature", "guarded_site"),
    [
        ("local_topk(vllm_config, topk)", False),  # vLLM 0.34.0's dcp_topk_merge_local_topk: what would it be given?
        ("load(*, strict)", False),
        ("load(strict=True, *, tries=2)", True),
        ("load(*args, **kwargs)", True),
    ],
)
def test_a_site_whose_function_takes_arguments_is_listed_not_guarded(signature: str, guarded_site: bool) -> None:
    (site,) = rows(TAKES.format(signature=signature))
    assert (site.guarded, site.needs_args) == (guarded_site, not guarded_site)
    assert site.unguarded_reason == ("" if guarded_site else "its function takes arguments")


@pytest.mark.parametrize(
    ("decorator", "signature", "guarded_site"),
    [
        ("@classmethod", "import_kernels(cls)", True),
        ("", "import_kernels(self)", True),
        ("@staticmethod", "import_kernels()", True),
        ("@staticmethod", "import_kernels(device)", False),
        ("@classmethod", "import_kernels(cls, device)", False),
    ],
)
def test_a_method_is_called_without_its_cls_or_self(decorator: str, signature: str, guarded_site: bool) -> None:
    method = textwrap.indent(f"{decorator}\n{TAKES.format(signature=signature)}".lstrip("\n"), "    ")
    (site,) = rows(f"class P:\n{method}")
    assert site.guarded == guarded_site


def test_a_function_nested_in_import_kernels_is_guarded_through_it_whatever_it_takes() -> None:
    source = """\
class P:
    @classmethod
    def import_kernels(cls):
        def load(flag):
            try:
                import vllm._C
            except ImportError:
                return 0

        load(True)
"""
    (site,) = rows(source)
    assert (site.qualname, site.guarded) == ("P.import_kernels.load", True)


HELPED = """\
{helper}

class P:
    {method}

    @classmethod
    def import_kernels(cls):
        try:
            import vllm._C  # noqa: F401
        except ImportError as e:
            {call}
"""
PASSES_IT_ON = "@classmethod\n    def _log_failure(cls, err):\n        logger.warning_once({args})"


@pytest.mark.parametrize(
    ("helper", "method", "call", "form"),
    [
        ("def _log_failure(err):\n    logger.warning_once('Failed: %s', err)", "pass", "_log_failure(repr(e))",
         "eager"),
        ("", PASSES_IT_ON.format(args="'Failed: %s', err"), "cls._log_failure(repr(e))", "eager"),
        ("", PASSES_IT_ON.format(args="'Failed on %r', cls"), "cls._log_failure(repr(e))", "unknown"),
        ("", PASSES_IT_ON.format(args="'Failed: %s', repr(err), exc_info=err"), "cls._log_failure(e)", "live"),
    ],
    ids=["function-given-text", "method-given-text", "method-logging-its-class", "method-passing-it-as-a-keyword"],
)  # fmt: skip
def test_a_helpers_site_is_as_live_as_what_it_is_given_and_passes_on(
    helper: str, method: str, call: str, form: str
) -> None:
    """A helper passing its parameter on makes the site what it is given (text: eager); its first parameter is a
    method's object (`cls`), not what it is given; a keyword it passes (not `scope`) reaches the cache too."""
    site = only(HELPED.format(helper=helper, method=method, call=call))
    assert (site.via, site.form) == (call.partition("(")[0], form)


@pytest.mark.parametrize(
    "handler",
    [
        "err = e; logger.warning_once('Failed: %r', err)",
        "if cls.x:\n                err = e\n                logger.warning_once('Failed: %r', err)\n"
        "            elif cls.y:\n                pass",
    ],
    ids=["on-the-calls-line", "in-an-if-with-an-elif"],
)
def test_a_name_bound_to_the_exception_before_the_call_is_followed_to_it(handler: str) -> None:
    assert only(guarded("import vllm._C", handler)).form == "live"


def test_a_name_cleared_after_the_call_in_a_finally_is_live_at_the_call() -> None:
    after = "        finally:\n            logger.warning_once('Failed: %r', err)\n            err = None"
    site = only(AFTER.format(after=after))
    assert (site.place, site.form) == ("after", "live")


def test_what_a_try_body_bound_of_an_outer_handlers_exception_is_live_in_its_own_handler() -> None:
    handler = (
        "try:\n                kept = e\n                import vllm._C_AVX2  # noqa: F401\n"
        "            except ImportError:\n                logger.warning_once('Failed: %r', kept)"
    )
    site = only(guarded("import vllm._C  # noqa: F401", handler))
    assert (site.kernel_module, site.place, site.form) == ("vllm._C_AVX2", "handler", "live")


def test_a_call_in_the_finally_of_a_try_in_the_handler_sees_what_that_try_bound() -> None:
    handler = (
        "try:\n                kept = e\n            finally:\n                logger.warning_once('Failed: %r', kept)"
    )
    assert only(guarded("import vllm._C  # noqa: F401", handler)).form == "live"


@pytest.mark.parametrize(
    "handler",
    ["err = e\n            logger.warning_once('Failed: %s', repr(err))", "info = sys.exc_info()\n            "
     "logger.warning_once('Failed: %r', info)"],
    ids=["a-name-bound-to-it", "sys-exc-info-in-a-nameless-handler"],
)  # fmt: skip
def test_a_call_logging_a_name_the_handler_bound_to_its_exception_logs_the_exception(handler: str) -> None:
    """The guard then wants the blocked import's message in the record (`guards.drive.expected_text`)."""
    source = guarded("import vllm._C", handler)
    if "sys" in handler:
        source = source.replace("except ImportError as e:", "except ImportError:")
    assert only(source).logs_exception


def test_a_bytes_message_is_no_message_text() -> None:
    site = only(guarded("import vllm._C", "logger.warning_once(b'Failed: %r', e)"))
    assert (site.message, site.message_source, site.form) == (None, "b'Failed: %r'", "live")


def test_a_site_in_a_function_that_takes_arguments_is_listed_unguarded() -> None:
    site = only(
        TAKES.replace("return 0", "logger.warning_once('Failed: %r', e)")
        .replace("ImportError:", "ImportError as e:")
        .format(signature="load(device)")
    )
    assert (site.needs_args, site.guarded, site.unguarded_reason) == (
        True,
        True,
        "",
    )  # cached: its guard says unreached


def test_a_helpers_first_argument_is_no_message_of_its_site() -> None:
    method = PASSES_IT_ON.replace("(cls, err)", "(cls, what, err)").format(args="'Failed on %s: %r', what, err")
    site = only(HELPED.format(helper="", method=method, call="cls._log_failure('kernels', e)"))
    assert (site.via, site.message, site.message_source, site.form) == ("cls._log_failure", None, "", "live")
    assert (site.receiver, site.log_method) == ("logger", "warning_once")  # the helper's call's, not `cls`


FOLLOWED = """\
{pre}

class P({bases}):
    @classmethod
    def import_kernels(cls):
        try:
            import vllm._C  # noqa: F401
        except ImportError as e:
            {call}
"""
LOG_IT = "logger.warning_once('Failed: %r', err)"


@pytest.mark.parametrize(
    ("pre", "bases", "call"),
    [
        (f"def _b(err):\n    {LOG_IT}\n\ndef _a(err):\n    _b(err)\n", "object", "_a(e)"),
        (f"def _a(err):\n    def inner():\n        return 0\n    {LOG_IT}\n", "object", "_a(e)"),
        (f"class C:\n    pass\n\nclass B(C):\n    pass\n\nclass D:\n    @classmethod\n    def _a(cls, err):\n"
         f"        {LOG_IT}\n", "B, D", "cls._a(e)"),
    ],
    ids=["a-helper-calling-a-helper", "a-helper-defining-a-function-first", "a-second-base-after-a-deep-first"],
)  # fmt: skip
def test_a_helper_is_followed_through_helpers_nested_defs_and_every_base(pre: str, bases: str, call: str) -> None:
    site = only(FOLLOWED.format(pre=pre, bases=bases, call=call))
    assert (site.via, site.form) == (call.partition("(")[0], "live")


def test_a_statement_of_a_later_site_handler_is_read_past_that_sites_own_call() -> None:
    later = (
        "        try:\n            import vllm._C_AVX2  # noqa: F401\n        except ImportError as e2:\n"
        "            logger.warning_once('Second: %r', e2); print(lambda: logger.warning_once('First: %r', err))"
    )
    assert sorted((s.place, s.kernel_module, s.exc_name) for s in find(AFTER.format(after=later))) == [
        ("after", "vllm._C", "e"),  # the lambda's call logs what the first handler bound
        ("handler", "vllm._C_AVX2", "e2"),
    ]
