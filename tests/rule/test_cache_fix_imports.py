"""Where the fix's writer (`rule.cache_fix`) takes `Mapping` from: the module's own import of it, its
`from collections.abc import ...` line, or a line of its own where isort puts it among the standard library's imports;
a module importing nothing from the standard library is refused."""

from __future__ import annotations

import ast

import pytest
from warnonce_guard.common.errors import LoggerNotPatchable
from warnonce_guard.caches.cache_fix import _mapping_import

CACHE = "from functools import lru_cache\n"


def _imported(source: str) -> tuple[str, list[tuple[int, int, int, int, str]]]:
    name, edits = _mapping_import(ast.parse(source))
    return name, [(e.line, e.column, e.end_line, e.end_column, e.text) for e in edits]


@pytest.mark.parametrize(
    ("source", "name"),
    [("from typing import Mapping as M\n", "M"), ("from collections.abc import Mapping\n", "Mapping")],
)
def test_a_module_that_imports_mapping_keeps_its_name_for_it(source: str, name: str) -> None:
    assert _imported(source) == (name, [])


def test_mapping_joins_the_modules_import_from_collections_abc_in_order() -> None:
    source = "import os\nfrom collections.abc import Sequence, Iterator\n"
    assert _imported(source) == ("Mapping", [(2, 0, 3, 0, "from collections.abc import Iterator, Mapping, Sequence\n")])


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("import os\n" + CACHE, 2),  # before the first `from` import that sorts after collections.abc
        ("from abc import ABC\nimport zlib\n" + CACHE + "import vllm\n", 3),
        ("import os\nimport sys\n\nimport vllm\n", 3),  # none: after the last of the standard library's imports
        ("import os\nfrom abc import (\n    ABC,\n)\nfrom vllm import envs\n", 5),  # after a parenthesised one
        ("from . import envs\nimport os\n", 3),  # a relative import is no standard library module
        ("import os.path\nimport vllm\n", 2),  # a submodule of the standard library's
    ],
)
def test_a_line_of_its_own_goes_where_isort_puts_it(source: str, line: int) -> None:
    assert _imported(source) == ("Mapping", [(line, 0, line, 0, "from collections.abc import Mapping\n")])


def test_a_module_importing_nothing_from_the_standard_library_is_refused() -> None:
    with pytest.raises(LoggerNotPatchable) as refused:
        _imported("import vllm\nfrom . import envs\n")
    assert str(refused.value) == "it imports nothing from the standard library: no place for `Mapping`'s import"
