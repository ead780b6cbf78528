"""The record's file: `sites --write` never replaces a file that is no sites record, whatever it holds (text, bytes
that are no UTF-8, an empty file); it writes a fixed layout; every path it or `--expect-sites` refuses is one line
naming the option, the path (and a symlink's target) and the fix; a record is read as UTF-8 whatever the locale."""

from __future__ import annotations

import errno
import json
import locale
import re
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path

import pytest
from warnonce_guard.common.errors import ExitCode, GuardError, PathRefused, PathUnusable
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


UNREAD = """
def import_kernels():
    try:
        import vllm._C  # noqa: F401
    except ImportError:
        pass
"""


def test_the_record_is_two_space_indented_json_and_an_unread_call_is_not_recognised(tmp_path: Path) -> None:
    """The record is committed and reviewed as a diff: its layout is fixed; a guarded import whose handler logs
    nothing discovery reads is recorded with the call `not recognised`."""
    (site,) = sites_in_source(UNREAD, FILE, "vllm.platforms.interface")
    path = tmp_path / "sites.json"
    expected.write(expected.write_target(path), [site], "vLLM 9.9.9")

    assert path.read_text(encoding="utf-8") == (
        "{\n"
        '  "kind": "warnonce-guard expected sites",\n'
        '  "version": 2,\n'
        '  "recorded_from": "vLLM 9.9.9",\n'
        '  "sites": [\n'
        "    {\n"
        f'      "id": "{FILE}::import_kernels::vllm._C",\n'
        '      "line": 4,\n'
        '      "form": "unknown",\n'
        '      "call": "not recognised",\n'
        f'      "anchor": "{site.anchor}"\n'
        "    }\n"
        "  ]\n"
        "}\n"
    )


def refused(
    error: type[GuardError], code: ExitCode, message: str
) -> AbstractContextManager[pytest.ExceptionInfo[GuardError]]:
    """`error` with exactly `message` (one line), of exit code `code`, is expected."""
    assert error.exit_code == code
    return pytest.raises(error, match=f"^{re.escape(message)}$")


def test_write_names_the_path_given_and_a_symlinks_target_in_its_refusals(tmp_path: Path) -> None:
    mine = tmp_path / "notes.json"
    mine.write_text("notes\n", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(mine)
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "absent" / "r.json")
    move = "not an earlier sites record; pass a new path or move it away"

    with refused(PathRefused, ExitCode.BAD_INPUT, f"--write {mine}: {move}"):
        expected.write_target(mine)
    with refused(PathRefused, ExitCode.BAD_INPUT, f"--write {link} (-> {mine}): {move}"):
        expected.write_target(link)
    with refused(
        PathUnusable, ExitCode.BAD_INPUT, f"--write {tmp_path}: a directory; pass the path of the file to write"
    ):
        expected.write_target(tmp_path)
    absent = tmp_path / "absent"
    with refused(
        PathUnusable,
        ExitCode.BAD_INPUT,
        f"--write {absent / 'r.json'}: {absent} is not a directory; pass a path in an existing one",
    ):
        expected.write_target(absent / "r.json")
    with refused(
        PathUnusable,
        ExitCode.BAD_INPUT,
        f"--write {dangling} (-> {absent / 'r.json'}): {absent} is not a directory; pass a path in an existing one",
    ):
        expected.write_target(dangling)
    assert mine.read_text(encoding="utf-8") == "notes\n"


def test_a_record_write_refused_by_permission_is_the_paths_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def denied(path: Path, text: str) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(expected, "write_atomic", denied)
    target = tmp_path / "s.json"
    with refused(
        PathUnusable,
        ExitCode.BAD_INPUT,
        f"--write {target}: cannot write it (Permission denied); pass a path you may write",
    ):
        expected.write(target, [], "vLLM 9.9.9")


def test_read_names_the_option_and_why_it_cannot_read_the_file(tmp_path: Path) -> None:
    with refused(
        PathUnusable, ExitCode.BAD_INPUT, f"--expect-sites {tmp_path}: a directory; pass the path of the file to read"
    ):
        expected.read(tmp_path)
    bytes_ = tmp_path / "r.json"
    bytes_.write_bytes(b"\xff{}")
    reason = "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"
    with refused(PathUnusable, ExitCode.BAD_INPUT, f"--expect-sites {bytes_}: cannot read it ({reason})"):
        expected.read(bytes_)


@pytest.fixture
def ascii_locale() -> Iterator[None]:
    """The locale's encoding is not UTF-8 (a machine whose LANG is `de_DE.ISO-8859-1`, say): here the C locale's
    ASCII stands in for it, set in this process (Python chose UTF-8 mode at start-up if the locale was C then)."""
    if sys.flags.utf8_mode:
        pytest.skip("in Python's UTF-8 mode every file is read as UTF-8 whatever the locale")
    was = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, was)


def test_a_record_reformatted_to_utf8_is_read_and_replaced_whatever_the_locale(
    tmp_path: Path, ascii_locale: None
) -> None:
    """A record is committed and read on other machines; a tool that reformats it (`jq .`) writes `é` as UTF-8."""
    found = [replace(s, file="vllm/platforms/plätform.py") for s in sites_in_source(UNREAD, FILE, "vllm.platforms.x")]
    path = tmp_path / "sites.json"
    expected.write(expected.write_target(path), found, "vLLM 9.9.9")
    path.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8")), ensure_ascii=False), encoding="utf-8")

    assert [e.id for e in expected.read(path)] == ["vllm/platforms/plätform.py::import_kernels::vllm._C"]
    assert expected.write_target(path) == path  # still an earlier record, replaced
