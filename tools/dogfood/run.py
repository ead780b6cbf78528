"""The dogfood run: the project staged in a `warnonce_guard/` layout, mutmut's run there, its results scored.

Only mutmut's command line is used (`run`, `results`, `show`): the work folder is mutmut's, the checkout is read.
A survivor is named by a description that survives line shifts: its module, its function and the lines the
mutant changes (`Mutant.description`); `equivalents.toml` lists the equivalent ones by that description.
"""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
import sys
import tomllib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
EQUIVALENTS_FILE = Path(__file__).resolve().parent / "equivalents.toml"
PACKAGE = "warnonce_guard"


def _package_folders() -> list[str]:
    """The folders of the checkout that are packages of `warnonce_guard`, as setup.cfg's package_dir maps them."""
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg", encoding="utf-8")
    return [line.split("=")[1].strip() for line in setup["options"]["package_dir"].strip().splitlines()]


PACKAGES = _package_folders()
# What else the fast tier reads from the checkout (its own files, the docs it checks, the tools it runs).
ALSO = ("tests", "tools", "docs", "requirements", "bench", ".ci", ".github", ".buildkite")
ALSO_FILES = ("README.md", "setup.cfg", "pyproject.toml", "noxfile.py", ".pre-commit-hooks.yaml", ".gitignore")
# The modules mutated, as globs of mutmut's `only_mutate` (paths in the staged layout): every module that decides a
# verdict. The site rule and discovery, liveness, the cache model, renders-first, the fix's writer, expected sites;
# the judge and the confirmation; the detectors; strict mode's contract; the audit's calls, pragmas and selection.
MODULES = tuple(
    f"{PACKAGE}/{module}"
    for module in (
        "rule/site_rule.py",
        "rule/sites.py",
        "rule/site_row.py",
        "rule/liveness.py",
        "rule/formatting.py",
        "caches/model.py",
        "caches/renders_first.py",
        "caches/cache_fix.py",
        "rule/expected.py",
        "mutations/judge.py",
        "mutations/engine/confirm.py",
        "mutations/engine/outline.py",
        "mutations/engine/workers.py",
        "guards/detectors.py",
        "strict/contract.py",
        "audit/calls.py",
        "audit/pragmas.py",
        "audit/selection.py",
    )
)
FAST = "not slow and not network and not engine"
# The fast tests of the products the mutated modules belong to, and of the rule: mutmut runs, for each mutant, every
# one of these that reaches its function (the mutation run's and the history's reach the rule too, through
# discovery, but each takes seconds where these take milliseconds: with them a run takes hours on two cores). Of the
# mutation run's, those of the judge and the confirmation that run in the process (the engine's plugin tests run
# pytest in subprocesses, seconds each, which mutmut's trampolines do not see).
TESTS = (
    "tests/rule",
    "tests/audit",
    "tests/strict",
    "tests/guards",
    "tests/mutations/test_results.py",
    "tests/mutations/test_judge_reasons.py",
    "tests/mutations/test_neutralized.py",
    "tests/mutations/test_suite.py",
    "tests/mutations/test_engine_confirm.py",
    "tests/mutations/test_outline.py",
    "tests/mutations/test_engine_attempts.py",
    "tests/mutations/test_collect_result.py",
)
# Tests that cannot pass in the staged project: of the checkout's own layout (top-level folders, not
# `warnonce_guard/`), or of the sources as written.
LAYOUT_TESTS = (
    "tests/checkout/test_layers.py",
    "tests/checkout/test_readme.py::test_check_mode_names_a_stale_architecture_document",
    "tests/common/test_protocol.py::test_no_module_but_the_protocol_spells_a_variable_of_it",
    # it reads the package's sources for `import mutmut`, which mutmut's trampolines put into every mutated module
    "tests/mutations/test_seam.py::test_only_the_engine_imports_mutmut",
)
FLOOR = 95.0  # percent killed, of the mutants that are not equivalent, in every module
TIMEOUT = "timeout"
KILLED = frozenset({"killed", TIMEOUT, "caught by type check"})
NOT_CHECKED = "not checked"  # mutmut's status of a mutant it has not run
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".nox", ".venv", "mutants")


def _copy(source: Path, target: Path) -> None:
    """`source` copied to `target` whole (modification times kept: mutmut regenerates only what changed)."""
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.exists() or target.is_symlink():
        target.unlink()
    if source.is_dir():
        shutil.copytree(source, target, ignore=_IGNORED, copy_function=shutil.copy2)
    elif source.exists():
        shutil.copy2(source, target)


def mutmut_section() -> str:
    """setup.cfg's `[mutmut]` for the staged project: the whole package copied, `MODULES` mutated, the fast tier."""
    lines = {
        "source_paths": [PACKAGE],
        "only_mutate": list(MODULES),
        "also_copy": [*ALSO, *ALSO_FILES],
        "pytest_add_cli_args_test_selection": [*TESTS, "-m", FAST],
        "pytest_add_cli_args": ["-p", "no:xdist", *(f"--deselect={test}" for test in LAYOUT_TESTS)],
        # mutmut stops a mutant after (its tests' time + 1 s) x this x 2 of CPU: its default 15 made a mutant that
        # loops forever in a function hundreds of tests reach (liveness.unhashable_names: 121 s of tests) run an
        # hour before its timeout; 1.5 gives three times the tests' own time
        "timeout_multiplier": ["1.5"],
    }
    body = "".join(f"{key} =\n" + "".join(f"    {value}\n" for value in values) for key, values in lines.items())
    return f"\n[mutmut]\n{body}"


def stage(work: Path, fresh: bool = False) -> None:
    """The checkout in `work` as the installed layout (`work/warnonce_guard/<package>`), with mutmut's settings;
    mutmut's folder (`work/mutants`) is kept, and its results with it, unless `fresh`."""
    work.mkdir(parents=True, exist_ok=True)
    if fresh and (work / "mutants").exists():
        shutil.rmtree(work / "mutants")
    (work / PACKAGE).mkdir(exist_ok=True)
    for name in PACKAGES:
        _copy(ROOT / name, work / PACKAGE / name)
    for name in (*ALSO, *ALSO_FILES):
        _copy(ROOT / name, work / name)
        if (work / "mutants" / name).is_dir():  # mutmut copies these over what is there: a removed test would stay
            shutil.rmtree(work / "mutants" / name)
    with (work / "setup.cfg").open("a", encoding="utf-8") as config:
        config.write(mutmut_section())


@dataclass(frozen=True)
class Mutant:
    """One mutant: mutmut's name, its status, and (for a survivor) the lines it changes."""

    name: str
    status: str
    change: str = ""

    @property
    def module(self) -> str:
        """The module's path in the checkout: `rule/liveness.py`."""
        dotted = re.split(r"\.x[_ǁ]", self.name, maxsplit=1)[0]
        return dotted.removeprefix(f"{PACKAGE}.").replace(".", "/") + ".py"

    @property
    def function(self) -> str:
        """The function mutated, `Class.method` for a method: `is_safe`, `Pragmas.accept`."""
        mangled = self.name[len(self.module) - 3 + len(PACKAGE) + 1 :].removeprefix(".")
        mangled = re.sub(r"__mutmut_\d+$", "", mangled)
        return mangled.removeprefix("x_").removeprefix("xǁ").replace("ǁ", ".")

    @property
    def description(self) -> str:
        """What survives a line shift: `module:function: - old / + new`."""
        return f"{self.module}:{self.function}: {self.change}"


# pytest's short summary line of a test that failed or errored: `FAILED tests/x.py::test_y - RecursionError: ...`.
_FAILED_TEST = re.compile(r"^(?:FAILED|ERROR) (\S+)(?: - (.*))?$", re.MULTILINE)


def failure(output: str) -> str:
    """What made mutmut fail, in a line: the first test its clean or stats run saw fail, with pytest's reason; else
    mutmut's last line (`failed to collect stats. runner returned 1`)."""
    test = _FAILED_TEST.search(output)
    if test:
        return f"{test[1]} failed ({test[2]})" if test[2] else f"{test[1]} failed"
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _mutmut(work: Path, *args: str) -> str:
    """mutmut's command line in `work`: its output (kept in `work/mutmut.log`); a failure ends the run with one line
    naming what failed (`failure`)."""
    done = subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=work, capture_output=True, text=True)
    log = work / "mutmut.log"
    if args[0] == "run":
        log.write_text(done.stdout + done.stderr, encoding="utf-8")
    if done.returncode != 0:
        where = f"; its output: {log}" if args[0] == "run" else ""
        what = failure(done.stdout + done.stderr)
        raise SystemExit(f"dogfood: mutmut {args[0]} failed (exit {done.returncode}): {what}{where}")
    return done.stdout


def results(work: Path) -> dict[str, str]:
    """Every mutant's status, by mutmut's name (`mutmut results --all true`)."""
    found = {}
    for line in _mutmut(work, "results", "--all", "true").splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name:
            found[name] = status
    return found


def change(work: Path, name: str) -> str:
    """The lines a mutant removes and adds (`mutmut show`), stripped, as `- old / + new`."""
    diff = _mutmut(work, "show", name).splitlines()
    changed = [line for line in diff if line[:1] in "-+" and not line.startswith(("---", "+++"))]
    return " / ".join(f"{line[0]} {line[1:].strip()}" for line in changed)


def run(work: Path, max_children: int, fresh: bool = False) -> list[Mutant]:
    """mutmut's run in `work`, then (unless the run was `fresh`: each result is then this run's) every non-killed
    mutant run again with the tests as they are now (a result kept from an earlier run predates the tests added
    since, and mutmut links only new tests to the functions they reach), every timeout run again alone, and every
    mutant with its status."""
    _mutmut(work, "run", "--max-children", str(max_children))
    statuses = results(work)
    if timeouts := sorted(name for name, status in statuses.items() if status == TIMEOUT):
        # A mutant past its CPU limit beside another worker may only have been slow there (a survivor of
        # rule/sites.py timed out in one fresh run, survived in the next): alone, only a real hang times out again.
        _mutmut(work, "run", "--max-children", "1", *timeouts)
        statuses = results(work)
    if not statuses:
        raise SystemExit("dogfood: mutmut made no mutant (see `mutmut run` in the work folder)")
    unchecked = sum(status == NOT_CHECKED for status in statuses.values())
    if unchecked:  # mutmut stopped by a signal says "Stopping..." and exits 0
        raise SystemExit(f"dogfood: mutmut's run ended with {unchecked} mutant(s) not checked: run again (without "
                         "--fresh, what it checked is kept)")  # fmt: skip
    again = sorted(name for name, status in statuses.items() if status not in KILLED)
    if again and not fresh:
        _mutmut(work, "run", "--max-children", str(max_children), *again)
        statuses = results(work)
    return [
        Mutant(name, status, change(work, name) if status not in KILLED else "")
        for name, status in sorted(statuses.items())
    ]


@dataclass(frozen=True)
class Score:
    """One module's mutants by outcome."""

    module: str
    mutants: int
    killed: int
    equivalent: int

    @property
    def survived(self) -> int:
        return self.mutants - self.killed - self.equivalent

    @property
    def percent(self) -> float:
        """Killed, of the mutants that are not equivalent."""
        judged = self.mutants - self.equivalent
        return 100.0 * self.killed / judged if judged else 100.0


def equivalents(path: Path) -> dict[str, str]:
    """The equivalent mutants' descriptions, each with its reason (`[[equivalent]]` tables: `mutant`, `reason`)."""
    listed = tomllib.loads(path.read_text(encoding="utf-8")).get("equivalent", [])
    return {entry["mutant"]: entry["reason"] for entry in listed}


def scored(mutants: Iterable[Mutant], listed: dict[str, str]) -> tuple[list[Score], list[Mutant], list[str]]:
    """Scores per module; the survivors not listed as equivalent; the listed descriptions no survivor has."""
    mutants = list(mutants)
    total, killed, equivalent = Counter[str](), Counter[str](), Counter[str]()
    unlisted, met = [], set()
    for mutant in mutants:
        total[mutant.module] += 1
        if mutant.status in KILLED:
            killed[mutant.module] += 1
        elif mutant.description in listed:
            equivalent[mutant.module] += 1
            met.add(mutant.description)
        else:
            unlisted.append(mutant)
    scores = [Score(module, total[module], killed[module], equivalent[module]) for module in sorted(total)]
    return scores, unlisted, sorted(set(listed) - met)


def score(
    work: Path, max_children: int, listed_in: Path, fresh: bool = False
) -> tuple[list[Score], list[tuple[str, str]], list[str]]:
    """Run mutmut and score it: per module, the unlisted survivors (name, description), the unused listings."""
    mutants = run(work, max_children, fresh)
    scores, unlisted, unused = scored(mutants, equivalents(listed_in))
    return scores, [(m.name, f"{m.status}: {m.description}") for m in unlisted], unused


def verdict(scores: Iterable[Score], unlisted: list[tuple[str, str]]) -> list[str]:
    """What fails the run: a module under `FLOOR`, a survivor not listed as equivalent."""
    failures = [f"{s.module}: {s.percent:.1f}% killed, under {FLOOR:.0f}%" for s in scores if s.percent < FLOOR]
    if unlisted:
        failures.append(f"{len(unlisted)} survivor(s) neither killed nor listed in {EQUIVALENTS_FILE.name}")
    return failures
