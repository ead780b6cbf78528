"""`warnonce-guard mutate`: discover -> stage -> mutmut (baseline + mutants) -> verdicts -> report -> gate."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from rich.console import Console

from guards import target as targets
from guards.errors import NothingToCheck
from guards.platforms import platform_sites, resolve_platform
from guards.sites import Site, discover
from mutations import collect, stage
from mutations.identify import IDENTITIES, write_identities
from mutations.operators import OPERATORS
from mutations.report import print_table, write_report
from mutations.report.npm import find_viewer
from mutations.verdicts import GUARDED, SKIPPED, Operator, RunResult

GATE_FAILED = 1


def run_session(ws: stage.Workspace, run_id: str, sites: list[Site], packages: list[str]) -> int:
    """mutmut in its own process (see mutations.session), its output streaming to ours; meanwhile this
    process names the mutants (the other core is free while mutmut imports vLLM and runs the guards)."""
    session = subprocess.Popen([sys.executable, "-m", "mutations.session", str(ws.dir), run_id])
    try:
        _wait_for_generation(ws, sites, session)
        write_identities(ws.dir, sites, packages)
    except BaseException:
        session.kill()
        session.wait()
        raise
    return session.wait()


def _wait_for_generation(ws: stage.Workspace, sites: list[Site], session: subprocess.Popen[bytes]) -> None:
    """Until mutmut has written its mutants (a .meta per site file) or stopped: mutmut generates on both
    cores, then imports vLLM on one, which is when naming the mutants costs no time."""
    if (ws.dir / IDENTITIES).is_file():
        return
    metas = [ws.mutants / f"{file}.meta" for file in {site.file for site in sites if site.cached}]
    while session.poll() is None and not all(meta.is_file() for meta in metas):
        time.sleep(0.05)


def collect_result(ws: stage.Workspace, target: targets.Target, run_id: str, started: float) -> RunResult:
    sites = [s for s in (stage.cached_sites(ws) or []) if s.cached]
    records = collect.read_records(ws.attribution)
    site_baselines = collect.baselines(sites, records, run_id)
    files = sorted({site.file for site in sites})
    codes, durations = collect.read_exit_codes(ws.mutants, files)
    identities = json.loads((ws.dir / IDENTITIES).read_text(encoding="utf-8"))
    mutants = collect.verdicts(identities, sites, site_baselines, codes, durations, records)
    return RunResult(
        vllm_version=target.version,
        vllm_commit=target.commit,
        target=f"{target.origin} at {target.package_dir}",
        sources={file: (ws.dir / file).read_text(encoding="utf-8") for file in files},
        operators=[Operator(name, op.description) for name, op in OPERATORS.items()],
        baselines=site_baselines,
        mutants=mutants,
        duration_s=time.monotonic() - started,
    )


def gate(result: RunResult, fail_under: float) -> list[str]:
    """Why the run fails, one line per reason; empty when it passes."""
    problems = []
    for baseline in result.baselines:
        if baseline.status != GUARDED:
            problems.append(f"{baseline.site.id} is {baseline.status}: {', '.join(baseline.detectors)}")
    if not result.mutants:
        problems.append("no mutant was made: nothing was checked")
    skipped = result.count(SKIPPED)
    if skipped and not problems:
        problems.append(f"{skipped} mutant(s) were not run")
    score = result.score
    if score is None:
        problems.append("no mutant ran, so there is no score")
    elif score < fail_under:
        problems.append(f"score {score:.1f}% is below --fail-under {fail_under:g}%")
    return problems


def plan(target: targets.Target, platform: str | None) -> tuple[dict[str, Path], str, Callable[[], list[Site]]]:
    """What to stage (package name -> directory), what else keys the work directory, and how to find sites."""
    packages = {targets.PACKAGE: target.package_dir}
    if not platform:
        return packages, "", lambda: discover(target.root)
    targets.activate(target)
    chosen = resolve_platform(platform)
    if chosen.package != targets.PACKAGE:
        packages[chosen.package] = chosen.root / chosen.package
    return packages, chosen.spec, lambda: platform_sites(chosen)


def mutate(
    vllm_src: str | None,
    out_dir: Path,
    work_dir: Path,
    fail_under: float,
    viewer_js: Path | None,
    console: Console,
    platform: str | None = None,
) -> int:
    started = time.monotonic()
    viewer_js = viewer_js or find_viewer()  # fail before the run, not after it
    target = targets.resolve(vllm_src)
    packages, extra, find_sites = plan(target, platform)
    ws = stage.workspace(target, work_dir, packages, extra)
    # Staging needs no sites: a forked process copies while this one parses (two cores, no shared GIL).
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork")) as pool:
        copying = pool.submit(stage.copy_packages, ws, packages)
        sites = stage.cached_sites(ws) or find_sites()
        copying.result()
    guarded = [site for site in sites if site.cached]
    if not guarded:
        raise NothingToCheck(f"no kernel-import site logs through a *_once call in {target.describe()}")
    stage.prepare(ws, target, sites, packages)
    stage.prune(ws)
    via = f" through {platform}" if platform else ""
    console.print(
        f"mutating {target.describe()}{via}: {len(guarded)} sites x {len(OPERATORS)} operators; work in {ws.dir}"
    )
    run_id = uuid.uuid4().hex
    session_code = run_session(ws, run_id, sites, sorted(packages))
    missing = [file for file in sorted({s.file for s in guarded}) if not (ws.mutants / f"{file}.meta").is_file()]
    if missing:
        raise stage.StagingFailed(
            f"the mutmut session ended (exit code {session_code}) before writing mutants for {', '.join(missing)}; "
            "see its output above"
        )
    if not (ws.dir / IDENTITIES).is_file():
        raise stage.StagingFailed(
            f"the mutmut session failed (exit code {session_code}) before naming its mutants; see above"
        )
    result = collect_result(ws, target, run_id, started)
    paths = write_report(result, out_dir, viewer_js)
    print_table(result, console)
    console.print(f"mutmut exited {session_code}; report: {', '.join(str(p) for p in paths)}")
    problems = gate(result, fail_under)
    for problem in problems:
        console.print(f"[red]gate:[/] {problem}")
    return GATE_FAILED if problems else 0
