"""The audit's live once-calls of a vLLM tree, each driven at run time through vLLM's logger and the patched one.

    python -m tools.vllm_tests.live_calls [--vllm-src PATH]

For every `WOG001` finding (a live exception passed to a `*_once` call) whose message is a string literal, the call is
made as it is written (its level, its message, the exception where the call passes it, a string for each other
argument) twice, each time from the `except` block of a fresh exception, on a logger of the target's own logger module
(the installed vLLM's by default) and on one of the same module patched by `export-fix`. A call is harmless when both
exceptions are collected and its message is logged once. One line per call, then the counts; exit 1 when a call is
not harmless with the patch.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import gc
import io
import json
import logging
import sys
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from warnonce_guard.caches.cache_fix import patched
from warnonce_guard.cli.main import main as cli
from warnonce_guard.rule.target import resolve_target

from bench.cache_fix import load  # the timing's loader: the module written to a folder, imported from there


class _Live(Exception):
    """The exception each call gets (built-in exceptions take no weak references)."""


@dataclass(frozen=True)
class Call:
    where: str
    level: str
    message: str
    live: int  # the index of the exception among the call's arguments after the message
    others: int  # how many arguments follow the message


def live_calls(tree: Path) -> tuple[list[Call], int]:
    """The WOG001 calls whose message is a literal, and how many WOG001 findings there are in all."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli(["audit", "--vllm-src", str(tree), "--select", "WOG001", "--format", "json", "--exit-zero"])
    findings = [f for f in json.loads(out.getvalue())["findings"] if f["code"] == "WOG001"]
    calls = []
    for finding in findings:
        source = (tree / finding["file"]).read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == finding["level"]
                and node.lineno <= finding["line"] <= (node.end_lineno or node.lineno)
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                rest = [ast.unparse(a) for a in node.args[1:]]
                if finding["argument"] in rest:
                    where = f"{finding['file']}:{finding['line']}"
                    calls.append(
                        Call(where, finding["level"], node.args[0].value, rest.index(finding["argument"]), len(rest))
                    )
                    break
    return calls, len(findings)


def drive(module: ModuleType, call: Call, name: str) -> tuple[int, int]:
    """(exceptions still alive after gc, records emitted) over two calls with fresh exceptions."""
    logger = module.init_logger(name)
    texts: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: texts.append(record.msg)  # type: ignore[method-assign]
    logger.handlers, logger.propagate = [handler], False
    logger.setLevel(logging.DEBUG)
    refs = []
    with contextlib.redirect_stderr(io.StringIO()):  # a message whose arguments do not fit: logging reports it
        for _ in range(2):
            try:
                raise _Live("not built")
            except _Live as e:
                refs.append(weakref.ref(e))
                args = ["x"] * call.others
                args[call.live] = e
                getattr(logger, call.level)(call.message, *args)
                del args
    logger.handlers = []
    gc.collect()
    return sum(ref() is not None for ref in refs), len(texts)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.vllm_tests.live_calls", allow_abbrev=False)
    parser.add_argument("--vllm-src", help="a vLLM tree (default: the installed vLLM)")
    args = parser.parse_args(argv)
    target = resolve_target(args.vllm_src)
    if args.vllm_src:
        sys.path.insert(0, str(target.root))
    import vllm.logger as stock

    calls, findings = live_calls(target.root)
    source = (target.package_dir / "logger.py").read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="live-calls-") as folder:
        fixed = load("_live_calls_vllm_logger_fixed", patched(source), Path(folder))
    harmful = 0
    for index, call in enumerate(calls):
        before = drive(stock, call, f"live-calls.stock.{index}")
        after = drive(fixed, call, f"live-calls.fixed.{index}")
        harmful += after != (0, 1)
        print(
            f"{call.where} {call.level}: vLLM's cache kept {before[0]}, logged {before[1]}; "
            f"with the patch kept {after[0]}, logged {after[1]}"
        )
    print(
        f"{target.describe()}: {findings} live once-call(s) (WOG001), {len(calls)} with a literal message driven: "
        f"with the patch {len(calls) - harmful} harmless (both exceptions collected, logged once)"
    )
    return 1 if harmful or not calls else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
