"""A site file's outline (mutations.engine.outline): what mutmut makes of it is what it makes of the file."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

import pytest
from warnonce_guard.mutations.engine import naming, seam
from warnonce_guard.mutations.engine.outline import Outline, outline
from warnonce_guard.mutations.operators import anchors_of, site_lines
from warnonce_guard.rule.sites import sites_in_source

FILE = "vllm/platforms/odd.py"
# Every layout the outline has to keep line for line: a docstring and a __future__ import before the first
# definition, decorated and one-line functions, a multi-line signature, tab and two-space bodies, comments indented
# past the end of a function, nested and empty-bodied classes, a class-level try, async methods, no final newline.
ODD = '''"""A platform file laid out every way Python allows."""
from __future__ import annotations

import functools

from vllm.logger import init_logger

logger = init_logger(__name__)


@functools.lru_cache
def cached(x): return x  # one line


class Other:
  def method(self):
    try:
      import vllm._C  # noqa: F401
    except ImportError:
      pass


class OddPlatform(Other):
    """The class holding the sites."""

    attribute = 1
    try:
        import vllm._moe_C as moe  # noqa: F401
    except ImportError as e:
        logger.warning_once("Failed to import from vllm._moe_C: %s", repr(e))

    class Nested:
        def inner(self):
            return 1

    @classmethod
    def before(cls) -> int:
        return 2

    @classmethod
    def import_kernels(cls) -> None:
        try:
            import vllm._C  # noqa: F401
        except ImportError as e:
            logger.warning_once("Failed to import from vllm._C: %s", repr(e))
        # trailing comment in the body

    async def later(self):  # after the site
        return [
            1,
        ]

    def last(self): ...


def helper(
    a,
    b,
):
\treturn a + b
    # a comment indented past the function's end


def import_other() -> None:
    try:
        from vllm import _C_stable_libtorch  # noqa: F401
    except ImportError as e:
        logger.warning_once("Failed to import from vllm._C_stable_libtorch: %s", repr(e))


def tail():
    x = 1
    return x'''


def _lines(source: str) -> frozenset[int]:
    return site_lines(sites_in_source(source, FILE, "vllm.platforms.odd"))[FILE]


SITE_LINES = _lines(ODD)


def test_an_outline_keeps_every_line_holding_a_site_where_it_was_and_stubs_the_rest() -> None:
    shape = outline(ODD, SITE_LINES)
    assert shape is not None
    kept, original = shape.code.split("\n"), ODD.split("\n")
    assert len(kept) == len(original)
    assert [n + 1 for n, (a, b) in enumerate(zip(kept, original, strict=True)) if a != b] == [
        *(11, 12),  # cached, its decorator and all
        *range(15, 21),  # Other: its try's handler calls no `*_once` method, no operator fits it
        *range(32, 35),  # Nested
        *range(36, 39),  # before
        *range(48, 52),  # later
        53,  # last
        *range(56, 61),  # helper, not the comment after it
        *range(71, 74),  # tail, without a final newline
    ]
    assert [original for _, original in shape.stubs][-1] == "def tail():\n    x = 1\n    return x"
    assert shape.restore(shape.code) == ODD


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        (ODD, None),
        (ODD.replace("# one line", "# pragma: no mutate"), SITE_LINES),  # its regions may cross a stub
        (ODD.replace("\n", "\r\n"), SITE_LINES),
        (ODD.replace("\n\n\nclass Other", "\n\n\x0c\nclass Other"), SITE_LINES),
        ("def broken(:\n", frozenset({1})),
        ("try:\n    import vllm._C\nexcept ImportError as e:\n    pass\n", frozenset({2})),
    ],
    ids=["no-site-lines", "pragma", "crlf", "form-feed", "syntax-error", "nothing-to-stub"],
)
def test_no_outline_where_it_could_change_what_mutmut_makes(source: str, lines: frozenset[int] | None) -> None:
    assert outline(source, lines) is None


def test_restore_refuses_an_output_without_each_stub_exactly_once() -> None:
    shape = outline(ODD, SITE_LINES)
    assert isinstance(shape, Outline)
    first, _ = shape.stubs[0]
    assert shape.restore(shape.code.replace(first, "")) is None
    assert shape.restore(shape.code + first) is None


ANCHORS = anchors_of(sites_in_source(ODD, FILE, "vllm.platforms.odd"))


def _generated(source: str, lean: Mapping[str, frozenset[int]] | None, record: seam.Generation | None = None) -> Any:
    """mutmut's result for the file as its generator writes it, under `lean_generation(lean)` when given."""
    import mutmut.__main__ as mutmut_main

    anchors = anchors_of(sites_in_source(source, FILE, "vllm.platforms.odd"))
    with contextlib.ExitStack() as stack:
        if lean is not None:
            stack.enter_context(seam.lean_generation(lean))
        stack.enter_context(seam.our_operators(["vllm"], anchors))
        if record is not None:
            stack.enter_context(seam.each_generation(record))
        return mutmut_main.mutate_file_contents(FILE, source)


def test_mutmut_makes_from_the_outline_the_file_it_makes_from_the_source(mutmut_config: object) -> None:
    """Byte for byte: the mutated file, its mutants' names, their line spans and function hashes; and the mutants
    are described from the outline as from the file, under the file's own source (whose digest the run checks)."""
    described: dict[str, Any] = {}

    def record(file: str, source: str, parsed: str, module: Any, mutations: Any, where_is: Any) -> None:
        generated = naming.named(file, module, mutations)
        described.update(source=source, parsed=parsed)
        described["made"] = naming.describe(parsed, module, generated, where_is, ["vllm"], ANCHORS)

    lean = _generated(ODD, {FILE: SITE_LINES}, record)
    assert described["source"] == ODD and described["parsed"] == outline(ODD, SITE_LINES).code  # type: ignore[union-attr]
    functions = {name.partition("__mutmut_")[0] for name in lean.mutant_names}  # not the class-level try's
    assert functions == {"x\u01c1OddPlatform\u01c1import_kernels", "x_import_other"}
    assert lean == _generated(ODD, None)
    assert described["made"] == naming.made_here(FILE, ODD, ["vllm"], ANCHORS)


SITE = """def import_kernels() -> None:
    try:
        import vllm._C  # noqa: F401
    except ImportError as e:
        logger.warning_once("Failed to import from vllm._C: %s", repr(e))
"""
# Layouts an earlier outline got wrong (a review's reproducers): whether each is outlined, and the source.
LAYOUTS = {
    "a-backslash-joins-a-stub-to-the-next-line": (False, "def helper():\n    return 1 \\\n\n" + SITE),
    "a-backslash-joins-a-header-to-its-body": (False, "def helper(): \\\n    return 1\n    # c\n\n" + SITE),
    "a-body-on-the-def-line-then-an-indented-blank": (
        True,
        "import typing\n@typing.overload\ndef f(x: int) -> int: ...\n    \n" + SITE,
    ),
    "a-body-on-the-def-line-over-two-lines-then-a-comment": (True, "def h(): return (\n    1)\n    # c\n" + SITE),
    "a-decorated-one-line-class-then-a-comment": (True, "@dec\nclass H: pass\n    # c\n\n" + SITE),
    "the-site-function-defined-again-after-it": (True, SITE + "\n\ndef import_kernels():\n    pass\n"),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_generates_the_files_own_mutants_from_the_outline_or_from_the_file(
    mutmut_config: object, layout: str
) -> None:
    outlined, source = LAYOUTS[layout]
    lines = _lines(source)
    assert (outline(source, lines) is not None) is outlined
    assert _generated(source, {FILE: lines}) == _generated(source, None)


def test_an_output_the_stubs_cannot_be_put_back_into_is_generated_from_the_file(
    mutmut_config: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never a file with a stub in it: `restore` failing, the file is generated again from its own source."""
    calls: list[str] = []
    import mutmut.mutation.file_mutation as file_mutation

    mutate = file_mutation.mutate_file_contents

    def counted(filename: str, code: str, *args: Any) -> Any:
        calls.append(code)
        return mutate(filename, code, *args)

    monkeypatch.setattr(Outline, "restore", lambda self, generated: None)
    import mutmut.__main__ as mutmut_main

    monkeypatch.setattr(mutmut_main, "mutate_file_contents", counted)
    lean = _generated(ODD, {FILE: SITE_LINES})
    assert [code == ODD for code in calls] == [False, True]  # the outline, then the file
    monkeypatch.undo()
    assert lean == _generated(ODD, None)


DECORATED = "import functools\n\n\n@functools.cache\ndef f():\n    return 1\n\n\ndef g():\n    return 2\n"
F = "@functools.cache\ndef f():\n    return 1\n"
G = "def g():\n    return 2\n"


@pytest.mark.parametrize(("line", "stubbed"), [(3, [F, G]), (4, [G]), (5, [G]), (6, [G]), (7, [F, G])])
def test_a_definition_holds_every_line_from_its_first_decorator_to_its_last(line: int, stubbed: list[str]) -> None:
    shape = outline(DECORATED, {line})
    assert shape is not None and [original for _, original in shape.stubs] == stubbed


def test_a_line_ending_in_a_backslash_that_joins_nothing_still_outlines() -> None:
    """A comment that ends in a backslash then a blank, or in a backslash then more, joins no line to the next."""
    code = "def a():\n    return 1  # C:\\ \n\n\ndef b():\n    return 2  # C:\\X\n\n\ndef site():\n    pass\n"
    shape = outline(code, {10})
    assert shape is not None and len(shape.stubs) == 2
    assert shape.code.count("\n") == code.count("\n") and shape.restore(shape.code) == code
