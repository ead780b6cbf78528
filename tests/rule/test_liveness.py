"""One liveness policy: its table of examples holds, and discovery and the audit agree on every row."""

from __future__ import annotations

import ast
import textwrap

import pytest
from warnonce_guard.audit.scan import findings_in_source
from warnonce_guard.rule import liveness
from warnonce_guard.rule.liveness import (
    EXAMPLES,
    EXCEPTION,
    UNHASHABLE,
    LivenessExample,
    argument_kind,
    argument_kind_of_source,
    comprehension_names,
    dotted_name,
    flow,
    safe_names,
    unhashable_names,
)
from warnonce_guard.rule.sites import sites_in_source

# The function a row's `bound` statements stand in: `self` is a method's, `y` and `xs` are parameters.
METHOD = "def method(self, y, xs):"


def row_id(example: LivenessExample) -> str:
    return f"{example.bound} -> {example.argument}".replace("\n", "; ") if example.bound else example.argument


def in_method(example: LivenessExample) -> str:
    """The row as a method: its `bound` statements, then a call passing its argument from a handler of `e`."""
    body = [*example.bound.splitlines(), "try:", "    pass", "except Exception as e:"]
    body.append(f'    logger.warning_once("%s", {example.argument})')
    return "\n".join([METHOD, *(f"    {line}" for line in body)]) + "\n"


@pytest.mark.parametrize("example", EXAMPLES, ids=[row_id(e) for e in EXAMPLES])
def test_the_policy_table(example: LivenessExample) -> None:
    function = ast.parse(in_method(example)).body[0]
    assert isinstance(function, ast.FunctionDef)
    names = unhashable_names(function.body, function.args)
    argument = ast.parse(f"({example.argument})", mode="eval").body
    assert argument_kind(argument, {"e"}, names) == example.kind
    if not example.bound:
        assert argument_kind_of_source(example.argument, {"e"}) == example.kind


@pytest.mark.parametrize("example", EXAMPLES, ids=[row_id(e) for e in EXAMPLES])
def test_the_audit_reports_each_row_as_its_kind(example: LivenessExample) -> None:
    found = [(f.argument, f.kind) for f in findings_in_source(in_method(example), "x.py")]
    assert found == ([] if example.kind is None else [(ast.unparse(ast.parse(example.argument)), example.kind)])


def kernel_site(argument: str) -> str:
    return textwrap.dedent(
        f"""\
        class Platform:
            @classmethod
            def import_kernels(cls):
                try:
                    import vllm._C
                except ImportError as e:
                    logger.warning_once("Failed: %s", {argument})
        """
    )


def logs_e(example: LivenessExample) -> bool:
    """The row's argument names `e` (a site logs its handler's name; `sys.exc_info()` names none)."""
    return any(isinstance(n, ast.Name) and n.id == "e" for n in ast.walk(ast.parse(example.argument)))


@pytest.mark.parametrize("example", [e for e in EXAMPLES if logs_e(e)], ids=lambda e: e.argument)
def test_discovery_and_the_audit_agree_on_what_is_live(example: LivenessExample) -> None:
    source = kernel_site(example.argument)
    (site,) = sites_in_source(source, "vllm/platforms/x.py", "vllm.platforms.x")
    audited = {f.kind for f in findings_in_source(source, "vllm/platforms/x.py")}

    assert (site.form == "live") == (EXCEPTION in audited) == (example.kind == EXCEPTION)


@pytest.mark.parametrize(
    ("argument", "live"), [("e.args", True), ("e.args[1]", True), ("repr(e.args)", False), ("e.msg", False)]
)
@pytest.mark.parametrize("handler", ["except", "except*"])
def test_discovery_and_the_audit_agree_that_an_except_star_groups_args_holds_its_exceptions(
    argument: str, live: bool, handler: str
) -> None:
    """A plain exception's `args` is its data; an `except*` handler's name is a group, whose `args` holds the
    exceptions (`liveness.GROUP`): both were called safe, the audit a silent pass."""
    source = kernel_site(argument).replace("except ImportError", f"{handler} ImportError")
    (site,) = sites_in_source(source, "vllm/platforms/x.py", "vllm.platforms.x")
    audited = {f.kind for f in findings_in_source(source, "vllm/platforms/x.py")}
    expected = live and handler == "except*"
    assert (site.form == "live", EXCEPTION in audited) == (expected, expected)


@pytest.mark.parametrize(("rebound", "live"), [("eg.exceptions[0]", False), ("None", False), ("eg", True)])
def test_an_except_star_name_rebound_in_its_handler_is_a_group_only_while_bound_to_one(
    rebound: str, live: bool
) -> None:
    """`eg = eg.exceptions[0]` binds a plain exception (its `args` is data), `eg = None` nothing live."""
    handler = f"eg = {rebound}\n            logger.warning_once('Failed: %s', eg.args)"
    source = kernel_site("").replace("except ImportError as e:", "except* ImportError as eg:")
    source = source.replace('logger.warning_once("Failed: %s", )', handler)
    audited = {f.kind for f in findings_in_source(source, "vllm/platforms/x.py")}
    (site,) = sites_in_source(source, "vllm/platforms/x.py", "vllm.platforms.x")
    assert (site.form == "live", EXCEPTION in audited) == (live, live), source


def test_a_name_an_except_star_handler_binds_to_its_group_is_a_group_too() -> None:
    handler = "err = eg\n            logger.warning_once('Failed: %s', err.args)"
    source = kernel_site("").replace("except ImportError as e:", "except* ImportError as eg:")
    source = source.replace('logger.warning_once("Failed: %s", )', handler)
    assert EXCEPTION in {f.kind for f in findings_in_source(source, "vllm/platforms/x.py")}


def test_a_name_that_is_not_the_exception_is_never_live() -> None:
    assert argument_kind_of_source("e", {"err"}) == "name"
    assert argument_kind_of_source("repr(x)", {"e"}) is None


@pytest.mark.parametrize("argument", ["sys.exc_info()[1]", "sys.exc_info()", "sys.exception()", "sys.last_value"])
def test_the_exception_being_handled_is_live_whatever_it_is_called(argument: str) -> None:
    assert argument_kind_of_source(argument, set()) == EXCEPTION
    assert argument_kind_of_source("sys.exc_info()[0]", set()) == "subscript"  # the class alone


@pytest.mark.parametrize("argument", ["[e]", "{'k': e}", "{e}", "[y for y in e.args]", "list(x)", "(1, sorted(x))"])
def test_what_cannot_be_hashed_raises_before_anything_is_cached(argument: str) -> None:
    assert argument_kind_of_source(argument, {"e"}) == UNHASHABLE


def test_formatting_a_list_is_a_str_not_a_list() -> None:
    assert argument_kind_of_source('"%s" % [x]', set()) is None
    assert argument_kind_of_source("fmt % [x]", set()) == "expression"


@pytest.mark.parametrize("argument", ['str(e) or "unknown"', "len(e.args) > 1", "e is None", "e in errors"])
def test_a_boolean_operation_or_a_comparison_of_safe_values_is_safe(argument: str) -> None:
    assert argument_kind_of_source(argument, {"e"}) is None


@pytest.mark.parametrize("argument", ['e or "unknown"', "e == other"])  # `==` returns what `__eq__` returns
def test_a_boolean_operation_or_an_equality_can_be_its_operand(argument: str) -> None:
    assert argument_kind_of_source(argument, {"e"}) == EXCEPTION


@pytest.mark.parametrize("argument", ["str(fmt) % e", "chr(10).join(lines)"])
def test_formatting_with_or_joining_by_a_builtins_str_is_a_str(argument: str) -> None:
    assert argument_kind_of_source(argument, {"e"}) is None


@pytest.mark.parametrize(("source", "name"), [("a.b.c", "a.b.c"), ("f().b", None), ("a[0].b", None), ("1", None)])
def test_a_dotted_name_is_a_chain_of_names_only(source: str, name: str | None) -> None:
    assert dotted_name(ast.parse(source, mode="eval").body) == name


def test_an_f_string_formatted_with_percent_is_a_str() -> None:
    assert argument_kind_of_source('f"{x}: %s" % e', {"e"}) is None


@pytest.mark.parametrize(
    ("argument", "kind"),
    [("e + x", EXCEPTION), ("x + e", EXCEPTION), ("x + y", "expression"), ('("%s" % e, x)', "container")],
)
def test_an_operation_carries_through_either_operand_but_not_a_formatted_str(argument: str, kind: str) -> None:
    assert argument_kind_of_source(argument, {"e"}) == kind


@pytest.mark.parametrize(
    ("argument", "kind"),
    [
        ("(lambda _: e)(e)", EXCEPTION),  # a live argument: the enclosing live names stay live in the body
        ("(lambda x: x)(e)", EXCEPTION),
        ("(lambda e: e)(1)", "call"),  # its parameter shadows the live name
        ("(lambda *, x=e: x)()", EXCEPTION),  # a keyword-only parameter's live default
        ("(lambda *, x=1, y=e: y)()", EXCEPTION),
        ("(lambda *, x=1: x)()", "call"),
        ("(lambda y, *, x=e: y)(1)", "call"),  # the live default is not what the body returns
    ],
)
def test_a_lambda_called_at_once_is_judged_by_what_its_body_makes(argument: str, kind: str) -> None:
    assert argument_kind_of_source(argument, {"e"}) == kind


def test_a_long_chain_of_operations_is_judged_in_one_walk() -> None:
    """`a + a + ... + e`: each level asked `is_safe` of its whole chain again (2 500 terms took seconds)."""
    deep = ast.parse("+".join(["a"] * 399 + ["e"]), mode="eval").body
    asked: list[ast.AST] = []
    real = liveness.is_safe
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(liveness, "is_safe", lambda node: asked.append(node) or real(node))
        assert liveness.carries(deep, {"e"})
    assert len(asked) <= 2 * 400  # about once per term, where it was once per term and level (80 000)


def test_flow_follows_an_alias_of_the_handled_exception_and_forgets_a_name_bound_again() -> None:

    live: set[str] = set()
    flow(ast.parse("try:\n    pass\nexcept ImportError as e:\n    err = e\n    msg = repr(e)\n").body, live)
    assert live == {"err"}  # the handler's name is unbound after it; what it bound to the exception is not
    flow(ast.parse("err = None\n").body, live)
    assert live == set()


@pytest.mark.parametrize(
    ("source", "after"),
    [
        ("def err():\n    pass\n", {"e"}),  # a nested function or class binds its own name
        ("class err:\n    pass\n", {"e"}),
        ("try:\n    err = repr(err)\nexcept ValueError:\n    pass\n", {"e", "err"}),  # the try may stop first
        ("try:\n    pass\nexcept:\n    pass\n", {"e", "err"}),  # a bare except binds nothing
        ("try:\n    pass\nexcept ImportError:\n    pass\nelse:\n    other = e\n", {"e", "err", "other"}),
        ("try:\n    pass\nexcept ImportError:\n    pass\nelse:\n    err = None\n", {"e", "err"}),
        ("try:\n    pass\nfinally:\n    other = err\n", {"e", "err", "other"}),  # finally always runs
        ("try:\n    pass\nfinally:\n    err = None\n", {"e"}),
        ("if x:\n    other = e\n", {"e", "err", "other"}),  # a block that may run adds, never clears
        ("if x:\n    pass\nelse:\n    other = e\n", {"e", "err", "other"}),
        ("if x:\n    err = None\n", {"e", "err"}),
        ("for x in y:\n    pass\nelse:\n    err = None\n", {"e", "err"}),
        ("while x:\n    other = e\n", {"e", "err", "other"}),
        ("with x:\n    other = e\n", {"e", "err", "other"}),
        ("match x:\n    case 1:\n        other = e\n", {"e", "err", "other"}),
        ("match x:\n    case 1:\n        err = None\n", {"e", "err"}),
        ("other: BaseException = e\n", {"e", "err", "other"}),  # an annotated assignment binds as `=` does
        ("err: str = repr(err)\n", {"e"}),
        ("import err\n", {"e"}),  # an import binds its name to a module
        ("import err.sub\n", {"e"}),  # ... its first part
        ("from x import err\n", {"e"}),
    ],
)
def test_flow_follows_the_live_names_through_every_kind_of_block(source: str, after: set[str]) -> None:
    live = {"e", "err"}
    flow(ast.parse(source).body, live)
    assert live == after


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ("x: list[int] = []\n", {"x"}),  # an annotated assignment binds as `=` does
        ("if (x := [1]):\n    pass\n", {"x"}),  # so does `:=`
        ("x = []\nfor x in xs:\n    pass\n", set()),  # a loop's target can be anything
        ("x = []\nwith f() as x:\n    pass\n", set()),  # so can a `with`'s
        ("x = []\nwith f():\n    pass\n", {"x"}),
        ("os = []\nimport os.path\n", set()),  # an import binds the first part of its name
        ("rest = []\nmatch m:\n    case {**rest}:\n        pass\n", set()),  # a match's `**rest`
        ("x = []\ndef f():\n    x = 1\n", {"x"}),  # a nested function's names are its own
    ],
)
def test_a_name_is_unhashable_only_if_every_binding_in_its_scope_is(source: str, names: set[str]) -> None:
    assert unhashable_names(ast.parse(source).body) == names


@pytest.mark.parametrize(
    ("source", "names"),
    [
        ("msg = repr(e)\ndef f():\n    msg = e\n", {"msg"}),  # a nested function's names are its own
        ("msg = repr(e)\ndef f():\n    global msg\n    msg = e\n", set()),  # ... but for a `global` one
        ("self.msg = repr(e)\n", set()),  # an attribute is not a name of the scope
    ],
)
def test_a_name_is_safe_only_if_every_binding_in_its_scope_is(source: str, names: set[str]) -> None:
    assert safe_names(ast.parse(source).body) == names


@pytest.mark.parametrize(
    ("argument", "kind"),
    [
        ("lambda x=e: x", EXCEPTION),  # its defaults are held by the function
        ("lambda *, x=e: x", EXCEPTION),
        ("lambda e: e", "lambda"),  # its parameter shadows the live name
        ("(e for _ in xs)", EXCEPTION),  # a generator yields what its element carries
        ("(x for x in xs)", "container"),
    ],
)
def test_a_lambda_or_a_generator_carries_what_it_holds(argument: str, kind: str) -> None:
    assert argument_kind_of_source(argument, {"e"}) == kind


def test_the_names_a_comprehension_binds_to_what_iterates_over_a_live_exception_follow_its_generators() -> None:
    assert comprehension_names(ast.parse("[y for x in [e] for y in x]").body[0], {"e"}) == {"x", "y"}
    assert comprehension_names(ast.parse("[y for x in xs for y in x]").body[0], {"e"}) == set()


def test_a_name_bound_only_to_safe_values_is_safe_and_one_bound_once_to_anything_else_is_not() -> None:

    body = ast.parse("msg = repr(e)\nif x:\n    text = 'a'\nelse:\n    text = str(e)\nmixed = 'a'\nmixed = e\n").body
    assert safe_names(body) == {"msg", "text"}
