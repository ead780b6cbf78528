"""The environment the processes of a run pass each other: every `WARNONCE_GUARD_*` variable, written and read here.

Guard sessions (the guards' pytest processes) learn through it what to import and guard and whether and where
to record their outcomes: the mutmut session tells the sessions mutmut starts (`tell_guards` over its own
environment, then `tell_site_functions`), the history its guard runs; a person may set the first three by hand.
A child the run starts learns its parent's pid (`tell_parent`, `common.processes`). `settings()` reads it all back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass

PREFIX = "WARNONCE_GUARD_"
VLLM_SRC = PREFIX + "VLLM_SRC"  # the vLLM tree the guards import (--vllm-src's default)
PLATFORM = PREFIX + "PLATFORM"  # a platform class, module:Class, whose sites are guarded through it (--platform's)
SITES = PREFIX + "SITES"  # sites discovered beforehand, as JSON (--sites-file's default)
ATTRIBUTION = PREFIX + "ATTRIBUTION"  # where each finished session writes its record (guards.sessions); unset: none
RUN_ID = PREFIX + "RUN_ID"  # the run those records belong to
MUTANT_VARIABLE = PREFIX + "MUTANT_VARIABLE"  # the variable that holds the name of what a session runs
BASELINE_PHASES = PREFIX + "BASELINE_PHASES"  # comma-separated: its values for runs of the unmutated code
MUTANT_MARK = PREFIX + "MUTANT_MARK"  # a substring of every mutant's name
SITE_FUNCTIONS = PREFIX + "SITE_FUNCTIONS"  # JSON: the engine's function key -> the ids of the sites it holds
EXPECT_VLLM = PREFIX + "EXPECT_VLLM"  # the package directory the guards must import (the target's)
MUTATED = PREFIX + "MUTATED"  # the folder every site module already imported must come from (the workspace's)
EVIDENCE = PREFIX + "EVIDENCE"  # "0": findings without their referrer chains (the mutation run, for speed)
PARENT_PID = PREFIX + "PARENT_PID"  # the pid of the process that started this one (processes.bind_to_parent)
# a suite's (`mutate --tests`): where its session on the unmutated code says which tests fail there (left out of every
# later session) and which mutated functions ran outside any test
SUITE_BASELINE = PREFIX + "SUITE_BASELINE"
# a session that re-runs a kill's tests (`mutate --confirm`): the file its record goes to, in place of the usual one
RECORD_TO = PREFIX + "RECORD_TO"
SESSION_END = PREFIX + "SESSION_END"  # the mutmut session's: the fd of the pipe it says its exit code on as it ends
CONFIRM = PREFIX + "CONFIRM"  # the mutmut session's: how many times each kill's tests are re-run (`mutate --confirm`)
HISTORY_MUTANT = PREFIX + "HISTORY_MUTANT"  # the history's MUTANT_VARIABLE: never set, so every run is a baseline


@dataclass(frozen=True)
class Settings:
    """What this process was told through its environment (unset: None, "" or the default below)."""

    vllm_src: str | None
    platform: str | None
    sites: str | None
    attribution: str | None
    run_id: str
    mutant_variable: str
    mutant: str  # the value of the variable `mutant_variable` names: what this session runs
    baseline_phases: frozenset[str]
    mutant_mark: str
    site_functions: str  # JSON, read by `function_sites`
    expect_vllm: str | None
    mutated: str | None
    evidence: bool
    parent_pid: int | None
    suite_baseline: str | None = None
    record_to: str | None = None
    confirm: int = 1

    def function_sites(self) -> dict[str, list[str]]:
        """Which sites each function the engine mutates holds (empty when not told)."""
        return json.loads(self.site_functions or "{}")


def settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The protocol's values in `environ` (the process's environment, as it is now, by default)."""
    env = os.environ if environ is None else environ
    parent, mutant_variable = env.get(PARENT_PID), env.get(MUTANT_VARIABLE, "")
    return Settings(
        vllm_src=env.get(VLLM_SRC),
        platform=env.get(PLATFORM),
        sites=env.get(SITES),
        attribution=env.get(ATTRIBUTION) or None,
        run_id=env.get(RUN_ID, ""),
        mutant_variable=mutant_variable,
        mutant=env.get(mutant_variable, "") if mutant_variable else "",
        baseline_phases=frozenset(env.get(BASELINE_PHASES, "").split(",")),
        mutant_mark=env.get(MUTANT_MARK, ""),
        site_functions=env.get(SITE_FUNCTIONS, ""),
        expect_vllm=env.get(EXPECT_VLLM) or None,
        mutated=env.get(MUTATED) or None,
        evidence=env.get(EVIDENCE, "1") != "0",
        parent_pid=int(parent) if parent else None,
        suite_baseline=env.get(SUITE_BASELINE) or None,
        record_to=env.get(RECORD_TO) or None,
        confirm=int(env.get(CONFIRM) or 1),
    )


def without_protocol(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` less every variable of the protocol (a caller's would point a child elsewhere)."""
    return {name: value for name, value in environ.items() if not name.startswith(PREFIX)}


def tell_guards(
    environ: MutableMapping[str, str],
    *,
    attribution: str,
    run_id: str,
    mutant_variable: str,
    baseline_phases: Iterable[str],
    mutant_mark: str,
    sites: str | None = None,
    expect_vllm: str | None = None,
    mutated: str | None = None,
    evidence: bool = True,
    suite_baseline: str | None = None,
    confirm: int | None = None,
) -> None:
    """Make `environ` the environment of guard sessions that record their outcomes under `attribution`: every
    protocol variable it held goes (a caller's tree, sites or records), these are set."""
    for name in [name for name in environ if name.startswith(PREFIX)]:
        del environ[name]
    environ.update(
        {
            ATTRIBUTION: attribution,
            RUN_ID: run_id,
            MUTANT_VARIABLE: mutant_variable,
            BASELINE_PHASES: ",".join(baseline_phases),
            MUTANT_MARK: mutant_mark,
        }
    )
    told = {
        SITES: sites,
        EXPECT_VLLM: expect_vllm,
        MUTATED: mutated,
        EVIDENCE: None if evidence else "0",
        SUITE_BASELINE: suite_baseline,
        CONFIRM: str(confirm) if confirm is not None else None,
    }
    environ.update({name: value for name, value in told.items() if value is not None})


def tell_site_functions(environ: MutableMapping[str, str], functions: Mapping[str, Sequence[str]]) -> None:
    """Tell the guard sessions which sites each function the engine mutates holds (`Settings.function_sites`)."""
    environ[SITE_FUNCTIONS] = json.dumps(functions)


def tell_parent(environ: MutableMapping[str, str], pid: int) -> None:
    """Tell a child that `pid` started it (`Settings.parent_pid`)."""
    environ[PARENT_PID] = str(pid)
