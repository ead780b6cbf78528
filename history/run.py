"""The sweep: for each selected release, newest first, a kept verdict or fetch -> survey -> guards -> verdict.

Each release ends as one line on the console and in `<work dir>/history.log`, as soon as it is done; on a
terminal a progress bar shows which release and stage is under way. Only finished verdicts are kept, so
an interrupted sweep resumes where it stopped. What reads the index, fetches, surveys and runs the guards is a
`Stages` (the real ones by default), so a test passes stand-ins instead of patching this module.
"""

from __future__ import annotations

import os
import platform
import site
import sysconfig
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from rich.console import Console
from warnonce_guard.common import files, locks, ownership
from warnonce_guard.common.console import RunProgress, print_line
from warnonce_guard.common.files import Kind, cannot_write
from warnonce_guard.common.fingerprint import distributions, tool_fingerprint
from warnonce_guard.history import DEFAULT_WORK_DIR
from warnonce_guard.history.cache import VerdictCache
from warnonce_guard.history.fetch import Fetched, FetchFailed, fetch_release
from warnonce_guard.history.fix import check_with_fix
from warnonce_guard.history.guard_run import run_guards
from warnonce_guard.history.index import DEFAULT_INDEX, Release, fetch_index, select
from warnonce_guard.history.records import (
    FixVerdict,
    GuardRun,
    HistoryReport,
    ReleaseMeta,
    ReleaseVerdict,
    Survey,
    Verdict,
)
from warnonce_guard.history.render import check_outputs, fix_cell, forms_cell, write_outputs
from warnonce_guard.history.survey import survey
from warnonce_guard.history.verdict import not_checked, release_verdict


@dataclass(frozen=True)
class Options:
    start: str | None = None
    end: str | None = None
    only: tuple[str, ...] = ()
    pre: bool = False
    work_dir: Path = DEFAULT_WORK_DIR
    out_dir: Path | None = None  # default: the work directory
    index_url: str = DEFAULT_INDEX
    timeout_s: float = 900.0
    command: str = "warnonce-guard history"
    with_fix: bool = False  # each exposed release's guards again with the cache-level fix (history.fix)


@dataclass(frozen=True)
class Stages:
    """The sweep's collaborators: what lists the releases, fetches one, surveys its tree, runs the guards on it, and
    names the distributions of the guard environment (for the tool fingerprint)."""

    fetch_index: Callable[[str], list[Release]] = fetch_index
    fetch_release: Callable[[Release, Path], Fetched] = fetch_release
    survey: Callable[[Path], Survey] = survey
    run_guards: Callable[[Path, Path, float], GuardRun] = run_guards
    distributions: Callable[[], list[str]] = distributions


def site_packages() -> list[ownership.Protected]:
    """Every site-packages directory of this interpreter: fetched releases never go into one."""
    installed = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    installed |= {*site.getsitepackages(), site.getusersitepackages()}
    return [
        ownership.Protected(f"site-packages ({folder}); fetched releases never go there", Path(folder))
        for folder in sorted(installed)
    ]


def check_history_paths(work_dir: Path, out_dir: Path | None) -> tuple[Path, Path]:
    """The work directory (new, empty or an earlier history work directory, never in site-packages or above the
    current directory) and where the tables go; `PathRefused`/`PathUnusable` before any work."""
    here = ownership.Protected("the current directory", Path.cwd(), inside_ok=True)
    work = ownership.check_work_root(work_dir, [*site_packages(), here], Kind.HISTORY)
    out = Path(os.path.abspath(out_dir)) if out_dir else work
    check_outputs(out)
    return work, out


def remove_leftovers(work_dir: Path) -> list[Path]:
    """What killed sweeps left half-written in the work directory (downloads, trees, records, tables, a guard
    run's records); call it only while holding the directory, when no other run writes there."""
    results = work_dir / "results"
    folders = [work_dir, work_dir / "downloads", work_dir / "trees", work_dir / "logs"]
    folders += [path for path in results.iterdir() if path.is_dir()] if results.is_dir() else []
    return [path for folder in folders for path in files.sweep(folder)]


def check_release(
    release: Release,
    work_dir: Path,
    timeout_s: float,
    stages: Stages,
    stage: Callable[[str], None],
    say: Callable[[str], None],
) -> ReleaseVerdict:
    """Fetch, survey, guard and judge one release (the guards only when it has cached sites); `stage` gets
    what is under way (for a progress bar), `say` one line for each thing of its own discarded from the work
    directory on the way (a damaged kept tree)."""
    started = time.monotonic()
    meta = ReleaseMeta(release.version, release.date, release.yanked)
    stage(f"{release.version}: fetching")
    try:
        fetched = stages.fetch_release(release, work_dir)
    except FetchFailed as err:
        return not_checked(meta, f"fetch failed: {err}", retry=True, duration_s=time.monotonic() - started)
    for note in fetched.notes:
        say(f"{release.version}: {note}")
    meta = replace(meta, source=fetched.dist.filename, fallback=fallback_note(fetched))
    stage(f"{release.version}: discovery")
    found = stages.survey(fetched.tree)
    guards = None
    if found.cached and not found.error:
        stage(f"{release.version}: guards on {len(found.cached)} site(s)")
        guards = stages.run_guards(fetched.tree, work_dir / "logs" / f"{release.version}.log", timeout_s)
    verdict = release_verdict(meta, found, guards, time.monotonic() - started)
    # checked from a wheel because the sdist's download failed: not kept, so the next sweep tries the sdist again
    return replace(verdict, retry=True) if fetched.retry else verdict


def with_the_fix(
    release: Release,
    verdict: ReleaseVerdict,
    work_dir: Path,
    timeout_s: float,
    stages: Stages,
    stage: Callable[[str], None],
) -> ReleaseVerdict:
    """`verdict` with its guards run again on the release's tree with the cache-level fix (`history.fix`); a fetch
    that fails leaves it `not checked`, and not kept (the next run tries again)."""
    stage(f"{release.version}: guards with the fix")
    try:
        fetched = stages.fetch_release(release, work_dir)
    except FetchFailed as err:
        return replace(verdict, with_fix=FixVerdict(Verdict.NOT_CHECKED, reason=f"fetch failed: {err}"), retry=True)
    log = work_dir / "logs" / f"{release.version}+fix.log"
    fixed = check_with_fix(fetched.tree, verdict.meta, stages.survey, stages.run_guards, log, timeout_s)
    return replace(verdict, with_fix=fixed)


def fallback_note(fetched: Fetched) -> str:
    """Why a wheel was checked instead of an sdist (empty when the sdist was)."""
    if fetched.dist.kind == "sdist":
        return ""
    return f"the sdist failed: {'; '.join(fetched.failures)}" if fetched.failures else "no sdist on the index"


def progress_line(v: ReleaseVerdict, how: str) -> str:
    if v.sites:
        sites = f"{v.sites} sites ({forms_cell(v)})"
    else:
        sites = f"0 sites ({v.plain_sites} plain)" if v.plain_sites or v.verdict is not Verdict.NOT_CHECKED else "–"
    detail = "; ".join(filter(None, (", ".join(v.detectors), v.reason)))
    fixed = f"; with the fix: {fix_cell(v)}" if v.with_fix is not None else ""
    return f"{v.version:<11} {v.verdict.value:<11} {sites:<24} {detail}{fixed}  ({how})"


def _environment() -> str:
    try:
        torch = f"torch {version('torch')}"
    except PackageNotFoundError:
        torch = "no torch"
    return f"Python {platform.python_version()}, {torch}"


def run_history(options: Options, console: Console, stages: Stages = Stages()) -> HistoryReport:
    """Check every selected release (or reuse its kept verdict), then write history.json and history.md.

    Paths and the index are checked before anything is written; the work directory is held (one sweep at
    a time) from its creation to the tables.
    """
    started = time.monotonic()
    work_dir, out = check_history_paths(options.work_dir, options.out_dir)
    listed = stages.fetch_index(options.index_url)
    selection = select(listed, options.start, options.end, options.only, options.pre)
    fingerprint = tool_fingerprint([f"python=={platform.python_version()}", *stages.distributions()])
    with locks.work_dir(work_dir, Kind.HISTORY):
        remove_leftovers(work_dir)
        cache = VerdictCache(work_dir, fingerprint)
        print_line(
            console,
            f"{len(selection.releases)} release(s), {selection.releases[0].version} to "
            f"{selection.releases[-1].version}; work directory {work_dir}; tool fingerprint {fingerprint}",
        )
        verdicts, checked = check_releases(
            selection.releases, cache, work_dir, options.timeout_s, stages, console, options.with_fix
        )
        report = HistoryReport(
            command=options.command,
            generated=datetime.now(UTC).isoformat(timespec="seconds"),
            fingerprint=fingerprint,
            environment=_environment(),
            verdicts=tuple(verdicts),
            prereleases_left_out=selection.prereleases_left_out,
            checked=checked,
            from_cache=len(verdicts) - checked,
            duration_s=time.monotonic() - started,
            with_fix=options.with_fix,
        )
        paths = write_outputs(report, out)
    print_line(console, f"wrote {', '.join(str(p) for p in paths)}")
    return report


@contextmanager
def _writing(work_dir: Path) -> Iterator[None]:
    """The sweep's own files in the work directory: a disk that fills up or turns read-only stops the sweep with
    `StagingFailed` (as when the work directory cannot be created), verdicts finished so far kept."""
    try:
        yield
    except OSError as err:
        fix = "finished verdicts are kept: free space (or pass --work-dir on another disk) and rerun"
        raise cannot_write(err, f"--work-dir {work_dir}: cannot write in it", fix) from None


def check_releases(
    releases: Sequence[Release],
    cache: VerdictCache,
    work_dir: Path,
    timeout_s: float,
    stages: Stages,
    console: Console,
    with_fix: bool = False,
) -> tuple[list[ReleaseVerdict], int]:
    """Each release's kept verdict, or a new one (kept when finished); one line per release as it is done. With
    `with_fix`, an exposed release's verdict gets its guards with the fix, kept with it (a kept verdict without it
    gets it now)."""
    verdicts: list[ReleaseVerdict] = []
    checked = 0
    with RunProgress(console, stamped=False) as progress:
        progress.track("", len(releases))
        for done, release in enumerate(releases, 1):
            verdict = cache.get(release)
            how = "cached"
            if verdict is None:
                with _writing(work_dir):
                    verdict = check_release(release, work_dir, timeout_s, stages, progress.describe, progress.say)
                    cache.put(release, verdict)
                checked += 1
                how = f"{verdict.duration_s:.1f} s"
            if with_fix and verdict.verdict is Verdict.EXPOSED and verdict.with_fix is None:
                started = time.monotonic()
                with _writing(work_dir):
                    verdict = with_the_fix(release, verdict, work_dir, timeout_s, stages, progress.describe)
                    cache.put(release, verdict)
                how += f", with the fix {time.monotonic() - started:.1f} s"
            verdicts.append(verdict)
            line = progress_line(verdict, how)
            progress.say(line)
            progress.advance_to(done)
            with _writing(work_dir), (work_dir / "history.log").open("a", encoding="utf-8") as log:
                log.write(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}  {line}\n")
    return verdicts, checked
