"""Site discovery's rows field by field: a guarded import no call of which is recognised, a call after the handler
logging what it bound, and the names a handler binds to its exception."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst
import pytest
from warnonce_guard.rule.site_row import Condition, Site
from warnonce_guard.rule.site_rule import anchor
from warnonce_guard.rule.sites import discover, sites_in_source

FILE, MODULE = "vllm/platforms/x.py", "vllm.platforms.x"


def rows(source: str) -> list[Site]:
    return sites_in_source(textwrap.dedent(source), FILE, MODULE, "vllm")


def only(source: str) -> Site:
    found = rows(source)
    assert len(found) == 1, found
    return found[0]


def try_digest(source: str, nth: int = 0) -> str:
    """The anchor of the `nth` try statement of `source` (in source order), as site_rule digests it."""
    tries = [node for node in _walk(libcst.parse_module(textwrap.dedent(source))) if isinstance(node, libcst.Try)]
    return anchor(tries[nth])


def _walk(node: libcst.CSTNode) -> list[libcst.CSTNode]:
    out = [node]
    for child in node.children:
        out += _walk(child)
    return out


# ---- a guarded import whose handler logs nothing discovery recognises --------------------------------------------

UNRECOGNISED = """\
class P:
    @classmethod
    def import_kernels(cls):
        if HAS_AVX2:
            try:
                from vllm import (  # noqa: F401
                    _C,
                )
            except ImportError as err:
                pass
"""


def test_a_guarded_import_without_a_recognised_call_is_one_row_of_the_import_every_field() -> None:
    site = only(UNRECOGNISED)

    assert site.to_json() == {
        "file": FILE,
        "module": MODULE,
        "qualname": "P.import_kernels",
        "kernel_module": "vllm._C",
        "line": 6,
        "end_line": 8,
        "column": 16,
        "end_column": 17,
        "import_line": 6,
        "log_method": "",
        "form": "unknown",
        "exc_name": "err",
        "message": None,
        "message_source": "",
        "args": (),
        "exc_arg_index": -1,
        "receiver": "",
        "anchor": try_digest(UNRECOGNISED),
        "conditions": ({"expr": "HAS_AVX2", "want": True, "in_handler": False},),
        "driver": None,
        "place": "handler",
        "via": "",
        "logs_exception": False,
        "duplicate": 0,
        "needs_args": False,
        "grouped": False,
        "id": "vllm/platforms/x.py::P.import_kernels::vllm._C [HAS_AVX2]",
        "cached": False,
    }
    assert (site.recognised, site.guarded) == (False, True)


def test_a_module_level_guarded_import_with_a_nameless_handler_is_a_row_of_the_module_naming_no_exception() -> None:
    site = only("try:\n    import vllm._C\nexcept ImportError:\n    pass\n")

    assert (site.qualname, site.exc_name, site.line, site.end_line, site.recognised) == ("<module>", "", 2, 2, False)
    assert (site.guarded, site.unguarded_reason) == (False, "runs at import time")


@pytest.mark.parametrize(
    ("source", "qualname"),
    [
        ('try:\n    import vllm._C\nexcept ImportError as e:\n    logger.warning_once("failed: %r", e)\n', "<module>"),
        (
            "class P:\n    try:\n        import vllm._C\n    except ImportError as err:\n        reason = err\n"
            '        logger.warning_once("failed: %s", reason)\n',
            "P",
        ),
    ],
    ids=["module", "class-body"],
)
def test_a_site_outside_any_function_is_judged_by_the_statements_of_its_own_block(source: str, qualname: str) -> None:
    """A try at module level or in a class body is a region of its own: the handler's name is followed through its
    statements (`live`), as in a function's body."""
    site = only(source)

    assert (site.qualname, site.form) == (qualname, "live")


def test_a_row_names_the_first_handler_that_names_its_exception() -> None:
    source = "def f():\n    try:\n        import vllm._C\n    except ImportError:\n        pass\n"
    source += "    except Exception as failure:\n        pass\n"
    assert only(source).exc_name == "failure"


def test_a_relative_kernel_import_without_a_recognised_call_is_a_row_resolved_in_the_files_package() -> None:
    site = only("def f():\n    try:\n        from .. import _C\n    except ImportError:\n        pass\n")
    assert (site.kernel_module, site.recognised, site.import_line) == ("vllm._C", False, 3)


# ---- a handler's recognised call -------------------------------------------------------------------------------

TAKES_ARGUMENTS = """\
def load(device, *, strict=True):
    try:
        import vllm._C
    except ImportError as e:
        logger.warning_once(
            "Failed on %s: %r", device,
            e,
        )
"""


def test_a_recognised_call_in_a_function_taking_arguments_is_a_row_of_the_call_every_field() -> None:
    assert only(TAKES_ARGUMENTS).to_json() == {
        "file": FILE,
        "module": MODULE,
        "qualname": "load",
        "kernel_module": "vllm._C",
        "line": 5,
        "end_line": 8,
        "column": 8,
        "end_column": 9,
        "import_line": 3,
        "log_method": "warning_once",
        "form": "live",
        "exc_name": "e",
        "message": "Failed on %s: %r",
        "message_source": '"Failed on %s: %r"',
        "args": ("device", "e"),
        "exc_arg_index": 1,
        "receiver": "logger",
        "anchor": try_digest(TAKES_ARGUMENTS),
        "conditions": (),
        "driver": None,
        "place": "handler",
        "via": "",
        "logs_exception": True,
        "duplicate": 0,
        "needs_args": True,
        "grouped": False,
        "id": "vllm/platforms/x.py::load::vllm._C",
        "cached": True,
    }


# ---- a call after the handler logging what it bound -------------------------------------------------------------

AFTER = """\
def import_kernels():
    err = None
    try:
        {imported}
    except {caught}:
        {bound}
    {after}
"""


def after_source(
    after: str = "logger.warning_once('Failed: %r', err)",
    bound: str = "err = e",
    caught: str = "ImportError as e",
    imported: str = "import vllm._C",
) -> str:
    return AFTER.format(imported=imported, caught=caught, bound=bound, after=after)


def test_a_call_after_the_handler_is_a_row_of_that_handlers_try_its_import_line_and_anchor() -> None:
    source = after_source()
    site = only(source)

    assert (site.place, site.line, site.import_line, site.exc_name, site.form) == ("after", 7, 4, "e", "live")
    assert site.anchor == try_digest(source)


def test_a_relative_kernel_import_guards_what_its_handler_binds_for_later() -> None:
    site = only(after_source(imported="from .. import _C"))
    assert (site.kernel_module, site.place, site.form) == ("vllm._C", "after", "live")


def test_what_a_handler_of_no_import_error_binds_is_no_site_after_it() -> None:
    assert rows(after_source(caught="ValueError as e")) == []
    # beside a site try (the function is read): the other try imports a kernel, but catches no ImportError
    guarded = "import vllm._moe_C\n    except ImportError:\n        pass\n    try:\n        import vllm._C"
    (row,) = rows(after_source(caught="ValueError as e", imported=guarded))
    assert (row.kernel_module, row.recognised, row.import_line) == ("vllm._moe_C", False, 4)


def test_a_nameless_handler_binding_exc_info_makes_its_logging_after_a_site_naming_no_exception() -> None:
    source = after_source(caught="ImportError", bound="err = sys.exc_info()")
    site = only(source)

    assert (site.place, site.exc_name, site.import_line, site.logs_exception) == ("after", "", 4, True)
    assert site.anchor == try_digest(source)


def test_a_call_after_the_handler_through_a_helper_is_a_site_through_that_helper() -> None:
    helper = "def _report(failure):\n    logger.warning_once('Failed: %r', failure)\n\n\n"
    site = only(helper + after_source(after="_report(err)"))

    assert (site.place, site.via, site.log_method, site.receiver, site.message) == (
        "after",
        "_report",
        "warning_once",
        "logger",
        None,
    )


# ---- what a handler binds of its exception ----------------------------------------------------------------------


def test_a_name_the_handler_binds_to_another_name_is_not_the_exceptions() -> None:
    source = after_source(bound="err = e\n        label = cls.name", after="logger.warning_once('%s', label)")
    assert [site.recognised for site in rows(source)] == [False]


def test_a_name_the_handler_binds_to_a_constant_is_not_the_exceptions() -> None:
    source = after_source(bound="err = e\n        label = 'x'", after="logger.warning_once('%s', label)")
    assert [site.recognised for site in rows(source)] == [False]


def test_bindings_of_one_handler_statement_are_followed_in_source_order_past_one_of_something_else() -> None:
    bound = "if True:\n            if e:\n                first = e\n            note = 'x'\n            err = first"
    site = only(after_source(bound=bound))
    assert (site.place, site.form) == ("after", "live")


def test_every_name_an_unpacking_in_the_handler_binds_of_the_exception_is_followed() -> None:
    unpackings = [("err, code = e, 1", "err"), ("first, *rest = e, e", "rest"), ("[(a, err)] = [(1, e)]", "err")]
    for bound, logged in unpackings:
        site = only(after_source(bound=bound, after=f"logger.warning_once('Failed: %r', {logged})"))
        assert (site.place, site.form) == ("after", "live"), bound


# ---- where a handler's call stands ------------------------------------------------------------------------------


def test_a_call_in_an_ifs_test_with_an_else_in_the_handler_needs_no_condition() -> None:
    handler = "if logger.warning_once('F: %r', e):\n            pass\n        else:\n            pass"
    assert only(after_source(bound=handler, after="pass")).conditions == ()


def test_a_call_in_a_handlers_elif_chain_needs_every_earlier_test_false() -> None:
    handler = (
        "if a:\n            pass\n        elif b:\n            pass\n        elif c:\n"
        "            logger.warning_once('F: %r', e)"
    )
    assert only(after_source(bound=handler, after="pass")).conditions == (
        Condition("a", False, True),
        Condition("b", False, True),
        Condition("c", True, True),
    )


# ---- what reaches a *_once method ------------------------------------------------------------------------------


def test_a_helper_a_function_defines_is_followed_from_a_function_nested_deeper_in_it() -> None:
    source = """\
def import_kernels():
    def _report(failure):
        logger.warning_once('Failed: %r', failure)

    def load():
        try:
            import vllm._C
        except ImportError as e:
            _report(e)

    load()
"""
    site = only(source)
    assert (site.qualname, site.via, site.log_method, site.form) == ("import_kernels.load", "_report", "warning_once",
                                                                     "live")  # fmt: skip


# ---- module names -----------------------------------------------------------------------------------------------


def test_a_site_in_a_packages_init_is_of_the_package(tmp_path: Path) -> None:
    init = tmp_path / "vllm" / "platforms" / "__init__.py"
    init.parent.mkdir(parents=True)
    init.write_text(after_source(), encoding="utf-8")
    (site,) = discover(tmp_path)
    assert (site.file, site.module, site.current_package) == ("vllm/platforms/__init__.py", "vllm.platforms",
                                                              "vllm.platforms")  # fmt: skip


# ---- the function a guard would call, and later tries ------------------------------------------------------------


def test_a_site_in_a_function_nested_in_one_taking_arguments_needs_the_outer_ones() -> None:
    source = "def load(device):\n    def inner():\n        try:\n            import vllm._C\n"
    source += "        except ImportError as e:\n            logger.warning_once('%r', e)\n    inner()\n"
    site = only(source)
    assert (site.qualname, site.needs_args, site.guarded) == ("load.inner", True, True)
    (row,) = rows(source.replace("logger.warning_once('%r', e)", "pass"))
    assert (row.qualname, row.needs_args, row.guarded) == ("load.inner", True, False)


def test_a_function_nested_in_import_kernels_taking_two_arguments_is_guarded_through_it() -> None:
    source = "def import_kernels():\n    def load(device, dtype):\n        try:\n            import vllm._C\n"
    source += "        except ImportError:\n            pass\n"
    (row,) = rows(source)
    assert (row.qualname, row.needs_args, row.guarded) == ("import_kernels.load", False, True)


def test_a_call_after_two_tries_logging_what_the_first_bound_is_the_first_tries_site() -> None:
    source = after_source(
        imported="import vllm._C\n    except ImportError as e:\n        err = e\n    try:\n        import vllm._moe_C",
        caught="ImportError as other",
        bound="failure = other",
    )
    second, first = rows(source)  # by line: the second try's import, then the call after both
    assert (first.kernel_module, first.place, first.import_line, first.line) == ("vllm._C", "after", 4, 11)
    assert (second.kernel_module, second.recognised) == ("vllm._moe_C", False)


def test_three_rows_of_one_identity_are_numbered_first_second_third() -> None:
    one = "    try:\n        import vllm._C\n    except ImportError as e:\n        logger.warning_once('%r', e)\n"
    ids = [site.id for site in rows("def import_kernels():\n" + one * 3)]
    assert ids == [
        f"{FILE}::import_kernels::vllm._C",
        f"{FILE}::import_kernels::vllm._C#2",
        f"{FILE}::import_kernels::vllm._C#3",
    ]


def test_a_site_in_any_block_of_a_try_star_is_found() -> None:
    site_try = (
        "{indent}try:\n{indent}    import vllm._C\n{indent}except ImportError as e:\n"
        "{indent}    logger.warning_once('{where}: %r', e)\n"
    )
    source = "def import_kernels():\n    try:\n" + site_try.format(indent=" " * 8, where="body")
    for clause, where in [("except* ValueError:", "handler"), ("else:", "else"), ("finally:", "finally")]:
        source += f"    {clause}\n" + site_try.format(indent=" " * 8, where=where)
    assert [site.message for site in rows(source)] == ["body: %r", "handler: %r", "else: %r", "finally: %r"]


def test_a_call_in_a_try_star_after_the_handler_logging_what_it_bound_is_its_site() -> None:
    after = "try:\n        logger.warning_once('Failed: %r', err)\n    except* ValueError:\n        pass"
    site = only(after_source(after=after))
    assert (site.place, site.line, site.import_line, site.form) == ("after", 8, 4, "live")


def test_every_name_a_handler_binds_of_its_exception_is_followed_not_only_its_last() -> None:
    site = only(after_source(bound="err = e\n        text = repr(err)"))
    assert (site.place, site.form) == ("after", "live")


ONE_SPACE_CLASS = (
    "class P:\n @classmethod\n def import_kernels(cls):\n  try:\n   import vllm._C\n"
    "  except ImportError as e:\n   err = e\n  logger.warning_once('%r', err)\n"
)


@pytest.mark.parametrize("site_source", [after_source(), ONE_SPACE_CLASS], ids=["a-function", "a-one-space-class"])
def test_libcst_parses_only_the_statements_that_hold_a_site(monkeypatch: pytest.MonkeyPatch, site_source: str) -> None:
    parsed: list[str] = []
    parse = libcst.parse_module

    def recorded(source: str) -> libcst.Module:
        parsed.append(source)
        return parse(source)

    monkeypatch.setattr(libcst, "parse_module", recorded)
    unrelated = "def unrelated():\n try:\n  import vllm._C\n except ValueError:\n  pass\n\n\n"  # no site try
    unrelated += "try:\n    import vllm._C\nexcept ValueError:\n    pass\n\n\n"  # nor at module level
    source = unrelated + site_source
    assert [site.place for site in rows(source)] == ["after"]
    assert parsed and not any("unrelated" in text for text in parsed)
    assert sum("ValueError" in text for text in parsed) == 2  # each try of no site once, alone


def test_a_line_separator_in_a_comment_before_a_site_moves_no_line_and_loses_no_site() -> None:
    # str.splitlines ends a line at U+2028, Python does not: the try's lines, cut by Python's numbers, do not parse
    source = "# a comment with \u2028 inside\n" + after_source(after="pass", bound="logger.warning_once('%r', e)")
    site = only(source)
    assert (site.line, site.import_line, site.qualname) == (7, 5, "import_kernels")


def test_a_kernel_named_at_the_start_of_a_continuation_line_is_a_site() -> None:
    source = "try:\n    from vllm import (\nC_ext,\n    )\nexcept ImportError as e:\n    logger.warning_once('%r', e)\n"
    site = only(source)
    assert (site.kernel_module, site.qualname, site.line) == ("vllm.C_ext", "<module>", 6)


def test_a_site_try_after_a_try_of_no_kernel_in_one_function_is_found() -> None:
    site = only(
        after_source(imported="import os\n    except ImportError:\n        pass\n    try:\n        import vllm._C")
    )
    assert (site.kernel_module, site.place, site.import_line) == ("vllm._C", "after", 8)


SITE_TRY = "try:\n    import vllm._C\nexcept ImportError as e:\n    logger.warning_once('%r', e)\n"


@pytest.mark.parametrize(
    "outer",
    [
        "try:\n{site}except ValueError:\n    pass\n",
        "try:\n    pass\nexcept ValueError:\n{site}",
        "try:\n    pass\nexcept ValueError:\n    pass\nelse:\n{site}",
        "try:\n    pass\nfinally:\n{site}",
        "match mode:\n    case 1:\n{site}",
    ],
    ids=["try-body", "handler", "else", "finally", "match-case"],
)
def test_a_site_try_in_any_block_of_a_statement_of_no_kernel_is_found(outer: str) -> None:
    nested = outer.format(site=textwrap.indent(SITE_TRY, "    " * (2 if outer.startswith("match") else 1)))
    source = "def import_kernels():\n" + textwrap.indent(nested, "    ")
    site = only(source)
    assert (site.qualname, site.kernel_module, site.message) == ("import_kernels", "vllm._C", "%r")


def test_a_file_only_cpython_refuses_for_an_unknown_character_name_is_read_whole_keeping_module_and_package() -> None:
    # ast refuses "\N{...}" naming no character, libcst reads it: the file is walked whole, not dropped
    source = after_source() + 'NAME = "\\N{NO SUCH CHARACTER NAME}"\n'
    site = only(source)
    assert (site.module, site.package, site.kernel_module, site.place) == (MODULE, "vllm", "vllm._C", "after")


STAR_SITE = """\
def import_kernels():
    try:
        import vllm._C
    except* {caught} as eg:
        {handler}
"""


@pytest.mark.parametrize(
    ("handler", "form"),
    [
        ("logger.warning_once('Failed to import from vllm._C: %r', eg)", "live"),
        ("logger.warning_once('Failed to import from vllm._C: %s', repr(eg))", "eager"),
    ],
)
def test_a_kernel_import_an_except_star_guards_is_a_site_of_the_call_its_handler_runs(handler: str, form: str) -> None:
    """`except* ImportError as eg` catches the import's failure in a group that holds it, traceback and all: the
    guarded import is the site, whatever form its handler takes (it was walked past, a silent pass)."""
    site = only(STAR_SITE.format(caught="ImportError", handler=handler))
    assert (site.kernel_module, site.import_line, site.line) == ("vllm._C", 3, 5)
    assert (site.log_method, site.exc_name, site.form, site.logs_exception) == ("warning_once", "eg", form, True)
    assert site.grouped  # what the handler names is a group (the guards render its message so)


def test_a_kernel_import_an_except_star_guards_without_a_recognised_call_is_one_row_of_the_import() -> None:
    site = only(STAR_SITE.format(caught="(ImportError, OSError)", handler="print(eg)"))
    assert (site.kernel_module, site.line, site.recognised, site.exc_name, site.grouped) == (
        "vllm._C",
        3,
        False,
        "eg",
        True,
    )


@pytest.mark.parametrize(
    ("logged", "form"), [("eg.args", "live"), ("eg.args[1]", "live"), ("eg", "live"), ("repr(eg.args)", "eager")]
)
def test_an_except_star_handler_logging_its_groups_args_is_not_taken_for_plain_data(logged: str, form: str) -> None:
    """A plain exception's `args` is its data (eager); a group's holds its exceptions (`liveness.GROUP`)."""
    site = only(STAR_SITE.format(caught="ImportError", handler=f"logger.warning_once('Failed: %s', {logged})"))
    assert site.form == form


def test_an_except_star_of_no_import_error_guards_no_kernel_import() -> None:
    assert rows(STAR_SITE.format(caught="ValueError", handler="logger.warning_once('%r', eg)")) == []


def test_a_call_after_an_except_star_handler_logging_the_group_it_bound_is_a_grouped_site_of_that_try() -> None:
    source = (
        "def import_kernels():\n    try:\n        import vllm._C\n    except* ImportError as eg:\n        err = eg\n"
        "    logger.warning_once('Failed: %r', err)\n"
    )
    site = only(source)
    assert (site.place, site.import_line, site.line, site.form, site.grouped) == ("after", 3, 6, "live", True)


def test_a_call_after_an_except_star_handler_logging_its_groups_args_is_live() -> None:
    """What the handler bound of its group is a group after the `try` too: its `args` holds the exceptions."""
    source = (
        "def import_kernels():\n    try:\n        import vllm._C\n    except* ImportError as eg:\n        err = eg\n"
        "    logger.warning_once('Failed: %s', err.args)\n"
    )
    assert (only(source).place, only(source).form) == ("after", "live")
