"""`warnonce-guard history`: the subcommand's options, its command line for the report header, its exit code."""

from __future__ import annotations

import argparse
import math
import os
import shlex
from pathlib import Path
from urllib.parse import urlsplit

from warnonce_guard.cli.console import console
from warnonce_guard.common.errors import ExitCode, UsageError
from warnonce_guard.history import DEFAULT_INDEX, DEFAULT_WORK_DIR

HELP = "check every vLLM release on the package index: exposed, guarded, no sites or not checked"


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
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
    parser.add_argument(
        "--with-fix",
        action="store_true",
        help="run each exposed release's guards again with the cache-level fix (export-fix) applied to its "
        "vllm/logger.py, no site changed: a column of its own",
    )
    parser.set_defaults(run=cmd_history)


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
    if args.with_fix:
        words.append("--with-fix")
    prefix = "nox -s history --" if os.environ.get("NOX_CURRENT_SESSION") == "history" else "warnonce-guard history"
    return " ".join([prefix, *(shlex.quote(w) for w in words)])


ONLY_FORM = "give versions separated by commas, such as 0.29.0,0.30.0"


def only_versions(text: str | None) -> tuple[str, ...]:
    """`--only`'s versions (spaces around them are fine); `UsageError` for an empty list, item or non-version."""
    if text is None:
        return ()
    items = tuple(item.strip() for item in text.split(","))
    if not any(items):
        raise UsageError(f"--only: no version given; {ONLY_FORM}")
    if not all(items):
        raise UsageError(f"--only {text}: an empty item; {ONLY_FORM}")
    from warnonce_guard.history.index import parse_version

    for item in items:
        parse_version(item, "--only")
    return items


def check_options(args: argparse.Namespace) -> tuple[str, ...]:
    """Every option's value, before the index is read or a path is touched: `UsageError` naming the first bad one.

    Returns `--only`'s versions."""
    from warnonce_guard.history.index import parse_version  # http.client and packaging: only for this command

    only = only_versions(args.only)
    if only and (args.start or args.end):
        raise UsageError("--only names exact releases: give it without --from/--to, or a range without --only")
    low = parse_version(args.start, "--from") if args.start else None
    high = parse_version(args.end, "--to") if args.end else None
    if low is not None and high is not None and low > high:
        raise UsageError(f"--from {args.start} is newer than --to {args.end}; swap them")
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise UsageError(f"--timeout {args.timeout:g}: not a number of seconds above 0; give one such as 900")
    url = urlsplit(args.index_url)
    if url.scheme not in ("http", "https") or not url.netloc:
        raise UsageError(
            f"--index-url {args.index_url}: not an http(s) URL; give a PEP 691 index such as {DEFAULT_INDEX}"
        )
    return only


def cmd_history(args: argparse.Namespace) -> int:
    """Run the sweep; exit 1 (`CHECK_FAILED`) when a release is left `not checked`."""
    from warnonce_guard.common.console import print_line
    from warnonce_guard.history.records import Verdict
    from warnonce_guard.history.run import Options, run_history

    only = check_options(args)
    shown = console()
    options = Options(
        start=args.start,
        end=args.end,
        only=only,
        pre=args.pre,
        work_dir=Path(args.work_dir),
        out_dir=Path(args.out) if args.out else None,
        index_url=args.index_url,
        timeout_s=args.timeout,
        command=command_line(args),
        with_fix=args.with_fix,
    )
    report = run_history(options, shown)
    summary = ", ".join(f"{report.count(v)} {v.value}" for v in Verdict)
    print_line(
        shown,
        f"{len(report.verdicts)} release(s): {summary}; {report.checked} checked, {report.from_cache} from the cache, "
        f"{report.duration_s:.1f} s",
    )
    return ExitCode.CHECK_FAILED if report.count(Verdict.NOT_CHECKED) else ExitCode.OK
