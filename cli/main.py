"""`warnonce-guard`: the command line, the only place that prints errors and turns them into exit codes.

Its commands (sites, guards, platforms, mutate, audit, history, export-test, export-fix) and their options are
`build_parser`'s, and `warnonce-guard [COMMAND] --help` says them.
"""

from __future__ import annotations

import _thread
import argparse
import contextlib
import functools
import json
import math
import os
import re
import signal
import sys
import tempfile
import textwrap
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

import warnonce_guard.guards
from warnonce_guard.cli import audit, export, export_fix, history
from warnonce_guard.cli.console import console
from warnonce_guard.common import notes
from warnonce_guard.common.console import printable, printable_json
from warnonce_guard.common.errors import (
    ExitCode,
    GuardError,
    Interrupted,
    NothingToCheck,
    NotInstalled,
    PathUnusable,
    PlatformImportFailed,
    UsageError,
    exit_code_table,
)
from warnonce_guard.guards.isolation import isolated
from warnonce_guard.rule.liveness import FORMS
from warnonce_guard.rule.target import (
    Target,
    activate,
    check_importable,
    import_state_kept,
    resolve_target,
)

if TYPE_CHECKING:
    from warnonce_guard.rule.site_row import Site

GUARDS_DIR = Path(warnonce_guard.guards.__file__).resolve().parent
# What the `mutation` extra adds; `audit` and strict mode need none of it.
MUTATION_EXTRA = frozenset({"rich", "libcst", "mutmut"})


def install_hint(missing: str) -> str:
    """A command that installs `missing` as the mutation extra asks for it (no package index serves warnonce-guard, so
    `pip install 'warnonce-guard[mutation]'` would not work), and the extra itself from a checkout."""
    from importlib import metadata  # as `installed` does

    try:
        requirements = metadata.requires("warnonce-guard") or []
    except metadata.PackageNotFoundError:
        requirements = []
    wanted = (r.partition(";")[0].strip() for r in requirements if "mutation" in r.partition(";")[2])
    named = next((r for r in wanted if re.match(rf"{re.escape(missing)}\b", r, re.IGNORECASE)), missing)
    return f"pip install '{named}' (or, in a checkout of warnonce-guard, pip install '.[mutation]')"


def _sites_table(sites: list[Site], title: str) -> Any:
    from rich.table import Table

    table = Table("file", "line", "function", "kernel module", "branch", "call", "form", "guarded", title=title)
    for site in sites:
        form = f"[green]{site.form}[/]" if site.form == "eager" else f"[red]{site.form}[/]"
        guarded = "yes" if site.guarded else f"no ({site.unguarded_reason})"
        call = site.log_method or "not recognised"
        kernel = site.kernel_module + site.disambiguator
        table.add_row(site.file, str(site.line), site.qualname, kernel, site.branch, call, form, guarded)
    return table


def _target_sites(args: argparse.Namespace) -> tuple[Target, list[Site]]:
    """The target, and its sites: all of them, or those a `--platform` class runs."""
    from warnonce_guard.rule.platforms import platform_sites, resolve_platform
    from warnonce_guard.rule.sites import discover

    target = resolve_target(args.vllm_src)
    if not getattr(args, "platform", None):
        return target, discover(target.root)
    activate(target)
    return target, platform_sites(resolve_platform(args.platform))


def cmd_sites(args: argparse.Namespace) -> int:
    from warnonce_guard.rule import expected

    if args.write is not None and args.expect_sites is not None:
        raise UsageError("--write records the sites found and --expect-sites checks them: give one of the two")
    recorded = expected.read(Path(args.expect_sites)) if args.expect_sites is not None else None
    out = expected.write_target(Path(args.write)) if args.write is not None else None
    with expected.writing(out) if out is not None else contextlib.nullcontext():  # a second --write: refused
        return _list_sites(args, recorded, out)


def _list_sites(args: argparse.Namespace, recorded: list[Any] | None, out: Path | None) -> int:
    from warnonce_guard.rule import expected
    from warnonce_guard.rule.site_row import NO_SITE

    target, sites = _target_sites(args)
    guarded = [s for s in sites if s.guarded]
    described = printable(target.describe())  # a path's undecodable byte as `\xff`, as the reports show it
    if args.json:
        print(json.dumps(printable_json({"target": described, "sites": [s.to_json() for s in sites]}), indent=2))
    else:
        shown = console()
        shown.print(_sites_table(sites, described))
        forms = ", ".join(f"{sum(1 for s in guarded if s.form == form)} {form}" for form in FORMS)
        unread = sum(1 for s in guarded if not s.cached)
        shown.print(
            f"{len(guarded)} guarded site(s): {forms}; {unread} without a recognised *_once call; "
            f"{len(sites) - len(guarded)} not guarded (at import time, or in a function that takes arguments)"
        )
    if recorded is not None:  # a guard gone is said first, whatever is left to guard
        _expected_sites(args.expect_sites, recorded, sites).check(Path(args.expect_sites))
    if not guarded:
        raise NothingToCheck(f"{NO_SITE} in {described}")
    if out is not None:
        commit = f" ({target.commit})" if target.commit else ""
        expected.write(
            out, sites, f"vLLM {target.version}{commit}" + (f" through {args.platform}" if args.platform else "")
        )
        print(f"{args.write}: {len(guarded)} site(s) recorded", file=sys.stderr if args.json else sys.stdout)
    return 0


def _expected_sites(path: str, recorded: list[Any], sites: list[Site]) -> Any:
    """The comparison of the sites found with those `path` records; a line on stderr for each note (a site it lacks,
    a site moved or changed)."""
    from warnonce_guard.rule import expected

    comparison = expected.compare(recorded, sites)
    for line in comparison.notes(Path(path)):
        print(f"warnonce-guard: note: {printable(line)}", file=sys.stderr)
    return comparison


# pytest's exit statuses, as rows of our table; any other is our guards' fault. pytest's 2 ("interrupted") after a
# signal of ours is replaced by that signal's code (`_main`); without one it is a session that stopped before its
# tests ran (an error while the guards were collected): never a verdict, never a Ctrl-C.
PYTEST_EXIT = {
    0: ExitCode.OK,
    1: ExitCode.CHECK_FAILED,
    4: ExitCode.USAGE,
    5: ExitCode.NOTHING_TO_CHECK,
}


class Unimported:
    """A plugin of the guards' session: the guards that could not import their platform module, as it ends."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def pytest_sessionfinish(self, session: Any) -> None:
        from warnonce_guard.guards.outcome import UNIMPORTED

        self.lines = session.config.stash.get(UNIMPORTED, [])


def cmd_guards(args: argparse.Namespace) -> int:
    import pytest
    from warnonce_guard.rule import expected
    from warnonce_guard.rule.platforms import refuse_ending_plugins, registered_platforms
    from warnonce_guard.rule.site_row import NO_SITE

    recorded = expected.read(Path(args.expect_sites)) if args.expect_sites is not None else None
    target, sites = _target_sites(args)  # bad input and "nothing to check" stop here, before pytest starts
    comparison = _expected_sites(args.expect_sites, recorded, sites) if recorded is not None else None
    if comparison is not None and not any(site.guarded for site in sites):
        comparison.check(Path(args.expect_sites))  # every guard gone: that is the verdict, not "nothing to check"
    check_importable(target)
    activate(target)  # a plugin that imports vLLM imports the target, as in the guards (undone after: `_command`)
    refuse_ending_plugins(registered_platforms())  # vLLM loads them when a guard first logs, and would end with them
    if not any(site.guarded for site in sites):
        raise NothingToCheck(f"{NO_SITE} in {target.describe()}; nothing to guard")
    print(f"guarding {printable(target.describe())}", flush=True)  # a path byte that is not UTF-8 as \xNN
    unimported = Unimported()
    with tempfile.TemporaryDirectory(prefix="warnonce-guard-") as folder:
        sites_file = Path(folder) / "sites.json"
        sites_file.write_text(json.dumps([site.to_json() for site in sites]), encoding="utf-8")
        code = pytest.main(_pytest_args(args, target, sites_file), plugins=[unimported])
    # A guard that could not import its platform module checked nothing: the run is the environment's failure (7),
    # whatever the other guards found (pytest's report above lists them).
    if int(code) == pytest.ExitCode.TESTS_FAILED and unimported.lines:
        more = f" ({len(unimported.lines)} guards could not run)" if len(unimported.lines) > 1 else ""
        raise PlatformImportFailed(f"{unimported.lines[0]}{more}")
    verdict = PYTEST_EXIT.get(int(code), ExitCode.INTERNAL_ERROR)  # after a signal of ours, its code (`_main`)
    if verdict is ExitCode.INTERNAL_ERROR:
        raise RuntimeError(
            f"the guards' pytest session ended with status {int(code)} before its verdicts (see its report above); "
            "this is a bug in warnonce-guard, please report it"
        )
    if comparison is not None and verdict in (ExitCode.OK, ExitCode.CHECK_FAILED):
        comparison.check(Path(args.expect_sites))  # a guard gone fails the run, whatever the others said
    return verdict


def _pytest_args(args: argparse.Namespace, target: Target, sites_file: Path) -> list[str]:
    """The guards alone: no settings, conftest.py or path of the target's checkout or of the current directory."""
    pytest_args = [
        str(GUARDS_DIR),
        "-p",
        "no:cacheprovider",
        *isolated(GUARDS_DIR),
        # this process imported guards and mutations before pytest could rewrite their asserts (they have none)
        "-W",
        "ignore::pytest.PytestAssertRewriteWarning",
        # import the guards under their own names: never `guards` as a top-level package of sys.modules
        "--import-mode=importlib",
        *args.pytest_args,
        # the guards' options as one word each: pytest reads its command line before it loads the guards' conftest.py,
        # and would take a separate value for a path to collect from (loading the conftest.py files there)
        f"--sites-file={sites_file}",
    ]
    if args.vllm_src:
        pytest_args.append(f"--vllm-src={target.root}")
    if args.platform:
        pytest_args.append(f"--platform={args.platform}")
    return pytest_args


def cmd_platforms(args: argparse.Namespace) -> int:
    """The table of registered plugins; `PlatformImportFailed` after it when loading one would end the process."""
    from rich.table import Table
    from rich.text import Text
    from warnonce_guard.rule.platforms import ENTRY_POINT_GROUP, refuse_ending_plugins, registered_platforms

    found = registered_platforms()
    columns = ("name", "entry point", "platform class (use with --platform)")
    table = Table(*columns, title=f"platforms registered under the {ENTRY_POINT_GROUP!r} entry points")
    for plugin in found:  # Text: a plugin's names are never read as markup
        shown = Text(plugin.platform) if plugin.platform else Text(plugin.error or "not available here", style="dim")
        table.add_row(Text(plugin.name), Text(plugin.entry_point), shown)
    shown = console()
    shown.print(table)
    shown.print(f"{len(found)} registered platform plugin(s)")
    refuse_ending_plugins(found)
    return 0


def cmd_mutate(args: argparse.Namespace) -> int:
    from warnonce_guard.mutations.engine import launch

    try:
        work_root = Path(os.path.abspath(args.work_dir))  # as --work-dir is checked; every default is relative
        os.getcwd()
    except FileNotFoundError:
        raise PathUnusable(
            "the current directory is gone (removed, or its filesystem unmounted); cd to one that exists"
        ) from None
    # The mutmut session, started as the process started (`launch.start_early`), or now: it imports the engine, then
    # torch, while this process imports the run's modules, checks its paths, fingerprints the target and discovers
    # the sites (stopped if the run needs none).
    with launch.session_started(work_root) as session:
        from warnonce_guard.common.processes import collect_from_here
        from warnonce_guard.mutations.run import mutate

        collect_from_here()  # after the run's imports (`cli.__main__` turned the collector off for them)
        return mutate(
            vllm_src=args.vllm_src,
            out_dir=Path(args.out),
            work_dir=Path(args.work_dir),
            fail_under=args.fail_under,
            viewer_js=Path(args.viewer_js) if args.viewer_js else None,
            console=console(),
            platform=args.platform,
            tests=args.tests,
            tests_root=args.tests_root,
            expect_sites=Path(args.expect_sites) if args.expect_sites is not None else None,
            confirm=args.confirm,
            timeout=args.timeout,
            session=session,
        )


DISTRIBUTION = "warnonce-guard"


def installed(field: str) -> str:
    """A field of the installed distribution's metadata (`Version`, `Summary`: setup.cfg's). importlib.metadata is
    imported only when asked: it would add tens of milliseconds to every command."""
    from importlib import metadata

    return metadata.metadata(DISTRIBUTION)[field]


def non_empty(convert: Callable[[str], Any] = str) -> Callable[[str], Any]:
    """An argument's `type=`: an empty or blank value (`--vllm-src ""`, `--vllm-src "$UNSET"` in CI) is a usage
    error, never taken for the default (the installed vLLM, every rule); any other goes on to `convert`. `Parser`
    gives every argument that takes a value this check; wrapping twice checks once."""
    if getattr(convert, "refuses_blank", False):
        return convert

    def checked(text: str) -> Any:
        if not text.strip():
            blank = "an empty value" if not text else f"a blank value {text!r}"
            raise argparse.ArgumentTypeError(f"{blank} (is a variable unset?); give one, or leave the option out")
        return convert(text)

    checked.__name__ = getattr(convert, "__name__", "value")  # argparse names a type that raised ValueError
    checked.refuses_blank = True  # type: ignore[attr-defined]
    return checked


class Parser(argparse.ArgumentParser):
    """argparse, with a pointer to the exit codes after a command's help, no abbreviated options (`--vllm` is never
    taken for `--vllm-src`), no empty values (`non_empty`), and a bad command line reported as one line and
    `ExitCode.USAGE`."""

    def __init__(self, *args: Any, epilog: str | None = None, **kwargs: Any) -> None:
        formatter = argparse.RawDescriptionHelpFormatter  # the exit-code table keeps its lines
        super().__init__(
            *args, epilog=epilog or SEE_EXIT_CODES, formatter_class=formatter, allow_abbrev=False, **kwargs
        )

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        """Add it; one that takes a value (not a flag) refuses an empty one."""
        action = super().add_argument(*args, **kwargs)
        if action.nargs != 0:
            action.type = non_empty(action.type or str)
        return action

    def error(self, message: str) -> NoReturn:
        print(f"warnonce-guard: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        sys.exit(ExitCode.USAGE)


class ToolParser(Parser):
    """`warnonce-guard`'s own parser: its help starts with what the tool does (the distribution's summary)."""

    def format_help(self) -> str:
        self.description = textwrap.fill(installed("Summary"), width=100)
        return super().format_help()


class Version(argparse.Action):
    """`--version`: the installed distribution's version, on stdout."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version of warnonce-guard and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> NoReturn:
        print(f"{parser.prog} {installed('Version')}")
        parser.exit()


def _number(
    convert: Callable[[str], float], fits: Callable[[float], bool], wanted: str, unfit: str
) -> Callable[[str], float]:
    """An option's type: the text converted (else "'x' is not a number; give `wanted`"), finite and such that it
    `fits` (else "x `unfit`")."""
    kind = "whole number" if convert is int else "number"

    def parse(text: str) -> float:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {kind}; give {wanted}") from None
        if not math.isfinite(value) or not fits(value):
            raise argparse.ArgumentTypeError(f"{text} {unfit}")
        return value

    return parse


# The types of `--fail-under`, `--confirm` and `--timeout`.
percent = _number(float, lambda v: 0 <= v <= 100, "a percentage from 0 to 100", "is not a percentage from 0 to 100")
MAX_CONFIRM = 10  # re-runs of each kill: each is a pytest session per kill, on the mutant and on the unmutated code
confirm_count = _number(
    int,
    lambda v: 1 <= v <= MAX_CONFIRM,
    f"1 to {MAX_CONFIRM}",
    f"is not from 1 to {MAX_CONFIRM}: a kill is confirmed by one re-run at least, and {MAX_CONFIRM} at most "
    "(each re-runs the killing tests on the mutant and on the unmutated code)",
)
seconds = _number(float, lambda v: v > 0, "seconds above 0", "is not a number of seconds above 0")


EXIT_CODES = "exit codes:\n" + exit_code_table()
SEE_EXIT_CODES = "exit codes: see `warnonce-guard --help`"


def _target_options(parser: argparse.ArgumentParser) -> None:
    """`--vllm-src` and `--platform`: which vLLM a command works on, and which of its platforms."""
    parser.add_argument("--vllm-src", metavar="PATH", help="root of a vLLM source tree (default: the installed vLLM)")
    parser.add_argument(
        "--platform",
        metavar="MODULE:CLASS",
        help="a platform class (e.g. a plugin's): the sites its import_kernels runs, called through it",
    )


def _expect_sites_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--expect-sites",
        metavar="FILE",
        help="the sites `sites --write FILE` recorded: exit 1 naming each one not found (its guard would be gone)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(prog="warnonce-guard", epilog=EXIT_CODES)
    parser.add_argument("--version", action=Version)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    sites = sub.add_parser("sites", help="list every kernel-import site of the target")
    _target_options(sites)
    sites.add_argument("--json", action="store_true", help="print JSON instead of a table")
    sites.add_argument(
        "--write",
        metavar="FILE",
        help="record the guarded sites found (file, function, kernel module, branch) for --expect-sites: a new "
        "file or an earlier record",
    )
    _expect_sites_option(sites)
    sites.set_defaults(run=cmd_sites)

    passed_on = f"Other arguments are passed on to pytest.\n\n{SEE_EXIT_CODES}"
    guards = sub.add_parser("guards", help="run the guards against the target", epilog=passed_on)
    _target_options(guards)
    _expect_sites_option(guards)
    guards.set_defaults(run=cmd_guards)

    platforms = sub.add_parser("platforms", help="list platform plugins registered with vLLM")
    platforms.set_defaults(run=cmd_platforms)

    mutate = sub.add_parser("mutate", help="mutation run: baseline, mutants, guards, score, report")
    _target_options(mutate)
    mutate.add_argument(
        "--out",
        default="mutation-report",
        help="report directory, replaced whole: it must be new, empty or an earlier report (default: %(default)s)",
    )
    mutate.add_argument(
        "--work-dir",
        default=".warnonce-work",  # launch.DEFAULT_WORK_DIR, which the session started early reads
        help="where staged copies and mutmut's state live: new, empty or an earlier work directory "
        "(default: %(default)s)",
    )
    mutate.add_argument(
        "--fail-under",
        type=percent,
        default=100.0,
        metavar="PERCENT",
        help="minimum score, 0-100 (default: %(default)g)",
    )
    mutate.add_argument("--viewer-js", metavar="FILE", help="mutation-testing-elements bundle for index.html")
    mutate.add_argument(
        "--tests",
        nargs="+",
        action="extend",
        metavar="PATH",
        help="score this pytest suite (files, folders or node ids) instead of the guards: each mutant runs the tests "
        "that reach its function; killed, survived or not reached",
    )
    mutate.add_argument(
        "--tests-root",
        metavar="DIR",
        help="the folder pytest runs --tests in, whose settings and conftest.py files apply (default: the paths' "
        "nearest common folder)",
    )
    mutate.add_argument(
        "--confirm",
        type=confirm_count,
        metavar="N",
        help=f"re-run the tests of each kill N times (1 to {MAX_CONFIRM}), on the mutant and (with --tests) on the "
        "unmutated code, each from the state its first run started in: a test that does otherwise is flaky and none "
        "of its kills counts (default: 2 with --tests, 1 for the guards)",
    )
    mutate.add_argument(
        "--timeout",
        type=seconds,
        metavar="SECONDS",
        help="stop a test that runs longer (pytest-timeout, in every session of the run): its mutant is `timeout`, "
        "naming it, and one that hangs on the unmutated code is left out as failing there (default: no limit)",
    )
    _expect_sites_option(mutate)
    mutate.set_defaults(run=cmd_mutate)

    audit.add_parser(sub)
    history.add_parser(sub)
    export.add_parser(sub)
    export_fix.add_parser(sub)
    return parser


STOP_SIGNALS = {signal.SIGINT: ExitCode.INTERRUPTED, signal.SIGTERM: ExitCode.TERMINATED}
SIGNALS_OF = {code: sig for sig, code in STOP_SIGNALS.items()}


class Stops:
    """The stop signals (SIGINT, SIGTERM) that reach one command, and what each does.

    The first one during the command raises `Interrupted` into it, and its code is the command's exit code
    whatever surfaces then (libcst turns the interrupt into a KeyError, pytest into its own "interrupted", a
    pool into a broken pool). A later one never raises into the cleanup the first one started (stopping the
    mutmut session takes up to 5 s): a process (`exiting`) ends at once with the first one's code, after its
    one line if that was not said yet (what the run started dies with it: PR_SET_PDEATHSIG); in process,
    nothing happens. A signal once the command is over counts as a first one that comes too late to raise.
    One whose `Interrupted` Python swallows (raised inside a weakref callback or a finalizer, such as the callback of
    the import system's module locks, where no exception propagates) is delivered again (`_swallowed`): without it
    the command ran on to its end.
    """

    def __init__(self, exiting: bool) -> None:
        self.exiting = exiting
        self.running = True  # until the command has ended, a first signal raises into it
        self.first: ExitCode | None = None
        self.said = False  # the first one's line is on stderr
        self.undelivered = False  # the first one's `Interrupted` was swallowed: it is raised again (`_swallowed`)
        self._arrivals: int | None = None  # the read end of the wakeup pipe, while `arrivals_noted`

    @contextlib.contextmanager
    def arrivals_noted(self) -> Iterator[None]:
        """For the block, the order signals arrive in is kept: the interpreter's C-level handler writes each
        one's number to a wakeup pipe. Python runs the handlers of signals pending together lowest number
        first: SIGTERM then Ctrl-C during one long C call (writing a 200 MB report) would have been 130."""
        read, write = os.pipe()
        for end in (read, write):
            os.set_blocking(end, False)
        try:
            previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        except ValueError:  # not the main thread: no handler of ours runs there either
            previous = None
        self._arrivals = read if previous is not None else None
        hook, sys.unraisablehook = sys.unraisablehook, functools.partial(self._swallowed, sys.unraisablehook)
        try:
            yield
        finally:
            sys.unraisablehook = hook
            self._arrivals = None
            if previous is not None:
                signal.set_wakeup_fd(previous)
            os.close(read)
            os.close(write)

    def _swallowed(self, hook: Callable[[Any], object], unraisable: Any) -> None:
        """`sys.unraisablehook` while the command runs: the `Interrupted` of a first signal, which Python could not
        raise where the handler ran, is raised again by the same signal, sent to this thread from another one so
        that the handler runs once this hook returned (sent from here, it would run in the hook, and be swallowed
        again); anything else goes to `hook`."""
        stop = unraisable.exc_value
        if isinstance(stop, Interrupted) and self.running and self.first == stop.exit_code:
            self.undelivered = True  # still the first one's code, whichever signal raises it next
            self._send_again(SIGNALS_OF[ExitCode(stop.exit_code)])
            return
        hook(unraisable)

    def _send_again(self, signum: int) -> None:
        """`signum` to this process's main thread, from a thread of its own (not threading's: it waits for the thread
        to start), so that it arrives once the code running now goes on; every 10 ms until its handler took it
        (for up to a second): one that lands as the main thread is about to block (a sleep, a wait) ends nothing."""
        main = threading.main_thread().ident

        def send() -> None:
            for _ in range(100):
                if not self.undelivered or not self.running:  # a later signal raised it, or the command ended
                    return
                signal.pthread_kill(main, signum)
                time.sleep(0.01)

        _thread.start_new_thread(send, ())

    def _first_arrived(self, signum: int) -> int:
        """The stop signal that arrived first among those pending now (`signum` when none is noted)."""
        try:
            arrived = os.read(self._arrivals, 4096) if self._arrivals is not None else b""
        except OSError:  # nothing written
            arrived = b""
        return next((number for number in arrived if number in STOP_SIGNALS), signum)

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.undelivered:
            if frame is not None and frame.f_code is Stops._swallowed.__code__:
                return  # sent again (`_send_again`), it came before that hook returned: its sender sends it once more
            # built while still undelivered: a sending handled as it is made (Python code) raises it too, never
            # reads as a later signal ending the process mid-cleanup
            stop = Interrupted(self.first)
            self.undelivered = False
            if self.running:  # the first one's code, even when a later signal (not the one sent again) got here first
                raise stop
        if self.first is None:
            code = STOP_SIGNALS[signal.Signals(self._first_arrived(signum))]
            self.first = code
            if self.running:
                raise Interrupted(code)
        if self.exiting:
            self.exit_now()

    def exit_now(self) -> None:
        """End the process with the first signal's code, its line said once."""
        assert self.first is not None
        if not self.said:
            self.said = True
            with contextlib.suppress(OSError):
                os.write(2, f"{self.line()}\n".encode())
        os._exit(int(self.first))

    def line(self, detail: str = "") -> str:
        assert self.first is not None
        return f"warnonce-guard: {self.first.name.lower()}{f'; {detail}' if detail else ''}"

    def say(self, detail: str) -> None:
        """Print the first signal's line (held from a later signal while it is written: never half a line)."""
        held = signal.pthread_sigmask(signal.SIG_BLOCK, set(STOP_SIGNALS))
        try:
            if not self.said:
                print(self.line(detail), file=sys.stderr, flush=True)
                self.said = True
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


class ReaderMayLeave:
    """Standard output or error for one command: when the reader of a pipe leaves (`... 2>&1 | head -1`),
    the rest goes to /dev/null and the command finishes, so its exit code is still its verdict (not 1 from
    rich, not a traceback for a broken pipe)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def _discard_the_rest(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self.stream.fileno())
        finally:
            os.close(devnull)

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            self._discard_the_rest()
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._discard_the_rest()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def main(argv: Sequence[str] | None = None, *, exiting: bool = False) -> int:
    """Run one command; its exit code. SIGINT and SIGTERM stop it as `Stops` says; the handlers are put back
    after, unless `exiting` (a process that exits with the code: `cli.__main__`, its first module, answers the
    signals before and after) and a signal stopped the command: then a later SIGINT or SIGTERM while the process
    ends (Ctrl-C pressed again, a hung library's thread) ends it at once with the first one's 130 or 143,
    never death by a signal (-2)."""
    streams = {name: getattr(sys, name) for name in ("stdout", "stderr")}
    for name, stream in streams.items():
        if stream is not None:  # None: started with it closed, and print() already writes nothing
            setattr(sys, name, ReaderMayLeave(stream))
    try:
        return _main(argv, exiting)
    finally:
        for name, stream in streams.items():
            if stream is not None:
                getattr(sys, name).flush()
                setattr(sys, name, stream)


def _main(argv: Sequence[str] | None, exiting: bool) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "guards":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    args.pytest_args = extra
    stops = Stops(exiting)
    previous: dict[signal.Signals, Any] = {}
    code, failure = int(ExitCode.INTERNAL_ERROR), None
    try:
        with stops.arrivals_noted():
            for sig in STOP_SIGNALS:
                previous[sig] = signal.signal(sig, stops.handle)
            with notes.shown_as_lines():
                code = _command(args, stops)
    except BaseException as err:  # a signal's Interrupted can surface anywhere up to here: judged below
        stops.running = False
        failure = err
    finally:
        if not (exiting and stops.first is not None):  # a stopped process keeps answering with the first code
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    return _ended(stops, code, failure)


def _command(args: argparse.Namespace, stops: Stops) -> int:
    """Run the command (a first stop signal raises into it until it ends), this process's imports kept as they were
    (a target or a platform's tree it put first on sys.path is gone after it)."""
    try:
        with import_state_kept():
            return int(args.run(args))
    except ModuleNotFoundError as err:
        missing = (err.name or "").split(".")[0]
        if missing not in MUTATION_EXTRA:
            raise
        raise NotInstalled(
            f"`warnonce-guard {args.command}` needs {missing}, part of the mutation extra: {install_hint(missing)}"
        ) from None
    finally:
        stops.running = False


def _ended(stops: Stops, code: int, failure: BaseException | None) -> int:
    """The command's exit code, and its one line on stderr (a traceback too for a bug of ours)."""
    if stops.first is None and isinstance(failure, KeyboardInterrupt):  # not a signal of ours (a library's, a test's)
        stops.first = failure.exit_code if isinstance(failure, Interrupted) else ExitCode.INTERRUPTED
    if stops.first is not None:  # a signal reached the command: its code, whatever surfaced after it
        stops.say(failure.detail if isinstance(failure, Interrupted) else "")
        return int(stops.first)
    if failure is None:
        return code
    if isinstance(failure, GuardError):
        print(f"warnonce-guard: error: {printable(str(failure))}", file=sys.stderr)
        return int(failure.exit_code)
    if not isinstance(failure, Exception | SystemExit):
        raise failure  # GeneratorExit and the like: not a command's outcome to translate
    # A SystemExit through a command: code it ran ended it where no guard of ours (`must_not_exit`) stood. Its code,
    # 0 too, would be a verdict that none gave: a bug.
    traceback.print_exception(failure)
    print(
        "warnonce-guard: internal error: the traceback above is a bug in warnonce-guard, not a problem with "
        "your input; please report it",
        file=sys.stderr,
    )
    return int(ExitCode.INTERNAL_ERROR)


if __name__ == "__main__":
    sys.exit(main(exiting=True))
