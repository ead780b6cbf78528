"""The leak operators: each against its own examples, then where they must and must not fire."""

from __future__ import annotations

import difflib
from dataclasses import replace

import libcst as cst
import pytest
from warnonce_guard.mutations.operators import (
    OPERATORS,
    describe_operators,
    mutate_try,
    not_applied,
    operator_of,
    operators_for,
)
from warnonce_guard.rule.sites import sites_in_source

from tests.toy import INTERFACE, apply_operator

NAMES = list(OPERATORS)


def kernel_try(handler_body: str, imports: str = "import vllm._C", handler: str = "except ImportError as e:") -> str:
    """A module with one `try` around `imports` whose handler runs `handler_body` (one statement per line)."""
    body = "\n".join(f"    {line}" for line in handler_body.strip().splitlines())
    return f"try:\n    {imports}\n{handler}\n{body}\n"


def example_call(name: str) -> str:
    """The logging call of the operator's first example: a call that operator mutates."""
    before = OPERATORS[name].examples[0].before
    return next(line.strip() for line in before.splitlines() if "_once(" in line)


def changed_lines(before: str, after: str) -> list[str]:
    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def only_mutant(name: str, source: str) -> str:
    mutants = apply_operator(name, source)
    assert len(mutants) == 1, mutants
    return mutants[0]


# ---- the operators' own examples ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "index"),
    [(name, i) for name, op in OPERATORS.items() for i in range(len(op.examples))],
)
def test_operator_turns_each_example_into_its_after(name: str, index: int) -> None:
    example = OPERATORS[name].examples[index]
    expected = [] if example.after is None else [example.after]
    assert apply_operator(name, example.before) == expected


def test_every_operator_shows_a_mutant_first_and_a_case_it_leaves_alone() -> None:
    for name, op in OPERATORS.items():
        assert op.examples and op.examples[0].after is not None, name
        assert any(example.after is None for example in op.examples), name


def test_new_operators_go_last_so_that_existing_mutant_names_stay_stable() -> None:
    # mutmut numbers a function's mutants in operator order: the first operators keep their numbers
    assert NAMES[:3] == ["eager-repr-revert", "live-arg", "once-dropped"]


def test_describe_operators_gives_one_row_per_operator_with_a_before_after_line() -> None:
    rows = describe_operators()
    assert [row[0] for row in rows] == NAMES
    by_name = {name: example for name, _, example in rows}
    assert by_name["eager-repr-revert"] == (
        'logger.warning_once("Failed to import from vllm._C: %s", repr(e)) -> '
        'logger.warning_once("Failed to import from vllm._C: %r", e)'
    )
    assert all(description and "\n" not in description for _, description, _ in rows)


def test_operators_for_has_mutmuts_shape_and_binds_the_package() -> None:
    pairs = operators_for(package="mypkg")
    assert [t for t, _ in pairs] == [cst.Try | cst.TryStar] * len(OPERATORS)  # `except*` guards an import too
    for index, name in enumerate(NAMES):
        call = example_call(name).replace("logger.", "log.")
        source = kernel_try(call, imports="import mypkg._C")
        for kind, try_source in ((cst.Try, source), (cst.TryStar, source.replace("except ", "except* "))):
            try_node = cst.parse_module(try_source).body[0]
            assert type(try_node) is kind and isinstance(try_node, pairs[index][0])
            assert len(list(pairs[index][1](try_node))) == 1, (name, try_source)
            assert list(operators_for()[index][1](try_node)) == [], name  # for vllm this is no kernel import


# ---- the basic mutant of each operator ------------------------------------------------------------

SIMPLE = kernel_try('logger.warning_once("Failed to import from vllm._C: %s", repr(e))')


def test_eager_repr_revert_puts_the_original_bug_back() -> None:
    assert changed_lines(SIMPLE, only_mutant("eager-repr-revert", SIMPLE)) == [
        '-    logger.warning_once("Failed to import from vllm._C: %s", repr(e))',
        '+    logger.warning_once("Failed to import from vllm._C: %r", e)',
    ]


def test_live_arg_passes_the_exception_and_keeps_percent_s() -> None:
    assert changed_lines(SIMPLE, only_mutant("live-arg", SIMPLE))[1] == (
        '+    logger.warning_once("Failed to import from vllm._C: %s", e)'
    )


@pytest.mark.parametrize(
    ("once", "plain"),
    [("warning_once", "warning"), ("info_once", "info"), ("debug_once", "debug"), ("error_once", "error")],
)
def test_once_dropped_calls_the_uncached_method(once: str, plain: str) -> None:
    source = kernel_try(f'logger.{once}("x: %s", repr(e))')
    assert changed_lines(source, only_mutant("once-dropped", source))[1] == f'+    logger.{plain}("x: %s", repr(e))'


# ---- no mutant where the pattern is absent ----------------------------------------------------------

ABSENT = {
    "plain warning": kernel_try('logger.warning("Failed to import from vllm._C: %s", repr(e))'),
    "non-kernel import": kernel_try('logger.warning_once("x: %s", repr(e))', imports="import vllm.envs"),
    "kernel of another package": kernel_try('logger.warning_once("x: %s", repr(e))', imports="import torch._C"),
    "handler not catching ImportError": kernel_try(
        'logger.warning_once("x: %s", repr(e))', handler="except ValueError as e:"
    ),
    "outside any try": 'import vllm._C\ne = ImportError("x")\nlogger.warning_once("x: %s", repr(e))\n',
    "in the try body, not the handler": (
        'try:\n    import vllm._C\n    logger.warning_once("x: %s", repr(e))\nexcept ImportError as e:\n    pass\n'
    ),
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("case", list(ABSENT))
def test_no_mutant_where_the_pattern_is_absent(name: str, case: str) -> None:
    assert apply_operator(name, ABSENT[case]) == []


def test_a_handler_logging_the_exception_and_another_name_reverts_only_the_exception_call() -> None:
    source = kernel_try('logger.debug_once("x: %s", repr(other_var))\nlogger.warning_once("y: %s", repr(e))')
    fitting = [name for name in NAMES if apply_operator(name, source) and name != "once-dropped"]
    assert fitting
    for name in fitting:
        diff = changed_lines(source, only_mutant(name, source))
        assert len(diff) == 2 and "other_var" not in "".join(diff), (name, diff)


@pytest.mark.parametrize(
    "source",
    [
        kernel_try('logger.warning_once("x: %s", repr(err))', handler="except ImportError:"),
        kernel_try('logger.debug_once("x: %s", repr(other_var))'),
        kernel_try('logger.warning_once("kernels missing")'),
    ],
    ids=["handler-without-a-name", "another-name-formatted", "no-argument"],
)
def test_every_once_call_of_a_kernel_import_handler_gets_the_once_dropped_mutant_and_no_revert(source: str) -> None:
    assert {name: len(apply_operator(name, source)) for name in NAMES} == {
        name: int(name == "once-dropped") for name in NAMES
    }


def test_each_once_call_of_one_handler_is_dropped_in_a_mutant_of_its_own() -> None:
    source = kernel_try('logger.debug_once("x: %s", repr(other_var))\nlogger.warning_once("y: %s", repr(e))')
    mutants = apply_operator("once-dropped", source)
    assert len(mutants) == 2
    assert all(len(changed_lines(source, mutant)) == 2 for mutant in mutants)


def test_str_of_the_exception_is_not_the_repr_revert_pattern_but_is_a_live_arg() -> None:
    source = kernel_try('logger.warning_once("x: %s", str(e))')
    assert apply_operator("eager-repr-revert", source) == []
    assert 'logger.warning_once("x: %s", e)' in only_mutant("live-arg", source)


def test_a_live_site_gets_only_the_once_dropped_mutant() -> None:
    source = kernel_try('logger.warning_once("x: %r", e)')
    assert {name: len(apply_operator(name, source)) for name in NAMES} == {
        name: int(name == "once-dropped") for name in NAMES
    }


# ---- format strings ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (
            'logger.warning_once("%s failed for %d: %s", name, n, repr(e))',
            'logger.warning_once("%s failed for %d: %r", name, n, e)',
        ),
        (
            'logger.warning_once("100%% of %s: %s", name, repr(e))',
            'logger.warning_once("100%% of %s: %r", name, e)',
        ),
        (
            'logger.warning_once("%s: failed (%s)", repr(e), name)',
            'logger.warning_once("%r: failed (%s)", e, name)',
        ),
        (
            'logger.warning_once("%*d %-20s", width, n, repr(e))',
            'logger.warning_once("%*d %-20r", width, n, e)',
        ),
        ("logger.warning_once('x: %s', repr(e))", "logger.warning_once('x: %r', e)"),
        ('logger.warning_once(u"x: %s", repr(e))', 'logger.warning_once(u"x: %r", e)'),
        ("logger.warning_once(R'x\\d: %s', repr(e))", "logger.warning_once(R'x\\d: %r', e)"),
        ('logger.warning_once("""x: %s""", repr(e))', 'logger.warning_once("""x: %r""", e)'),
        (
            'logger.warning_once("\\tx\\n\\N{BULLET} %s\\u00e9", repr(e))',
            'logger.warning_once("\\tx\\n\\N{BULLET} %r\\u00e9", e)',
        ),
        (
            'logger.warning_once("x %s: " "%s", name, repr(e))',
            'logger.warning_once("x %s: " "%r", name, e)',
        ),
        (
            'logger.warning_once("x: %s", repr(e), stacklevel=2)',
            'logger.warning_once("x: %r", e, stacklevel=2)',
        ),
    ],
    ids=[
        "several placeholders",
        "percent escape",
        "exception first",
        "star width and flags",
        "single quotes",
        "u prefix",
        "raw prefix",
        "triple quotes",
        "escapes before and after",
        "implicit concatenation",
        "keyword after",
    ],
)
def test_eager_repr_revert_changes_only_the_placeholder_of_the_exception(call: str, expected: str) -> None:
    source = kernel_try(call)
    assert changed_lines(source, only_mutant("eager-repr-revert", source)) == [f"-    {call}", f"+    {expected}"]


@pytest.mark.parametrize(
    "call",
    [
        'logger.warning_once("x: %\\x73", repr(e))',  # the conversion letter is written as an escape
        'logger.warning_once(f"{name}: %s", repr(e))',  # f-string
        "logger.warning_once(MESSAGE, repr(e))",  # not a literal
        'logger.warning_once("x: %r", repr(e))',  # not the %s of the fix
        'logger.warning_once("x: %(err)s", repr(e))',  # mapping key
        'logger.warning_once("x: no placeholder", repr(e))',
        'logger.warning_once("x: %s %s", *names, repr(e))',  # positions after *args are unknown
    ],
)
def test_eager_repr_revert_skips_messages_it_cannot_edit_safely(call: str) -> None:
    assert apply_operator("eager-repr-revert", kernel_try(call)) == []


# ---- layout and multiplicity --------------------------------------------------------------------------

CPU_BRANCHES = """\
class CpuPlatform:
    @classmethod
    def import_kernels(cls) -> None:
        if torch.cpu._is_avx512_supported():
            try:
                import vllm._C  # noqa: F401
            except ImportError as e:
                logger.warning_once(
                    "Failed to import from vllm._C: %s", repr(e)
                )
        else:
            try:
                import vllm._C  # noqa: F401
            except ImportError as e:
                logger.warning_once("Failed to import from vllm._C: %s", repr(e))
"""


@pytest.mark.parametrize(
    ("name", "line"),
    [
        ("eager-repr-revert", '                    "Failed to import from vllm._C: %r", e'),
        ("live-arg", '                    "Failed to import from vllm._C: %s", e'),
        ("once-dropped", "                logger.warning("),
    ],
)
def test_a_multi_line_call_keeps_its_layout(name: str, line: str) -> None:
    first = apply_operator(name, CPU_BRANCHES)[0]
    diff = changed_lines(CPU_BRANCHES, first)
    assert len(diff) == 2 and diff[1] == f"+{line}"
    assert len(first.splitlines()) == len(CPU_BRANCHES.splitlines())


@pytest.mark.parametrize("name", NAMES)
def test_each_call_gets_its_own_mutant_with_only_that_call_changed(name: str) -> None:
    call = example_call(name)
    first, second = call.replace("Failed to import", "a:"), call.replace("Failed to import", "b:")
    source = kernel_try(f"if fatal:\n    {first}\nelse:\n    {second}")
    mutants = apply_operator(name, source)
    assert len(mutants) == 2
    assert [len(changed_lines(source, m)) for m in mutants] == [2, 2]
    assert "a: " in changed_lines(source, mutants[0])[0] and "b: " in changed_lines(source, mutants[1])[0]


@pytest.mark.parametrize(
    "imports", ["from . import _C", "from .. import _C_AVX2", "from vllm import _C", "import vllm._moe_C"]
)
def test_kernel_imports_of_every_form_are_sites(imports: str) -> None:
    for name in NAMES:
        assert len(apply_operator(name, kernel_try(example_call(name), imports=imports))) == 1, name


def test_operator_of_names_the_operator_behind_a_mutant() -> None:
    for name, op in OPERATORS.items():
        try_node = cst.parse_module(kernel_try(example_call(name))).body[0]
        assert isinstance(try_node, cst.Try)
        (mutated,) = mutate_try(op.function, try_node, "vllm")
        assert operator_of(try_node, mutated) == name
        assert operator_of(try_node, try_node) is None


def test_an_operator_without_a_mutant_at_a_site_says_what_it_needs_or_where_the_call_stands() -> None:
    (site,) = sites_in_source(INTERFACE, "vllm/platforms/interface.py", "vllm.platforms.interface")
    made = [name for name in NAMES if name != "fstring-revert"]
    assert not_applied(site, made) == {"fstring-revert": "needs a plain f-string message that formats e"}
    assert not_applied(site, NAMES) == {}
    after = not_applied(replace(site, place="after"), [])
    assert after == dict.fromkeys(NAMES, "the call is after the handler: no operator rewrites it there")
    through = not_applied(replace(site, via="_warn"), [])
    assert set(through.values()) == {"the call goes through `_warn`: no operator rewrites it there"}
