"""`warnonce-guard export-fix`: the subcommand's options, and what it prints and returns."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from warnonce_guard.cli.export import check_options
from warnonce_guard.common.errors import ExitCode, NothingToCheck

HELP = "write the cache-level fix of vLLM's *_once methods (keyed on the rendered text) as a patch with its test"
DESCRIPTION = f"""{HELP}.

The patch changes vllm/logger.py of the target (the installed vLLM, --vllm-src, or the logger a --platform class logs
through): every *_once method remembers what it logged by (logger, level, rendered text) in a bounded dict instead of
an lru_cache on its arguments, and emits the record vLLM emits (the template, its arguments, the caller's file:line).
It adds a test to tests/test_logger.py (a file of its own when the target has none) that imports only pytest, the
standard library and init_logger. Without --patch, the patched module is written; without --out, to stdout."""


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register `export-fix` on the main parser's subcommands."""
    parser = sub.add_parser("export-fix", help=HELP, description=DESCRIPTION)
    parser.add_argument("--vllm-src", metavar="PATH", help="root of a vLLM source tree (default: the installed vLLM)")
    parser.add_argument(
        "--platform",
        metavar="MODULE:CLASS",
        help="a platform plugin's class: patch the logger module its kernel-import sites log through",
    )
    parser.add_argument(
        "--out", metavar="FILE", help="write it here (through a symlink): a new file, or an earlier patch of ours"
    )
    parser.add_argument(
        "--check",
        metavar="FILE",
        help="write nothing; exit 1 when FILE (a patch or a patched module) is not what an export writes now, 0 when "
        "the target has the fix already",
    )
    parser.add_argument(
        "--patch",
        action="store_true",
        help="write a git-apply-able patch of the logger module and its test, instead of the patched module",
    )
    parser.set_defaults(run=cmd_export_fix)


def cmd_export_fix(args: argparse.Namespace) -> int:
    """Export, then write, print or check; 1 (`CHECK_FAILED`) when `--check` finds the file out of date."""
    from warnonce_guard.upstream.export import check_out, read_check, write
    from warnonce_guard.upstream.fix import FIX_MARKER, collect_fix, first_difference, is_fix_patch, render_patch

    check_options(args)
    out = check_out(Path(args.out), FIX_MARKER) if args.out is not None else None
    checked = read_check(Path(args.check), None) if args.check is not None else None
    try:
        fix = collect_fix(args.vllm_src, args.platform)
    except NothingToCheck as err:
        if checked is None:
            raise
        print(f"{args.check}: the target has the fix already ({err})")  # merged upstream: CI stays green
        return ExitCode.OK
    if checked is not None:
        wanted = render_patch(fix) if is_fix_patch(checked) else fix.logger.after
        differs = first_difference(checked, wanted)
        print(f"{args.check}: {differs or f'up to date (the fix of {fix.logger.path})'}")
        return ExitCode.CHECK_FAILED if differs else ExitCode.OK
    written = render_patch(fix) if args.patch else fix.logger.after
    if out is None:
        sys.stdout.write(written)
        return ExitCode.OK
    write(out, written)
    what = f"a patch of {fix.logger.path} and {fix.test.path}" if args.patch else f"{fix.logger.path}, patched"
    print(f"{args.out}: {what}, from {fix.source}")
    return ExitCode.OK
