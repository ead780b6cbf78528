"""`warnonce-guard export-test`: the subcommand's options, and what it prints and returns."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from warnonce_guard.common.errors import ExitCode, UsageError

HELP = "write the guards' cases as one pytest module for vLLM's tests/ (or a platform plugin's)"
DESCRIPTION = f"""{HELP}.

The module imports only vLLM, pytest and the standard library: one case per cached kernel-import site
discovered, each blocking its kernel module, driving import_kernels() twice from an __init__ and asserting one
warning, as written, and nothing kept alive. Without --out it goes to stdout."""


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register `export-test` on the main parser's subcommands."""
    parser = sub.add_parser("export-test", help=HELP, description=DESCRIPTION)
    parser.add_argument("--vllm-src", metavar="PATH", help="root of a vLLM source tree (default: the installed vLLM)")
    parser.add_argument(
        "--platform",
        metavar="MODULE:CLASS",
        help="a platform plugin's class: the cases of the import_kernels it runs, for the plugin's own tests/",
    )
    parser.add_argument(
        "--out", metavar="FILE", help="write it here (through a symlink): a new file or an earlier export"
    )
    parser.add_argument(
        "--check",
        metavar="FILE",
        help="write nothing; exit 1 when FILE (a module or a patch) is not what an export writes now, saying which "
        "case differs",
    )
    parser.add_argument(
        "--patch",
        action="store_true",
        help="write a git-apply-able patch adding the module at tests/platforms/test_kernel_import_warnings.py "
        "(a plugin's: tests/test_kernel_import_warnings.py)",
    )
    parser.set_defaults(run=cmd_export)


def check_options(args: argparse.Namespace) -> None:
    """`UsageError` for options that exclude each other, before any path is touched (the parser refuses an empty
    value)."""
    if args.check is not None and args.out is not None:
        raise UsageError("--check FILE writes nothing: give it without --out")
    if args.check is not None and args.patch:
        raise UsageError("--check FILE reads a module or a patch as it is: give it without --patch")


def cmd_export(args: argparse.Namespace) -> int:
    """Export, then write, print or check; 1 (`CHECK_FAILED`) when `--check` finds the file out of date."""
    from warnonce_guard.upstream.cases import collect
    from warnonce_guard.upstream.export import check_out, difference, read_check, write
    from warnonce_guard.upstream.render import patch, render

    check_options(args)
    out = check_out(Path(args.out)) if args.out is not None else None
    checked = read_check(Path(args.check)) if args.check is not None else None
    export = collect(args.vllm_src, args.platform)
    text = render(export)
    if checked is not None:
        wanted = patch(export, text) if checked.startswith("diff --git") else text
        differs = difference(checked, wanted)
        print(f"{args.check}: {differs or f'up to date ({_cases(export.cases)})'}")
        return ExitCode.CHECK_FAILED if differs else ExitCode.OK
    written = patch(export, text) if args.patch else text
    if out is None:
        sys.stdout.write(written)
        return ExitCode.OK
    write(out, written)
    what = "a patch adding the module" if args.patch else "the module"
    print(f"{args.out}: {what}, {_cases(export.cases)} from {export.source}")
    return ExitCode.OK


def _cases(cases: tuple[object, ...]) -> str:
    return f"{len(cases)} case{'' if len(cases) == 1 else 's'}"
