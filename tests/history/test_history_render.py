"""The sweep's JSON and Markdown table: what a row says, and files written whole or not at all."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
from warnonce_guard.common import files
from warnonce_guard.common.errors import PathRefused, PathUnusable, ReportFailed
from warnonce_guard.guards.sessions import RecordKind
from warnonce_guard.history.records import HistoryReport, ReleaseVerdict, SiteOutcome, Verdict
from warnonce_guard.history.render import FILES, check_outputs, row, to_json, to_markdown, write_outputs

from tests import layout
from tests.history_support import INTERFACE_SITE, LEAKS, META

EXPOSED = ReleaseVerdict(
    META, Verdict.EXPOSED, sites=6, live=6, live_calls=20, detectors=LEAKS,
    site_outcomes=(SiteOutcome(INTERFACE_SITE, RecordKind.LEAK, LEAKS, "fired"),), duration_s=12.3,
)  # fmt: skip
NO_SITES = ReleaseVerdict(
    replace(META, version="0.11.0"), Verdict.NO_SITES, plain_sites=3, reason="no import_kernels | in vllm/platforms"
)
WHEEL = ReleaseVerdict(
    replace(
        META,
        version="0.15.0",
        source="vllm-0.15.0-cp38-abi3-manylinux_2_31_aarch64.whl",
        fallback="no sdist on the index",
        yanked="broken",
    ),
    Verdict.NOT_CHECKED,
    reason="needs module `cloudpickle`: add `cloudpickle` (pinned) to requirements/history-env.txt",
)


def report(*verdicts: ReleaseVerdict) -> HistoryReport:
    return HistoryReport(
        command="nox -s history -- --from 0.11.0 --to 0.33.0 --out docs",
        generated="2026-11-30T06:00:00+00:00",
        fingerprint="f00dfeedf00dfeed",
        environment="Python 3.11.7, torch 2.13.0+cpu",
        verdicts=verdicts or (EXPOSED, NO_SITES, WHEEL),
        checked=2,
        from_cache=1,
        duration_s=75.0,
    )


def test_an_exposed_row_lists_sites_forms_and_detectors() -> None:
    assert row(EXPOSED) == (
        "| 9.9.9 | 2026-01-02 | 6 | 6 live | 20 | exposed | exception retained, owner pinned, warning repeated |  |"
    )


def test_a_no_sites_row_counts_the_plain_sites_and_escapes_pipes_in_the_reason() -> None:
    assert (
        row(NO_SITES)
        == "| 0.11.0 | 2026-01-02 | 0 (3 plain) | – | – | no sites |  | no import_kernels \\| in vllm/platforms |"
    )


def test_a_row_says_when_the_release_was_yanked_or_checked_from_a_wheel() -> None:
    cells = row(WHEEL).split(" | ")
    assert cells[0] == "| 0.15.0 (yanked)" and cells[2] == "–" and cells[5] == "not checked"
    assert cells[7].endswith(
        "history-env.txt; checked from the wheel vllm-0.15.0-cp38-abi3-manylinux_2_31_aarch64.whl "
        "(no sdist on the index); yanked: broken |"
    )


def test_the_markdown_header_has_the_command_and_the_date_and_the_footer_the_counts() -> None:
    text = to_markdown(report())
    assert "Produced by `nox -s history -- --from 0.11.0 --to 0.33.0 --out docs` on 2026-11-30" in text
    assert "| release | date | sites | live/eager | live once-calls | verdict | detectors | reason |" in text
    assert "3 releases: 1 exposed, 0 guarded, 1 no sites, 1 not checked." in text
    assert "This run: 2 checked, 1 from the cache, 1 min 15 s." in text
    assert text.index("| 9.9.9 |") < text.index("| 0.11.0 |") < text.index("| 0.15.0 (yanked) |")


def test_the_json_keeps_every_verdict_and_reads_back_the_same() -> None:
    data = json.loads(to_json(report()))
    assert data["summary"] == {"exposed": 1, "guarded": 0, "no sites": 1, "not checked": 1}
    assert [ReleaseVerdict.from_json(r) for r in data["releases"]] == [EXPOSED, NO_SITES, WHEEL]


def test_both_files_are_written_and_no_temporary_file_is_left(tmp_path: Path) -> None:
    paths = write_outputs(report(), tmp_path / "docs")
    assert [p.name for p in paths] == list(FILES)
    assert sorted(p.name for p in (tmp_path / "docs").iterdir()) == sorted(FILES)


def test_a_write_that_fails_halfway_leaves_the_old_file_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "docs"
    write_outputs(report(), out)
    before = (out / "history.md").read_bytes()

    def no_space(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", no_space)
    with pytest.raises(ReportFailed, match=r"cannot write history\.json \(No space left on device\)"):
        write_outputs(report(EXPOSED), out)
    monkeypatch.undo()
    assert (out / "history.md").read_bytes() == before
    assert sorted(os.listdir(out)) == sorted(FILES)


@pytest.mark.parametrize("name", FILES)
def test_a_file_of_the_same_name_it_did_not_write_is_refused_and_kept(tmp_path: Path, name: str) -> None:
    out = tmp_path / "docs"
    out.mkdir()
    (out / name).write_text("# my notes on vLLM's history\n", encoding="utf-8")
    with pytest.raises(PathRefused, match=f"{name} there was not written by warnonce-guard history"):
        write_outputs(report(), out)
    assert sorted(os.listdir(out)) == [name]
    assert (out / name).read_text(encoding="utf-8") == "# my notes on vLLM's history\n"


def test_its_own_tables_are_replaced_beside_other_files(tmp_path: Path) -> None:
    out = tmp_path / "docs"
    out.mkdir()
    (out / "index.md").write_text("other docs\n", encoding="utf-8")
    write_outputs(report(), out)
    write_outputs(report(EXPOSED), out)
    assert "| exposed |" in (out / "history.md").read_text(encoding="utf-8")
    assert sorted(os.listdir(out)) == sorted([*FILES, "index.md"])


def test_a_file_where_the_out_directory_should_be_is_refused(tmp_path: Path) -> None:
    (tmp_path / "docs").write_text("x", encoding="utf-8")
    with pytest.raises(PathUnusable, match="a file is there, not a directory"):
        check_outputs(tmp_path / "docs")


def test_the_published_tables_read_back_and_render_to_themselves() -> None:
    """docs/history.json and docs/history.md are a sweep's output: a change to a record's shape shows here."""
    text = (layout.ROOT / "docs" / "history.json").read_text(encoding="utf-8")
    data = json.loads(text)
    published = HistoryReport(
        command=data["command"],
        generated=data["generated"],
        fingerprint=data["fingerprint"],
        environment=data["environment"],
        verdicts=tuple(ReleaseVerdict.from_json(r) for r in data["releases"]),
        prereleases_left_out=tuple(data["prereleases_left_out"]),
        checked=data["run"]["checked"],
        from_cache=data["run"]["from_cache"],
        duration_s=data["run"]["duration_s"],
        with_fix=data["with_fix"],
    )
    assert to_json(published) == text
    assert to_markdown(published) == (layout.ROOT / "docs" / "history.md").read_text(encoding="utf-8")
