"""The sites record (`rule.expected`): what `sites --write` writes and `--expect-sites` reads and compares."""

from __future__ import annotations

import errno
import json
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from warnonce_guard.common.errors import (
    BadSitesRecord,
    ExitCode,
    ExpectedSitesMissing,
    PathRefused,
    PathUnusable,
    StagingFailed,
    WorkDirBusy,
)
from warnonce_guard.rule import expected
from warnonce_guard.rule.site_row import Site
from warnonce_guard.rule.sites import sites_in_source

from tests.toy import INTERFACE

ROW = {"id": "x", "line": 1, "form": "eager", "call": "warning_once"}
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


def test_a_record_holds_the_guarded_sites_by_identity_and_reads_back(tmp_path: Path) -> None:
    found = sites()
    data = json.loads(recorded(tmp_path, found).read_text(encoding="utf-8"))

    assert data["kind"] == expected.KIND and data["recorded_from"] == "vLLM 9.9.9" and data["version"] == 2
    assert [row["id"] for row in data["sites"]] == sorted(s.id for s in found if s.guarded)
    assert len(data["sites"]) == 2  # one row per try: the plain warning beside a *_once call is no row of its own
    assert expected.read(tmp_path / "sites.json") == [
        expected.Expected(r["id"], r["line"], r["form"], r["call"], r["anchor"]) for r in data["sites"]
    ]


def test_the_same_sites_on_shifted_lines_compare_equal(tmp_path: Path) -> None:
    path = recorded(tmp_path, sites())
    comparison = expected.compare(expected.read(path), sites("\n\n\n" + TWO))

    assert comparison.missing == comparison.new == ()
    comparison.check(path)  # nothing missing: no error
    lines = sorted(s.line for s in sites() if s.guarded)
    assert sorted(note.rsplit(": ", 1)[1] for note in comparison.notes(path)) == [f"line {n} -> {n + 3}" for n in lines]


def test_a_changed_form_and_call_are_notes(tmp_path: Path) -> None:
    path = recorded(tmp_path, sites())
    live = TWO.replace(
        '"Failed to import from vllm._C_AVX2: %s", repr(e)', '"Failed to import from vllm._C_AVX2: %r", e'
    )
    comparison = expected.compare(expected.read(path), sites(live))

    assert comparison.missing == () and comparison.new == ()
    (note,) = comparison.notes(path)
    assert note.endswith("Other.import_kernels::vllm._C_AVX2: form eager -> live")
    unread = TWO.replace('logger.warning_once("Failed to import from vllm._C_AVX2: %s", repr(e))', "pass")
    (note,) = expected.compare(expected.read(path), sites(unread)).notes(path)
    assert note.endswith("Other.import_kernels::vllm._C_AVX2: line 22 -> 23, call warning_once -> warning")


def test_a_site_gone_is_missing_and_fails_naming_it_and_a_new_one_is_noted(tmp_path: Path) -> None:
    path = recorded(tmp_path, sites())
    gone = TWO.replace("import vllm._C_AVX2  # noqa: F401", "import vllm._C_AVX512  # noqa: F401")
    comparison = expected.compare(expected.read(path), sites(gone))

    assert [e.id for e in comparison.missing] == ["vllm/platforms/interface.py::Other.import_kernels::vllm._C_AVX2"]
    assert [s.id for s in comparison.new] == ["vllm/platforms/interface.py::Other.import_kernels::vllm._C_AVX512"]
    with pytest.raises(ExpectedSitesMissing, match=r"^1 expected site\(s\) of .* not found, so not guarded: ") as err:
        comparison.check(path)
    assert err.value.exit_code == ExitCode.CHECK_FAILED
    assert "Other.import_kernels::vllm._C_AVX2 (line " in str(err.value)
    assert "_C_AVX512 (line" in (comparison.new_line(path) or "")


def test_a_site_driven_through_a_platform_class_is_its_own_identity() -> None:
    (site, _) = [s for s in sites() if s.cached]
    assert expected.key(replace(site, driver="plugin.p:P")) == f"{site.id} via plugin.p:P"


@pytest.mark.parametrize(
    ("text", "error", "says"),
    [
        ("{", BadSitesRecord, "not JSON"),
        ("[]", BadSitesRecord, "not a sites record"),
        (json.dumps({"kind": expected.KIND, "version": 99, "sites": []}), BadSitesRecord, "of version 99"),
        (json.dumps({"kind": expected.KIND, "version": 1, "sites": []}), BadSitesRecord, "of version 1, not 2"),
        (json.dumps({"kind": expected.KIND, "version": 2, "sites": [{"line": 1}]}), BadSitesRecord, "without 'id'"),
        (json.dumps({"kind": expected.KIND, "version": 2, "sites": [], "extra": 1}), BadSitesRecord, "entry 'extra'"),
        (json.dumps({"kind": expected.KIND, "version": 2, "sites": [dict(ROW, why=1)]}), BadSitesRecord, "entry 'why'"),
        (
            json.dumps({"kind": expected.KIND, "version": 2, "sites": [ROW, ROW]}),
            BadSitesRecord,
            "the site x is recorded twice",
        ),
    ],
    ids=[
        "not-json",
        "not-a-record",
        "another-version",
        "by-occurrence",
        "a-site-without-id",
        "unknown",
        "its",
        "twice",
    ],
)
def test_a_file_that_is_no_record_is_bad_input_naming_why(tmp_path: Path, text: str, error: type, says: str) -> None:
    path = tmp_path / "f.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(error, match=says) as caught:
        expected.read(path)
    assert caught.value.exit_code == ExitCode.BAD_INPUT


def test_a_folder_given_as_the_record_says_it_is_a_file_to_read(tmp_path: Path) -> None:
    with pytest.raises(PathUnusable, match=r"a directory; pass the path of the file to read$"):
        expected.read(tmp_path)


def test_a_second_write_of_one_record_meanwhile_is_refused_saying_so(tmp_path: Path) -> None:
    path = tmp_path / "sites.json"
    busy = pytest.raises(WorkDirBusy, match="another warnonce-guard run is writing it")
    with expected.writing(path), busy as err, expected.writing(tmp_path / "." / "sites.json"):
        pass
    assert err.value.exit_code == ExitCode.ENVIRONMENT
    with expected.writing(path):  # released
        pass
    assert sorted(tmp_path.iterdir()) == []  # its lock is not left beside the record


def test_a_lock_that_cannot_be_taken_is_one_line_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    not_a_folder = tmp_path / "tmp"
    not_a_folder.write_text("")
    monkeypatch.setattr(expected.tempfile, "gettempdir", lambda: str(not_a_folder))
    with (
        pytest.raises(
            StagingFailed, match=r"cannot take its lock .*tmp/warnonce-guard-sites-\w+\.lock \(.*\); set TMPDIR"
        ),
        expected.writing(tmp_path / "sites.json"),
    ):
        pass
    assert not_a_folder.read_text() == ""


def test_a_full_disk_is_the_environments_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(expected, "write_atomic", full)
    with pytest.raises(StagingFailed, match=r"\(No space left on device\); free space") as err:
        expected.write(tmp_path / "s.json", sites(), "vLLM 9.9.9")
    assert err.value.exit_code == ExitCode.ENVIRONMENT


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

    assert expected.compare(expected.read(path), found) == expected.Comparison((), (), ())


@pytest.mark.parametrize(
    "rows",
    [["abc"], [None], {"a": 1}, None, [dict(ROW, line="one")]],
    ids=["a-string", "null", "an-object", "no-list", "a-line-not-a-number"],
)
def test_a_record_whose_sites_are_not_rows_says_what_a_row_holds(tmp_path: Path, rows: object) -> None:
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"kind": expected.KIND, "version": 2, "sites": rows}), encoding="utf-8")
    with pytest.raises(BadSitesRecord, match=r"not a list of sites \{id, line, form, call\}") as caught:
        expected.read(path)
    assert "string indices" not in str(caught.value) and "NoneType" not in str(caught.value)


# ---- the two position cases of issue 40, on vLLM 0.33.0's cpu.py ------------------------------------------------

CPU = "vllm/platforms/cpu.py"
BF16_SITE = """\
                    try:
                        import vllm._C  # noqa: F401
                    except ImportError as e:
                        logger.warning_once(
                            "Failed to import from vllm._C: %s", repr(e)
                        )
"""


def cpu_sites(text: str) -> list[Site]:
    return sites_in_source(text, CPU, "vllm.platforms.cpu")


def installed_cpu() -> str:
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    assert spec is not None and spec.origin is not None
    text = (Path(spec.origin).parent / "platforms" / "cpu.py").read_text(encoding="utf-8")
    assert text.count(BF16_SITE) == 1
    return text


def test_renaming_the_first_kernel_import_names_exactly_that_site_missing(tmp_path: Path) -> None:
    text = installed_cpu()
    path = recorded(tmp_path, cpu_sites(text))
    renamed = text.replace(BF16_SITE, BF16_SITE.replace("import vllm._C ", "import vllm._C_NEW "))

    comparison = expected.compare(expected.read(path), cpu_sites(renamed))

    (missing,) = comparison.missing
    assert missing.id.startswith(f"{CPU}::CpuPlatform.import_kernels::vllm._C [") and "bf16" in missing.id
    assert [s.kernel_module for s in comparison.new] == ["vllm._C_NEW"]


def test_a_site_moved_to_another_branch_is_missing_where_it_was_and_new_where_it_is(tmp_path: Path) -> None:
    text = installed_cpu()
    path = recorded(tmp_path, cpu_sites(text))
    avx2 = "                try:\n                    import vllm._C_AVX2  # noqa: F401\n"
    added = textwrap.indent(textwrap.dedent(BF16_SITE), " " * 16)
    assert text.count(avx2) == 1
    moved = text.replace(BF16_SITE, "                    pass\n").replace(avx2, added + avx2)

    comparison = expected.compare(expected.read(path), cpu_sites(moved))

    (missing,) = comparison.missing
    assert "bf16" in missing.id and missing.id.split("::")[2].startswith("vllm._C [")
    with pytest.raises(ExpectedSitesMissing, match="1 expected site"):
        comparison.check(path)
    (new,) = comparison.new
    assert new.kernel_module == "vllm._C" and new.branch.endswith("not (torch.cpu._is_avx512_supported())")


SAME_BRANCH = """
def import_kernels():
    try:
        import vllm._C  # noqa: F401
    except ImportError as e:
        logger.warning_once("first: %s", repr(e))
    try:
        import vllm._C  # noqa: F401
    except ImportError as e:
        logger.warning_once("second: %s", repr(e))
"""
FIRST_TRY = SAME_BRANCH[SAME_BRANCH.index("    try:") : SAME_BRANCH.index("    try:", 30)]


def test_of_two_tries_of_one_branch_the_one_removed_is_named_missing_not_the_one_left(tmp_path: Path) -> None:
    """`#2` is a position: the record's digest of each try tells which one went (it named the one left)."""
    path = recorded(tmp_path, sites(SAME_BRANCH))
    comparison = expected.compare(expected.read(path), sites(SAME_BRANCH.replace(FIRST_TRY, "")))

    assert [e.id for e in comparison.missing] == ["vllm/platforms/interface.py::import_kernels::vllm._C"]
    assert comparison.new == ()
    (note,) = comparison.notes(path)
    assert note.endswith(
        "import_kernels::vllm._C#2: line 10 -> 6, now vllm/platforms/interface.py::import_kernels::vllm._C"
    )


def test_a_record_without_digests_still_reads_and_compares_by_identity(tmp_path: Path) -> None:
    path = recorded(tmp_path, sites())
    data = json.loads(path.read_text(encoding="utf-8"))
    for row in data["sites"]:
        del row["anchor"]
    path.write_text(json.dumps(data), encoding="utf-8")

    assert [e.anchor for e in expected.read(path)] == ["", ""]  # unknown
    comparison = expected.compare(expected.read(path), sites())

    assert comparison.missing == comparison.new == comparison.changed == ()


def test_a_try_added_before_two_of_one_branch_is_the_new_site_and_the_two_keep_their_rows(tmp_path: Path) -> None:
    """The record's digests pair the two tries with the positions they moved to (`#2`, `#3`): the one added first is
    the new site, noted first, and nothing is missing."""
    path = recorded(tmp_path, sites(SAME_BRANCH))
    added = SAME_BRANCH.replace(
        "def import_kernels():\n", "def import_kernels():\n" + FIRST_TRY.replace("first", "new")
    )

    comparison = expected.compare(expected.read(path), sites(added))

    site = "vllm/platforms/interface.py::import_kernels::vllm._C"
    assert comparison.missing == ()
    assert comparison.notes(path) == [
        f"{path}: 1 site(s) found that it does not record: {site} (line 6, eager, warning_once); "
        f"{expected.RECORD_HELP}",
        f"{path}: {site}: line 6 -> 10, now {site}#2",
        f"{path}: {site}#2: line 10 -> 14, now {site}#3",
    ]


def test_every_recorded_site_not_found_is_named_in_the_one_line(tmp_path: Path) -> None:
    path = recorded(tmp_path, sites())
    (first, second) = expected.read(path)

    with pytest.raises(ExpectedSitesMissing) as err:
        expected.compare([first, second], []).check(path)
    assert str(err.value) == (
        f"2 expected site(s) of {path} not found, so not guarded: {first.id} (line {first.line} when recorded), "
        f"{second.id} (line {second.line} when recorded); if the site is gone on purpose, {expected.RECORD_HELP}"
    )
