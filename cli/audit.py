"""`warnonce-guard audit`: the subcommand's options, and what it prints and returns."""

from __future__ import annotations

import argparse
import sys

from warnonce_guard.audit import FORMATS
from warnonce_guard.common.errors import UsageError

HELP = "every *_once call whose arguments can cache a live object"
DESCRIPTION = (
    "Settings come from [tool.warnonce-guard] of the nearest pyproject.toml (select, extend-select,\n"
    "ignore, exclude, extend-exclude, force-exclude, respect-gitignore); the options below override them."
)


def comma_list(text: str) -> list[str]:
    """A comma-separated option value (`--select WOG001,WOG002`), as ruff takes them; an empty item (`""`, `",,"`,
    `"WOG001,"`: an unset variable's place) is a usage error, never a selector dropped."""
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise argparse.ArgumentTypeError(f"{text!r} has an empty item; give comma-separated values, none empty")
    return items


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register `audit` on the main parser's subcommands."""
    parser = sub.add_parser("audit", help=HELP, description=DESCRIPTION)
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="Python files or package directories (default: the target vLLM)"
    )
    parser.add_argument("--vllm-src", metavar="PATH", help="root of a vLLM source tree (default: the installed vLLM)")
    labels = list(FORMATS.values())
    formats_help = f"{', '.join(labels[:-1])} or {labels[-1]}"
    parser.add_argument("--format", choices=tuple(FORMATS), default="text", help=formats_help)
    parser.add_argument("--baseline", metavar="FILE", help="JSON file of accepted findings: only new ones fail")
    parser.add_argument("--write-baseline", metavar="FILE", help="accept every finding: write them to FILE, exit 0")
    codes = {"type": comma_list, "action": "extend", "metavar": "CODES"}
    parser.add_argument("--select", **codes, help="rules to report and fail on, replacing the configured selection "
                        "(codes, prefixes such as WOG0, or ALL; default: the errors)")  # fmt: skip
    parser.add_argument("--extend-select", **codes, default=[], help="rules to select on top of the configured ones")
    parser.add_argument("--ignore", **codes, default=[], help="rules not to select")
    globs = {"type": comma_list, "action": "extend", "metavar": "GLOBS"}
    parser.add_argument("--exclude", **globs, help="paths not to walk into, replacing the configured and default "
                        "ones (.git, .venv, venv, build, dist, site-packages, node_modules, ...)")  # fmt: skip
    parser.add_argument("--extend-exclude", **globs, default=[], help="paths not to walk into, on top of the others")
    parser.add_argument(
        "--force-exclude", action="store_true", help="apply the excludes to files given by name too (for pre-commit)"
    )
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings fail")
    parser.add_argument("--strict", action="store_true", help="select every rule: an alias of --select ALL")
    parser.add_argument(
        "--fix",
        action="store_true",
        help="format the reported findings' arguments first (the message renders as before), then report the rest "
        "(needs the mutation extra)",
    )
    parser.add_argument(
        "--diff", action="store_true", help="print those fixes as a unified diff and change nothing: exit 1 if any"
    )
    parser.set_defaults(run=cmd_audit)


def cmd_audit(args: argparse.Namespace) -> int:
    """Audit; print the findings on stdout (and the audit's note on stderr); the audit's exit code."""
    from warnonce_guard.audit.run import Request, run

    if args.paths and args.vllm_src:
        raise UsageError("audit: give PATHs or --vllm-src, not both (--vllm-src picks a vLLM tree to audit whole)")
    request = Request(
        paths=args.paths,
        vllm_src=args.vllm_src,
        format=args.format,
        baseline=args.baseline,
        write_baseline=args.write_baseline,
        strict=args.strict,
        select=args.select,
        extend_select=args.extend_select,
        ignore=args.ignore,
        exclude=args.exclude,
        extend_exclude=args.extend_exclude,
        force_exclude=args.force_exclude,
        exit_zero=args.exit_zero,
        fix=args.fix,
        diff=args.diff,
    )
    output = run(request)
    if output.note:
        print(output.note, file=sys.stderr)
    sys.stdout.write(output.text)
    return output.exit_code
