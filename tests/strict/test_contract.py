"""What strict mode lets into a `*_once` cache (strict/contract.py): every kind's examples classify as that
kind, pass or fail as the kind says, and README's strict-mode table is the one generated from the table."""

from __future__ import annotations

import enum
import importlib
import sys
import types

import pytest
from warnonce_guard.strict import contract
from warnonce_guard.strict.contract import KINDS, OTHER, classify, offence

from tools import readme

EXAMPLES = [(kind, example) for kind in KINDS for example in kind.examples]
# What an example may name: the modules its expression uses.
EXAMPLE_NAMESPACE = ("collections", "enum", "functools", "http", "inspect", "logging", "os", "re", "sys", "types")


def evaluate(example: str) -> object:
    return eval(example, {name: importlib.import_module(name) for name in EXAMPLE_NAMESPACE})


@pytest.mark.parametrize(("kind", "example"), EXAMPLES, ids=[example for _, example in EXAMPLES])
def test_each_example_is_its_kind_and_passes_or_fails_as_the_kind_says(kind: object, example: str) -> None:
    value = evaluate(example)
    assert classify(value) is kind
    assert (offence(value) is None) is kind.passes


def test_every_kind_has_examples_and_the_last_matches_anything() -> None:
    assert all(kind.examples for kind in KINDS)
    assert KINDS[-1] is OTHER and OTHER.matches(object()) and not OTHER.passes


def test_the_reference_pages_strict_table_is_generated_from_the_contract() -> None:
    text = readme.REFERENCE.read_text(encoding="utf-8")
    blocks = readme.REFERENCE_BLOCKS
    assert "strict" in blocks and "strict" not in readme.stale_blocks(text, blocks)  # else `python -m tools.readme`
    for kind in KINDS:
        assert f"| {kind.name} | {'yes' if kind.passes else 'no'} |" in text


class Mode(enum.Enum):
    """Shaped like vLLM's CUDAGraphMode (vllm/config/compilation.py): a module-level enum."""

    NONE = 0
    FULL = 2


def module_function() -> None:
    pass


class Holder:
    def method(self) -> None:
        pass

    @staticmethod
    def static() -> None:
        pass


@pytest.mark.parametrize(
    "value",
    [Mode.FULL, Mode, Holder, module_function, Holder.method, Holder.static, sys.modules[__name__], (Mode.NONE, "x")],
    ids=["enum-member", "enum-class", "class", "function", "class-function", "staticmethod", "module", "tuple"],
)
def test_what_lives_as_long_as_its_module_passes(value: object) -> None:
    assert offence(value) is None


def local_values() -> list[object]:
    class Local:
        pass

    captured = Local()

    def closure() -> object:
        return captured

    return [Local, closure, enum.Enum("Made", "A").A]


NOT_HELD = "class, function, enum member or module not held by name"
LOCAL = f"{__name__}.local_values.<locals>"


@pytest.mark.parametrize(
    ("value", "kind", "what"),
    [
        (Holder().method, "bound method", "method"),
        (ValueError("v"), "exception", "ValueError"),
        (["a"], "any other object", "list"),
        (local_values()[0], NOT_HELD, f"class {LOCAL}.Local"),
        (local_values()[1], NOT_HELD, f"function {LOCAL}.closure"),
        (lambda: 0, NOT_HELD, f"function {__name__}.<lambda>"),
        (local_values()[2], NOT_HELD, f"{__name__}.Made"),
        (types.ModuleType(__name__), NOT_HELD, "module"),
        (("a", Holder().method), "bound method", "tuple holding method at [1]"),
    ],
    ids=[
        "bound-method",
        "exception",
        "list",
        "local-class",
        "closure",
        "lambda",
        "local-enum",
        "detached-module",
        "tuple",
    ],
)
def test_what_can_carry_more_is_refused_by_its_kind(value: object, kind: str, what: str) -> None:
    refusal = offence(value)
    assert refusal is not None and (refusal.kind.name, refusal.what) == (kind, what)


class Broken:
    @property  # type: ignore[misc]
    def __class__(self) -> type:
        raise RuntimeError("no class")


def test_an_object_that_breaks_inspection_is_refused_not_raised() -> None:
    refusal = offence(Broken())
    assert refusal is not None and refusal.kind is OTHER


class Listed(enum.Enum):
    """A module-level enum whose member's value cannot be hashed: its class holds it by name all the same."""

    ITEMS = [1, 2]  # noqa: RUF012 - the point: a value that cannot be hashed


class NoQualname(type):
    """A metaclass hiding `__qualname__` (a broken class, as strict mode may meet in a test)."""

    def __getattribute__(cls, name: str) -> object:
        if name == "__qualname__":
            raise AttributeError(name)
        return super().__getattribute__(name)


class Anonymous(metaclass=NoQualname):
    pass


def stand_in(**attributes: object) -> object:
    """An object with the given `__module__`, `__qualname__` (as functions and classes have them)."""
    return types.SimpleNamespace(**attributes)


@pytest.mark.parametrize(
    "held",
    [
        stand_in(__module__=__name__),  # no __qualname__
        stand_in(__module__=["not", "a", "name"], __qualname__="Mode"),
        stand_in(__module__=__name__, __qualname__=5),
        stand_in(__module__=__name__, __qualname__="EXAMPLE_NAMESPACE.count"),  # a tuple: no __dict__ on the way
        stand_in(__module__=__name__, __qualname__="Mode.NONE.missing"),
    ],
    ids=["no qualname", "unhashable module", "qualname not a str", "no dict on the way", "not there"],
)
def test_an_object_not_held_by_its_module_under_its_name_is_not_held(held: object) -> None:
    assert contract._held_by_its_module(held) is False


def test_a_lambda_a_module_holds_under_the_name_lambda_is_still_made_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    """`<locals>` and `<lambda>` name what its definition makes each time, whatever a namespace holds."""
    module = types.ModuleType("lambdas")
    made = eval("lambda: 0")
    made.__module__ = "lambdas"
    module.__dict__["<lambda>"] = made
    monkeypatch.setitem(sys.modules, "lambdas", module)
    assert contract._held_by_its_module(made) is False


def test_an_enum_member_is_held_by_name_even_when_its_value_cannot_be_hashed() -> None:
    assert contract._enum_member(Listed.ITEMS) and offence(Listed.ITEMS) is None


def test_a_forged_enum_member_is_not_a_member() -> None:
    forged = object.__new__(Listed)
    forged._name_, forged._value_ = "FORGED", [3]
    assert contract._enum_member(forged) is False


def test_a_class_without_a_qualname_is_named_with_a_question_mark() -> None:
    assert contract._name(Anonymous) == f"class {__name__}.?"
