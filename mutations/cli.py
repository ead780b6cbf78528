"""`warnonce-guard`: the command line. The only place that prints errors and picks exit codes.

    warnonce-guard sites  [--vllm-src PATH] [--json]       list kernel-import sites
    warnonce-guard guards [--vllm-src PATH] [PYTEST ARGS]  run the guards against the target
    warnonce-guard mutate [--vllm-src PATH] [--out DIR]    baseline, mutate, run guards, score, report
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


def cmd_sites(args: argparse.Namespace, console: Console) -> int:
    target = targets.resolve(args.vllm_src)
    sites = discover(target.root)
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
    pytest_args = [str(GUARDS_DIR), "-p", "no:cacheprovider", "--rootdir", str(GUARDS_DIR), *args.pytest_args]
    if args.vllm_src:
        pytest_args += ["--vllm-src", str(args.vllm_src)]
    return int(pytest.main(pytest_args))


def cmd_mutate(args: argparse.Namespace, console: Console) -> int:
    from mutations.run import mutate

    return mutate(
        vllm_src=args.vllm_src,
        out_dir=Path(args.out),
        work_dir=Path(args.work_dir),
        fail_under=args.fail_under,
        viewer_js=Path(args.viewer_js) if args.viewer_js else None,
        console=console,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="warnonce-guard", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    target_help = "root of a vLLM source tree (default: the installed vLLM)"

    sites = sub.add_parser("sites", help="list every kernel-import site of the target")
    sites.add_argument("--vllm-src", metavar="PATH", help=target_help)
    sites.add_argument("--json", action="store_true", help="print JSON instead of a table")
    sites.set_defaults(run=cmd_sites)

    guards = sub.add_parser("guards", help="run the guards against the target")
    guards.add_argument("--vllm-src", metavar="PATH", help=target_help)
    guards.epilog = "Other arguments are passed on to pytest."
    guards.set_defaults(run=cmd_guards)

    mutate = sub.add_parser("mutate", help="mutation run: baseline, mutants, guards, score, report")
    mutate.add_argument("--vllm-src", metavar="PATH", help=target_help)
    mutate.add_argument("--out", default="mutation-report", help="report directory (default: %(default)s)")
    mutate.add_argument(
        "--work-dir", default=".warnonce-work", help="where the staged copy and mutmut's state live"
    )
    mutate.add_argument("--fail-under", type=float, default=100.0, metavar="PERCENT", help="minimum score")
    mutate.add_argument("--viewer-js", metavar="FILE", help="mutation-testing-elements bundle for index.html")
    mutate.set_defaults(run=cmd_mutate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "guards":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.pytest_args = extra
    console = Console() if sys.stdout.isatty() else Console(width=160)
    try:
        return args.run(args, console)
    except GuardError as err:
        print(f"warnonce-guard: error: {err}", file=sys.stderr)
        return err.exit_code


if __name__ == "__main__":
    sys.exit(main())
