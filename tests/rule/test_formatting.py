"""%-style format strings: which placeholder formats which argument, and changing one conversion."""

from __future__ import annotations

import pytest
from warnonce_guard.rule.formatting import Placeholder, placeholder_for_arg, placeholders, with_conversion


def spans(fmt: str) -> list[tuple[str, str, int | None]]:
    """(placeholder text, conversion, argument index) for each placeholder of `fmt`."""
    return [(fmt[p.start : p.end], p.conversion, p.arg_index) for p in placeholders(fmt)]


def test_placeholders_are_numbered_by_the_argument_they_consume() -> None:
    assert spans("Failed to import from %s: %r") == [("%s", "s", 0), ("%r", "r", 1)]


def test_literal_percent_consumes_no_argument() -> None:
    assert spans("100%% of %s failed: %r") == [("%%", "%", None), ("%s", "s", 0), ("%r", "r", 1)]


def test_mapping_keys_consume_no_positional_argument() -> None:
    assert spans("%(module)s: %(error)r") == [("%(module)s", "s", None), ("%(error)r", "r", None)]


def test_star_width_and_precision_consume_arguments_of_their_own() -> None:
    assert spans("%*s %.*r %*.*d %s") == [("%*s", "s", 1), ("%.*r", "r", 3), ("%*.*d", "d", 6), ("%s", "s", 7)]


@pytest.mark.parametrize("placeholder", ["%-20r", "%#x", "%+05d", "% d", "%10.3f", "%ld", "%-*r"])
def test_flags_width_precision_and_length_belong_to_the_placeholder(placeholder: str) -> None:
    fmt = f"a {placeholder} b"

    ((text, _, index),) = spans(fmt)

    assert text == placeholder
    assert index == (1 if "*" in placeholder else 0)


def test_text_without_placeholders_has_none() -> None:
    assert placeholders("Failed to import from vllm._C") == []


def test_placeholder_for_arg_finds_the_one_formatting_that_argument() -> None:
    fmt = "%% %s then %*r"

    found = placeholder_for_arg(fmt, 2)

    assert found == Placeholder(start=fmt.index("%*r"), end=len(fmt), conversion="r", arg_index=2)
    assert placeholder_for_arg(fmt, 0) is not None
    assert placeholder_for_arg(fmt, 1) is None  # the `*` width, not a placeholder
    assert placeholder_for_arg(fmt, 3) is None


def test_placeholder_for_arg_ignores_mapping_keys() -> None:
    assert placeholder_for_arg("%(e)r", 0) is None


@pytest.mark.parametrize(
    ("fmt", "index", "conversion", "expected"),
    [
        ("Failed to import from vllm._C: %r", 0, "s", "Failed to import from vllm._C: %s"),
        ("%s: %-30r!", 1, "s", "%s: %-30s!"),
        ("%% %*r", 1, "s", "%% %*s"),
        ("%s and %s", 0, "r", "%r and %s"),
    ],
)
def test_with_conversion_changes_only_the_letter(fmt: str, index: int, conversion: str, expected: str) -> None:
    placeholder = placeholder_for_arg(fmt, index)
    assert placeholder is not None

    assert with_conversion(fmt, placeholder, conversion) == expected


def test_with_conversion_keeps_the_rendering_of_a_repr_argument() -> None:
    error = ImportError("No module named 'vllm._C'")
    fmt = "Failed: %-5r."
    placeholder = placeholder_for_arg(fmt, 0)
    assert placeholder is not None

    assert with_conversion(fmt, placeholder, "s") % repr(error) == fmt % error
