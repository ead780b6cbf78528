"""Reports of a mutation run: Stryker JSON, the HTML viewer, a Markdown summary, JUnit XML, a terminal table.

`write_report` writes the four files into one directory atomically, holding its lock; `print_table` prints to
a console. Each writer reads only the `RunResult` (made printable first: `printable`), and each file names the
run that wrote it (`provenance`).
"""

from __future__ import annotations

import json
from pathlib import Path

from warnonce_guard.common import locks, ownership
from warnonce_guard.common.errors import ReportFailed
from warnonce_guard.common.files import Kind, replace_dir
from warnonce_guard.mutations.records import RunResult
from warnonce_guard.mutations.report import html, junit, provenance, stryker, summary, viewer
from warnonce_guard.mutations.report.printable import printable_result
from warnonce_guard.mutations.report.terminal import print_table

__all__ = ["FILES", "print_table", "write_report"]

FILES = ("mutation.json", "index.html", "summary.md", "junit.xml")


def write_report(result: RunResult, out_dir: Path, viewer_js: Path | None = None) -> list[Path]:
    """Write mutation.json, index.html, summary.md and junit.xml into `out_dir`, replacing it whole.

    `out_dir` must be missing, empty or an earlier report (its marker present): anything else is refused
    (`PathRefused`) and left as it was, with nothing written beside it. The check and the write hold
    `out_dir`'s lock (`locks.out_dir`; a run holds it from its start): another writer is `WorkDirBusy`.

    `viewer_js` is mutation-testing-elements' `dist/mutation-test-elements.js`; by default the one this
    package ships (`report.viewer`). Nothing is written until every file has been rendered into a
    temporary sibling of `out_dir`. Every file says which run wrote it (`result.run`, see `provenance`).
    """
    out_dir = ownership.check_out_dir(Path(out_dir), ())  # before the lock: a refused path gets no lock file
    bundle = (viewer_js if viewer_js is not None else viewer.find_viewer()).read_text(encoding="utf-8")
    result = printable_result(result)  # a path's undecodable byte as \xNN: UTF-8 and XML cannot hold it raw
    report = stryker.build(result)
    try:
        with locks.out_dir(out_dir):
            ownership.check_out_dir(out_dir, ())  # again under the lock, at the last moment: replace only ours
            with replace_dir(out_dir, Kind.REPORT) as building:
                text = json.dumps(report, indent=2, ensure_ascii=False) + "\n"
                (building / "mutation.json").write_text(text, "utf-8")
                page = html.render(report, bundle, provenance.headline(result), result.score_note)
                (building / "index.html").write_text(page, "utf-8")
                (building / "summary.md").write_text(summary.render(result), "utf-8")
                (building / "junit.xml").write_bytes(junit.render(result))
    except OSError as err:
        why = err.strerror or err
        raise ReportFailed(f"--out {out_dir}: cannot write the report ({why}); pass a writable path") from None
    return [out_dir / name for name in FILES]
