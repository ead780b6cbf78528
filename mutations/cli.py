"""`warnonce-guard`: the command line. The only place that prints errors and picks exit codes.

    warnonce-guard sites  [--vllm-src PATH] [--json]       list kernel-import sites
    warnonce-guard guards [--vllm-src PATH] [--platform MODULE:CLASS] [PYTEST ARGS]
    warnonce-guard platforms                              list vLLM platform plugins
    warnonce-guard mutate [--vllm-src PATH] [--out DIR]    baseline, mutate, run guards, score, report
    warnonce-guard audit  [--vllm-src PATH] [--json] [--baseline FILE] [--write-baseline FILE] [--strict]
                                                          every *_once call that can cache a live object
    warnonce-guard history [--from V] [--to V] [--only V1,V2] [--out DIR]   every release, checked (guards/history/)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from guards import target as targets
from guards.errors import GuardError, NothingToCheck
from guards.history.cli import add_parser as add_history_parser
from guards.platforms import ENTRY_POINT_GROUP, platform_sites, registered_platforms, resolve_platform
from guards.sites import Site, discover

GUARDS_DIR = Path(__file__).resolve().parent.parent / "guards"


def _sites_table(sites: list[Site], title: str) -> Table:
    table = Table(title=title)
    for column in ("file", "line", "function", "kernel module", "call", "form", "guarded"):
        table.add_column(column)
    for site in sites:
        form = f"[green]{site.form}[/]" if site.form == "eager" else f"[red]{site.form}[/]"
        guarded = "yes" if site.cached else "no (not cached)"
        table.add_row(
            site.file, str(site.line), site.qualname, site.kernel_module, site.log_method, form, guarded
        )
    return table


def _target_sites(args: argparse.Namespace) -> tuple[targets.Target, list[Site]]:
    """The target, and its sites: all of them, or those a `--platform` class runs."""
    target = targets.resolve(args.vllm_src)
    if not getattr(args, "platform", None):
        return target, discover(target.root)
    targets.activate(target)
    return target, platform_sites(resolve_platform(args.platform))


def cmd_sites(args: argparse.Namespace, console: Console) -> int:
    target, sites = _target_sites(args)
    cached = [s for s in sites if s.cached]
    if args.json:
        print(json.dumps({"target": target.describe(), "sites": [s.to_json() for s in sites]}, indent=2))
    else:
        console.print(_sites_table(sites, target.describe()))
        live = sum(1 for s in cached if s.form == "live")
        console.print(
            f"{len(cached)} cached site(s): {len(cached) - live} eager, {live} live; "
            f"{len(sites) - len(cached)} not cached"
        )
    if not cached:
        raise NothingToCheck(f"no kernel-import site logs through a *_once call in {target.describe()}")
    return 0


def cmd_guards(args: argparse.Namespace, console: Console) -> int:
    import pytest

    target = targets.resolve(args.vllm_src)  # validates --vllm-src before pytest starts
    console.print(f"guarding {target.describe()}")
    pytest_args = [
        str(GUARDS_DIR),
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(GUARDS_DIR),
        # this process imported guards and mutations before pytest could rewrite their asserts (they have none)
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",
        *args.pytest_args,
    ]
    if args.vllm_src:
        pytest_args += ["--vllm-src", str(args.vllm_src)]
    if args.platform:
        pytest_args += ["--platform", args.platform]
    return int(pytest.main(pytest_args))


def cmd_platforms(args: argparse.Namespace, console: Console) -> int:
    found = registered_platforms()
    table = Table(title=f"platforms registered under the {ENTRY_POINT_GROUP!r} entry points")
    for column in ("name", "entry point", "platform class (use with --platform)"):
        table.add_column(column)
    for plugin in found:
        shown = plugin.platform or f"[dim]{plugin.error or 'not available here'}[/]"
        table.add_row(plugin.name, plugin.entry_point, shown)
    console.print(table)
    console.print(f"{len(found)} registered platform plugin(s)")
    return 0


def cmd_audit(args: argparse.Namespace, console: Console) -> int:
    from guards import audit

    target = targets.resolve(args.vllm_src)
    accepted = audit.load_baseline(args.baseline) if args.baseline else frozenset()  # bad input fails first
    result = audit.audit(target.root)
    comparison = audit.compare(result.findings, accepted)
    if args.write_baseline:
        audit.write_baseline(args.write_baseline, result.findings, target.describe())
    if args.json:
        print(json.dumps(audit.json_document(result, comparison, target.describe()), indent=2))
    else:
        console.print(audit.findings_table(result, comparison, target.describe(), with_status=bool(args.baseline)))
        console.print(audit.summary_line(result, comparison))
        for key in comparison.stale:
            console.print(f"stale baseline entry (matches no finding): {key}", markup=False)
        if args.write_baseline:
            console.print(f"wrote {len(result.findings)} accepted finding(s) to {args.write_baseline}")
    return 0 if args.write_baseline else audit.exit_code(comparison, strict=args.strict)


def cmd_mutate(args: argparse.Namespace, console: Console) -> int:
    from mutations.run import mutate

    return mutate(
        vllm_src=args.vllm_src,
        out_dir=Path(args.out),
        work_dir=Path(args.work_dir),
        fail_under=args.fail_under,
        viewer_js=Path(args.viewer_js) if args.viewer_js else None,
        console=console,
        platform=args.platform,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="warnonce-guard", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    target_help = "root of a vLLM source tree (default: the installed vLLM)"
    platform_help = "a platform class (e.g. a plugin's): the sites its import_kernels runs, called through it"

    sites = sub.add_parser("sites", help="list every kernel-import site of the target")
    sites.add_argument("--vllm-src", metavar="PATH", help=target_help)
    sites.add_argument("--json", action="store_true", help="print JSON instead of a table")
    sites.add_argument("--platform", metavar="MODULE:CLASS", help=platform_help)
    sites.set_defaults(run=cmd_sites)

    guards = sub.add_parser("guards", help="run the guards against the target")
    guards.add_argument("--vllm-src", metavar="PATH", help=target_help)
    guards.add_argument("--platform", metavar="MODULE:CLASS", help=platform_help)
    guards.epilog = "Other arguments are passed on to pytest."
    guards.set_defaults(run=cmd_guards)

    platforms = sub.add_parser("platforms", help="list platform plugins registered with vLLM")
    platforms.set_defaults(run=cmd_platforms)

    mutate = sub.add_parser("mutate", help="mutation run: baseline, mutants, guards, score, report")
    mutate.add_argument("--vllm-src", metavar="PATH", help=target_help)
    mutate.add_argument("--out", default="mutation-report", help="report directory (default: %(default)s)")
    mutate.add_argument(
        "--work-dir", default=".warnonce-work", help="where the staged copy and mutmut's state live"
    )
    mutate.add_argument("--fail-under", type=float, default=100.0, metavar="PERCENT", help="minimum score")
    mutate.add_argument("--viewer-js", metavar="FILE", help="mutation-testing-elements bundle for index.html")
    mutate.add_argument("--platform", metavar="MODULE:CLASS", help=platform_help)
    mutate.set_defaults(run=cmd_mutate)

    audit = sub.add_parser("audit", help="list every *_once call whose arguments can cache a live object")
    audit.add_argument("--vllm-src", metavar="PATH", help=target_help)
    audit.add_argument("--json", action="store_true", help="print JSON instead of a table")
    audit.add_argument("--baseline", metavar="FILE", help="JSON file of accepted findings: only new ones fail")
    audit.add_argument("--write-baseline", metavar="FILE", help="accept every finding: write them to FILE, exit 0")
    audit.add_argument("--strict", action="store_true", help="fail on any new finding, not only live exceptions")
    audit.set_defaults(run=cmd_audit)
    add_history_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "guards":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.pytest_args = extra
    console = Console() if sys.stdout.isatty() else Console(width=200)  # CI logs: keep table rows whole
    try:
        return args.run(args, console)
    except GuardError as err:
        print(f"warnonce-guard: error: {err}", file=sys.stderr)
        return err.exit_code


if __name__ == "__main__":
    sys.exit(main())
