"""`sites --write` never replaces a file that is no sites record, whatever it holds (text, bytes that are no UTF-8, an
empty file); the line about sites the record lacks names each of them."""

from __future__ import annotations

from pathlib import Path

import pytest
from warnonce_guard.common.errors import PathRefused
from warnonce_guard.rule import expected
from warnonce_guard.rule.sites import sites_in_source

from tests.toy import INTERFACE

FILE = "vllm/platforms/interface.py"
PAIRS = (("Platform", "vllm._C"), ("Other", "vllm._C_AVX2"))


@pytest.mark.parametrize("content", [b"notes\n", b"\xff\xfe not utf-8", b""], ids=["text", "not-utf8", "empty"])
def test_write_refuses_a_file_that_is_no_json_and_leaves_it_alone(tmp_path: Path, content: bytes) -> None:
    mine = tmp_path / "notes.json"
    mine.write_bytes(content)
    with pytest.raises(PathRefused, match="not an earlier sites record"):
        expected.write_target(mine)
    assert mine.read_bytes() == content


def test_the_line_about_sites_not_recorded_names_each_with_its_line_and_form(tmp_path: Path) -> None:
    other = """

class Other(Platform):
    @classmethod
    def import_kernels(cls) -> None:
        try:
            import vllm._C_AVX2  # noqa: F401
        except ImportError as e:
            logger.warning_once("Failed to import from vllm._C_AVX2: %s", e)
"""
    found = tuple(s for s in sites_in_source(INTERFACE + other, FILE, "vllm.platforms.interface") if s.cached)
    first, second = (f"{FILE}::{owner}.import_kernels::{module}" for owner, module in PAIRS)
    assert expected.Comparison((), found).new_line(tmp_path / "r.json") == (
        f"{tmp_path / 'r.json'}: 2 site(s) found that it does not record: {first} (line {found[0].line}, eager, "
        f"warning_once), {second} (line {found[1].line}, live, warning_once); {expected.RECORD_HELP}"
    )
    assert expected.Comparison((), ()).new_line(tmp_path / "r.json") is None
