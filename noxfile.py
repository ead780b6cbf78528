"""nox sessions: the same commands a person runs locally, CI runs too.

    nox -s tests                          unit tests, then the guards against the pinned vLLM
    nox -s guards -- [--vllm X | --vllm-src PATH] [PYTEST ARGS]
    nox -s sites -- [--vllm X | --vllm-src PATH] [--json]
    nox -s mutation -- [--vllm X | --vllm-src PATH] [--out DIR] [--fail-under PERCENT]
    nox -s audit -- [--vllm X | --vllm-src PATH] [--json] [--baseline FILE]
    nox -s replay                         the guards and the mutation run against vLLM 0.29.0 must fail
    nox -s history -- [--from X] [--to Y] [--only X,Y] [--out DIR]   every release on the index, checked
    nox -s lint

Each session's environment holds torch 2.13.0 (the CPU build on local disk), the runtime modules of
requirements/guard-env.txt, vLLM installed with --no-deps, and this project. Environments are reused:
a second run installs nothing new unless the vLLM version changed.
"""

from __future__ import annotations

import nox

nox.options.reuse_venv = "yes"
nox.options.sessions = ["tests"]

PINNED_VLLM = "0.33.0"
REPLAYED_VLLM = "0.29.0"  # the last release before the fix
PYTHON = "3.11"


def _take_vllm(posargs: list[str]) -> tuple[str, list[str]]:
    """Split `--vllm X` off the session's arguments; the rest go to the command."""
    args, version = list(posargs), PINNED_VLLM
    if "--vllm" in args:
        at = args.index("--vllm")
        if at + 1 >= len(args):
            raise SystemExit("nox: --vllm needs a version, e.g. `nox -s guards -- --vllm 0.29.0`")
        version = args[at + 1]
        del args[at : at + 2]
    return version, args


def _guard_env(session: nox.Session, vllm_version: str) -> None:
    """Install what the guards import, vLLM without its dependencies, and this project."""
    session.install("-r", "requirements/guard-env.txt")
    installed = session.run(
        "python", "-c", "import importlib.metadata as m; print(m.version('vllm'))", silent=True, success_codes=[0, 1]
    )
    if (installed or "").strip().splitlines()[-1:] != [vllm_version]:
        session.install("--no-deps", f"vllm=={vllm_version}")
    session.install("-e", ".[dev]")


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The project's unit tests, then the guards against the pinned vLLM (all must pass)."""
    _guard_env(session, PINNED_VLLM)
    session.run("python", "-m", "mutations.report.npm")  # the pinned HTML viewer and report schema
    session.run("python", "-m", "pytest", "tests", *session.posargs)
    session.run("warnonce-guard", "guards", "-q")


@nox.session(python=PYTHON)
def guards(session: nox.Session) -> None:
    """The guards against one vLLM: `-- --vllm 0.29.0` or `-- --vllm-src PATH`."""
    version, args = _take_vllm(session.posargs)
    _guard_env(session, version)
    if "--vllm-src" in args:  # the option belongs before pytest's arguments
        at = args.index("--vllm-src")
        args = [*args[at : at + 2], *args[:at], *args[at + 2 :]]
    session.run("warnonce-guard", "guards", *args)


@nox.session(python=PYTHON)
def sites(session: nox.Session) -> None:
    """List the kernel-import sites of one vLLM."""
    version, args = _take_vllm(session.posargs)
    _guard_env(session, version)
    session.run("warnonce-guard", "sites", *args)


@nox.session(python=PYTHON)
def mutation(session: nox.Session) -> None:
    """The main job: baseline, mutants at every site, guards per mutant, score, report."""
    version, args = _take_vllm(session.posargs)
    _guard_env(session, version)
    session.run("python", "-m", "mutations.report.npm")  # the pinned HTML viewer, into .nox/npm
    session.run("warnonce-guard", "mutate", *args)


@nox.session(python=PYTHON)
def audit(session: nox.Session) -> None:
    """Every *_once call of one vLLM that can carry a live object into the cache (`--baseline FILE` to ratchet)."""
    version, args = _take_vllm(session.posargs)
    _guard_env(session, version)
    session.run("warnonce-guard", "audit", *args)


@nox.session(python=PYTHON)
def replay(session: nox.Session) -> None:
    """Historical replay: guards and mutation run against vLLM 0.29.0 (before the fix) must expose every site."""
    _guard_env(session, REPLAYED_VLLM)
    session.run("python", "-m", "mutations.report.npm")
    session.run(
        "python", "-m", "pytest", "tests/test_replay.py", "-v", env={"WARNONCE_GUARD_REPLAY": REPLAYED_VLLM}
    )


@nox.session(python=PYTHON)
def history(session: nox.Session) -> None:
    """Release history: every vLLM release on the index fetched into the work dir and checked (no vLLM installed)."""
    session.install("-r", "requirements/history-env.txt")
    session.install("-e", ".")
    session.run("warnonce-guard", "history", *session.posargs)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff over the whole project."""
    session.install("ruff==0.17.6")
    session.run("ruff", "check", ".")
