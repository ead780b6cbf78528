"""`warnonce-guard history`: the subcommand's options, its command line for the report header, its exit code."""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path

from warnonce_guard.guards.errors import ExitCode
from warnonce_guard.mutations.history.index import DEFAULT_INDEX
from warnonce_guard.mutations.history.records import Verdict

DEFAULT_WORK_DIR = Path(".warnonce-history")

HELP = "check every vLLM release on the package index: exposed, guarded, no sites or not checked"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """Register `history` on the main parser's subcommands."""
    parser = sub.add_parser("history", help=HELP, description=HELP)
    parser.add_argument("--from", dest="start", metavar="VERSION", help="oldest release to check (inclusive)")
    parser.add_argument("--to", dest="end", metavar="VERSION", help="newest release to check (inclusive)")
    parser.add_argument("--only", metavar="V1,V2,...", help="check exactly these releases")
    parser.add_argument("--pre", action="store_true", help="include pre-releases in the range")
    parser.add_argument(
        "--work-dir",
        default=str(DEFAULT_WORK_DIR),
        help="downloads, release trees, logs, kept verdicts: new, empty or an earlier history work directory "
        "(default: %(default)s)",
    )
    parser.add_argument("--out", metavar="DIR", help="where history.json and history.md go (default: the work dir)")
    parser.add_argument("--index-url", default=DEFAULT_INDEX, help="PEP 691 simple index (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=900.0, metavar="SECONDS", help="per release's guard run")
    parser.set_defaults(run=cmd_history)
    return parser


def command_line(args: argparse.Namespace) -> str:
    """The command as a reader would rerun it (the nox session's form inside `nox -s history`)."""
    words: list[str] = []
    for flag, value in (("--from", args.start), ("--to", args.end), ("--only", args.only)):
        if value:
            words += [flag, value]
    if args.pre:
        words.append("--pre")
    if args.index_url != DEFAULT_INDEX:
        words += ["--index-url", args.index_url]
    if args.out:
        words += ["--out", args.out]
    prefix = "nox -s history --" if os.environ.get("NOX_CURRENT_SESSION") == "history" else "warnonce-guard history"
    return " ".join([prefix, *(shlex.quote(w) for w in words)])


def cmd_history(args: argparse.Namespace) -> int:
    """Run the sweep; exit 1 (`CHECK_FAILED`) when a release is left `not checked`."""
    from warnonce_guard.mutations.cli import console as make_console
    from warnonce_guard.mutations.history.run import Options, run_history

    console = make_console()
    options = Options(
        start=args.start,
        end=args.end,
        only=tuple(v.strip() for v in args.only.split(",") if v.strip()) if args.only else (),
        pre=args.pre,
        work_dir=Path(args.work_dir),
        out_dir=Path(args.out) if args.out else None,
        index_url=args.index_url,
        timeout_s=args.timeout,
        command=command_line(args),
    )
    report = run_history(options, console)
    summary = ", ".join(f"{report.count(v)} {v.value}" for v in Verdict)
    console.print(
        f"{len(report.verdicts)} release(s): {summary}; {report.checked} checked, {report.from_cache} from the cache, "
        f"{report.duration_s:.1f} s",
        markup=False,
        highlight=False,
    )
    return ExitCode.CHECK_FAILED if report.count(Verdict.NOT_CHECKED) else ExitCode.OK
