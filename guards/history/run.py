"""The sweep: for each selected release, newest first, a kept verdict or fetch -> survey -> guards -> classify.

Each release ends as one line on the console and in `<work dir>/history.log`, as soon as it is done; on a
terminal a progress bar shows which release and stage is under way. Only finished verdicts are kept, so
an interrupted sweep resumes where it stopped.
"""

from __future__ import annotations

import platform
import site
import sysconfig
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from guards.history import index as releases_index
from guards.history.cache import VerdictCache, tool_fingerprint
from guards.history.classify import classify, not_checked
from guards.history.core import run_guards
from guards.history.errors import BadWorkDir, FetchFailed
from guards.history.fetch import Fetched, fetch_release
from guards.history.records import HistoryReport, ReleaseMeta, ReleaseVerdict, Verdict
from guards.history.render import write_outputs
from guards.history.survey import survey

DEFAULT_WORK_DIR = Path(".warnonce-work/history")


@dataclass(frozen=True)
class Options:
    start: str | None = None
    end: str | None = None
    only: tuple[str, ...] = ()
    pre: bool = False
    work_dir: Path = DEFAULT_WORK_DIR
    out_dir: Path | None = None  # default: the work directory
    index_url: str = releases_index.DEFAULT_INDEX
    timeout_s: float = 900.0
    command: str = "warnonce-guard history"


def check_work_dir(work_dir: Path) -> Path:
    """The work directory, created if needed; never inside an interpreter's site-packages."""
    resolved = work_dir.expanduser().resolve()
    installed = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    installed |= {*site.getsitepackages(), site.getusersitepackages()}
    for folder in sorted(installed):
        folder_path = Path(folder).resolve()
        if resolved == folder_path or folder_path in resolved.parents:
            raise BadWorkDir(f"--work-dir {work_dir} is inside {folder_path}; fetched releases never go there")
    try:
        resolved.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise BadWorkDir(f"--work-dir {work_dir}: cannot create it ({err}); pass a writable directory") from None
    return resolved


def check_release(
    release: releases_index.Release, work_dir: Path, timeout_s: float, stage: Callable[[str], None]
) -> ReleaseVerdict:
    """Fetch, survey, guard and classify one release (the guards only when it has cached sites)."""
    started = time.monotonic()
    meta = ReleaseMeta(release.version, release.date, release.yanked)
    stage("fetching")
    try:
        fetched = fetch_release(release, work_dir)
    except FetchFailed as err:
        return not_checked(meta, f"fetch failed: {err}", retry=True, duration_s=time.monotonic() - started)
    meta = replace(meta, source=fetched.dist.filename, fallback=fallback_note(fetched))
    stage("discovery")
    found = survey(fetched.tree)
    guards = None
    if found.cached and not found.error:
        stage(f"guards on {len(found.cached)} site(s)")
        guards = run_guards(fetched.tree, work_dir / "logs" / f"{release.version}.log", timeout_s)
    return classify(meta, found, guards, time.monotonic() - started)


def fallback_note(fetched: Fetched) -> str:
    """Why a wheel was checked instead of an sdist (empty when the sdist was)."""
    if fetched.dist.kind == "sdist":
        return ""
    return f"the sdist failed: {'; '.join(fetched.failures)}" if fetched.failures else "no sdist on the index"


def progress_line(v: ReleaseVerdict, how: str) -> str:
    forms = ", ".join(f"{n} {form}" for n, form in ((v.live, "live"), (v.eager, "eager")) if n)
    if v.sites:
        sites = f"{v.sites} sites ({forms})"
    else:
        sites = f"0 sites ({v.plain_sites} plain)" if v.plain_sites or v.verdict is not Verdict.NOT_CHECKED else "–"
    detail = "; ".join(filter(None, (", ".join(v.detectors), v.reason)))
    return f"{v.version:<11} {v.verdict.value:<11} {sites:<24} {detail}  ({how})"


def _environment() -> str:
    try:
        torch = f"torch {version('torch')}"
    except PackageNotFoundError:
        torch = "no torch"
    return f"Python {platform.python_version()}, {torch}"


class _Progress:
    """A progress bar on a terminal; elsewhere (CI logs, files) only the finished lines."""

    def __init__(self, console: Console, progress: Progress | None, total: int):
        self.console, self.progress = console, progress
        self.task = progress.add_task("", total=total) if progress else None

    def stage(self, version: str, text: str) -> None:
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, description=f"{version}: {text}")

    def done(self, line: str) -> None:
        self.console.print(line, markup=False, highlight=False, soft_wrap=True)
        if self.progress is not None and self.task is not None:
            self.progress.advance(self.task)


@contextmanager
def _progress(console: Console, total: int) -> Iterator[_Progress]:
    if not console.is_terminal:
        yield _Progress(console, None, total)
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        yield _Progress(console, bar, total)


def run_history(options: Options, console: Console) -> HistoryReport:
    """Check every selected release (or reuse its kept verdict), then write history.json and history.md."""
    started = time.monotonic()
    work_dir = check_work_dir(options.work_dir)
    listed = releases_index.fetch_index(options.index_url)
    selection = releases_index.select(listed, options.start, options.end, options.only, options.pre)
    fingerprint = tool_fingerprint()
    cache = VerdictCache(work_dir, fingerprint)
    console.print(
        f"{len(selection.releases)} release(s), {selection.releases[0].version} to {selection.releases[-1].version}; "
        f"work directory {work_dir}; tool fingerprint {fingerprint}",
        markup=False,
        highlight=False,
    )
    verdicts: list[ReleaseVerdict] = []
    checked = kept = 0
    with _progress(console, len(selection.releases)) as progress, (work_dir / "history.log").open("a") as log:
        for release in selection.releases:
            verdict = cache.get(release)
            if verdict is not None:
                kept += 1
                how = "cached"
            else:
                verdict = check_release(
                    release, work_dir, options.timeout_s, lambda text, v=release.version: progress.stage(v, text)
                )
                cache.put(release, verdict)
                checked += 1
                how = f"{verdict.duration_s:.1f} s"
            verdicts.append(verdict)
            line = progress_line(verdict, how)
            progress.done(line)
            log.write(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}  {line}\n")
            log.flush()
    report = HistoryReport(
        command=options.command,
        generated=datetime.now(UTC).isoformat(timespec="seconds"),
        fingerprint=fingerprint,
        environment=_environment(),
        verdicts=tuple(verdicts),
        prereleases_left_out=selection.prereleases_left_out,
        checked=checked,
        from_cache=kept,
        duration_s=time.monotonic() - started,
    )
    paths = write_outputs(report, options.out_dir or work_dir)
    console.print(f"wrote {', '.join(str(p) for p in paths)}", markup=False, highlight=False)
    return report
