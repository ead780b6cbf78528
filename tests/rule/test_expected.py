"""The sites record (`rule.expected`): what `sites --write` writes and `--expect-sites` reads and compares."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from warnonce_guard.common.errors import BadSitesRecord, ExitCode, ExpectedSitesMissing, PathRefused, PathUnusable
from warnonce_guard.rule import expected
from warnonce_guard.rule.sites import Site, sites_in_source

from tests.toy import INTERFACE

TWO = (
    INTERFACE
    + """

class Other(Platform):
    @classmethod
    def import_kernels(cls) -> None:
        try:
            import vllm._C_AVX2  # noqa: F401
        except ImportError as e:
            logger.warning_once("Failed to import from vllm._C_AVX2: %s", repr(e))
            logger.warning("and a plain one: %s", repr(e))
"""
)


def sites(source: str = TWO) -> list[Site]:
    return sites_in_source(source, "vllm/platforms/interface.py", "vllm.platforms.interface")


def recorded(tmp_path: Path, found: list[Site]) -> Path:
    path = tmp_path / "sites.json"
    expected.write(expected.write_target(path), found, "vLLM 9.9.9")
    return path


def test_a_record_holds_the_cached_sites_by_identity_and_reads_back(tmp_path: Path) -> None:
    found = sites()
    data = json.loads(recorded(tmp_path, found).read_text(encoding="utf-8"))

    assert data["kind"] == expected.KIND and data["recorded_from"] == "vLLM 9.9.9"
    assert [row["id"] for row in data["sites"]] == sorted(s.id for s in found if s.cached)
    assert len(data["sites"]) == 2  # the plain warning is not guarded: not recorded
    assert expected.read(tmp_path / "sites.json") == [
        expected.Expected(r["id"], r["line"], r["form"]) for r in data["sites"]
    ]


def test_the_same_sites_on_shifted_lines_compare_equal(tmp_path: Path) -> None:
    path = recorded(tmp_path, sites())
    comparison = expected.compare(expected.read(path), sites("\n\n\n" + TWO))

    assert comparison == expected.Comparison((), ())
    comparison.check(path)  # nothing missing: no error


def test_a_site_gone_is_missing_and_fails_naming_it_and_a_new_one_is_noted(tmp_path: Path) -> None:
    path = recorded(tmp_path, sites())
    gone = TWO.replace("import vllm._C_AVX2  # noqa: F401", "import vllm._C_AVX512  # noqa: F401")
    comparison = expected.compare(expected.read(path), sites(gone))

    assert [e.id for e in comparison.missing] == ["vllm/platforms/interface.py::Other.import_kernels::vllm._C_AVX2#0"]
    assert [s.id for s in comparison.new] == ["vllm/platforms/interface.py::Other.import_kernels::vllm._C_AVX512#0"]
    with pytest.raises(ExpectedSitesMissing, match=r"^1 expected site\(s\) of .* not found, so not guarded: ") as err:
        comparison.check(path)
    assert err.value.exit_code == ExitCode.CHECK_FAILED
    assert "Other.import_kernels::vllm._C_AVX2#0 (line " in str(err.value)
    assert "_C_AVX512#0" in (comparison.new_line(path) or "")


def test_a_site_driven_through_a_platform_class_is_its_own_identity() -> None:
    (site, _) = [s for s in sites() if s.cached]
    assert expected.key(replace(site, driver="plugin.p:P")) == f"{site.id} via plugin.p:P"


@pytest.mark.parametrize(
    ("text", "error", "says"),
    [
        ("{", BadSitesRecord, "not JSON"),
        ("[]", BadSitesRecord, "not a sites record"),
        (json.dumps({"kind": expected.KIND, "version": 99, "sites": []}), BadSitesRecord, "of version 99"),
        (json.dumps({"kind": expected.KIND, "version": 1, "sites": [{"line": 1}]}), BadSitesRecord, "without 'id'"),
    ],
    ids=["not-json", "not-a-record", "another-version", "a-site-without-id"],
)
def test_a_file_that_is_no_record_is_bad_input_naming_why(tmp_path: Path, text: str, error: type, says: str) -> None:
    path = tmp_path / "f.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(error, match=says) as caught:
        expected.read(path)
    assert caught.value.exit_code == ExitCode.BAD_INPUT


def test_a_missing_record_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(PathUnusable, match="no such file; record one with `warnonce-guard sites --write FILE`"):
        expected.read(tmp_path / "absent.json")


def test_write_replaces_an_earlier_record_but_never_a_file_of_the_users(tmp_path: Path) -> None:
    path = recorded(tmp_path, sites())
    assert expected.write_target(path) == path  # an earlier record: replaced

    mine = tmp_path / "notes.json"
    mine.write_text('{"mine": true}', encoding="utf-8")
    with pytest.raises(PathRefused, match="not an earlier sites record"):
        expected.write_target(mine)
    assert mine.read_text(encoding="utf-8") == '{"mine": true}'
    with pytest.raises(PathUnusable, match="a directory"):
        expected.write_target(tmp_path)


def test_a_site_in_a_file_whose_name_is_not_utf8_is_recorded_and_found_again(tmp_path: Path) -> None:
    """A file name's undecodable byte (`\\udcff`, as Python reads it) is written escaped, not a crash at the write
    (UnicodeEncodeError, exit 70), and reads back as the same identity."""
    found = [replace(s, file="vllm/platforms/inter\udcffface.py") for s in sites()]
    path = recorded(tmp_path, found)

    assert expected.compare(expected.read(path), found) == expected.Comparison((), ())


@pytest.mark.parametrize(
    "rows",
    [["abc"], [None], {"a": 1}, None, [{"id": "x", "line": "one", "form": "eager"}]],
    ids=["a-string", "null", "an-object", "no-list", "a-line-not-a-number"],
)
def test_a_record_whose_sites_are_not_rows_says_what_a_row_holds(tmp_path: Path, rows: object) -> None:
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"kind": expected.KIND, "version": 1, "sites": rows}), encoding="utf-8")
    with pytest.raises(BadSitesRecord, match=r"not a list of sites \{id, line, form\}") as caught:
        expected.read(path)
    assert "string indices" not in str(caught.value) and "NoneType" not in str(caught.value)
