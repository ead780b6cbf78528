"""What strict mode lets into a `*_once` cache (strict/contract.py): every kind's examples classify as that
kind, pass or fail as the kind says, and README's strict-mode table is the one generated from the table."""

from __future__ import annotations

import enum
import importlib
import sys
import types

import pytest
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
