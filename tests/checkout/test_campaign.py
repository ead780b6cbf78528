"""The fault campaign's own logic (tools/campaign/): the draw of moments, the exit codes each fault allows, the
comparison with the clean run, and the summary, on hand-made data; then a tiny seeded campaign run for real."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from warnonce_guard.common.errors import ExitCode
from warnonce_guard.guards.detectors import OWNER_PINNED
from warnonce_guard.mutations.report import stryker, summary

from tests import layout
from tests.records_support import sample_result
from tools.campaign.cli import closing, remeasured, row
from tools.campaign.judge import Observation, Outcome, judge
from tools.campaign.plan import FAULTS, MAX_GAP_S, Aim, Windows, allowed_exits, draw_moment, plan, trial_rng
from tools.campaign.runs import RunDirs, Verdicts, read_verdicts
from tools.campaign.targets import Clean
from tools.campaign.trial import TrialRecord, phase_of

ROOT = layout.ROOT
OK, INTERRUPTED, TERMINATED = ExitCode.OK, ExitCode.INTERRUPTED, ExitCode.TERMINATED
GUARD = "guard_tests/test_kernel_import_sites.py::test_site_releases_exception_and_warns_once"
M1, M2 = "vllm.platforms.interface.xǁPlatformǁimport_kernels__mutmut_1", "vllm.platforms.cpu.xǁCpuPlatformǁf__mutmut_1"
CLEAN = Verdicts(
    mutants={
        M1: ("Killed", "live-arg", (f"{GUARD}[interface-Platform.import_kernels-vllm._C-0]",)),
        M2: ("Killed", "live-arg", (f"{GUARD}[cpu-CpuPlatform.import_kernels-vllm._C-0]",)),
    },
    sites={"vllm/platforms/interface.py::Platform.import_kernels::vllm._C#0": ("guarded", "–")},
)
INTERRUPTED_LINE = "warnonce-guard: interrupted; rerun the same command to resume\n"


def observed(fault: str = "int-group", **changes: object) -> Observation:
    """A trial that kept the contract: SIGINT while the run worked, 130 and one line, then a clean rerun."""
    fine = Observation(
        fault=FAULTS[fault],
        sent=True,
        after_end=False,
        faulted=Outcome(130, "", INTERRUPTED_LINE),
        faulted_report=None,
        reruns=(Outcome(0, "Mutation score: 100.00%\n", ""),),
        final=CLEAN,
    )
    return replace(fine, **changes)


# --- moments ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "window"),
    [("int-command", (0.0, 5.0)), ("kill-session", (1.0, 4.0)), ("kill-worker", (2.0, 3.0))],
)
def test_moments_are_drawn_over_the_aimed_process_window_first_and_last_tenth_included(
    fault: str, window: tuple[float, float]
) -> None:
    windows = Windows(5.0, session=(1.0, 4.0), workers=(2.0, 3.0))
    rng = trial_rng(7, 1)
    moments = [draw_moment(rng, FAULTS[fault], windows)[0] for _ in range(3000)]
    low, high = window
    assert all(low <= m <= high for m in moments)
    assert any(m < low + 0.1 for m in moments) and any(m > high - 0.1 for m in moments)
    middle = sum(low + (high - low) / 4 <= m <= high - (high - low) / 4 for m in moments) / len(moments)
    assert 0.45 < middle < 0.55  # uniform: half of them in the middle half


def test_a_process_never_seen_in_the_clean_run_is_aimed_at_over_the_whole_run() -> None:
    assert Windows(5.0).of(Aim.WORKER) == (0.0, 5.0) and Windows(5.0, workers=(2.0, 3.0)).of(Aim.WORKER) == (2, 3)


def test_only_a_double_signal_draws_a_gap_and_it_stays_within_its_bound() -> None:
    rng = trial_rng(1, 1)
    gaps = [draw_moment(rng, FAULTS["term-int-group"], Windows(5.0))[1] for _ in range(500)]
    assert all(0 <= g <= MAX_GAP_S for g in gaps) and max(gaps) > 0.9 * MAX_GAP_S
    assert draw_moment(rng, FAULTS["int-group"], Windows(5.0))[1] == 0.0


def test_a_seeded_plan_is_repeatable_and_puts_exactly_the_asked_trials_on_vllm() -> None:
    faults = list(FAULTS.values())
    first = plan(3, 50, 7, ["toy", "toy-slow"], faults, "vllm")
    assert first == plan(3, 50, 7, ["toy", "toy-slow"], faults, "vllm")
    assert sum(p.target == "vllm" for p in first) == 7 and [p.number for p in first] == list(range(1, 51))
    assert {p.fault.name for p in plan(3, 400, 0, ["toy"], faults, "vllm")} == set(FAULTS)  # every kind drawn
    windows = Windows(4.0)
    assert draw_moment(trial_rng(3, 17), faults[0], windows) == draw_moment(trial_rng(3, 17), faults[0], windows)
    with pytest.raises(ValueError, match="vllm_trials"):
        plan(3, 5, 6, ["toy"], faults, "vllm")


def test_a_trial_whose_fault_was_never_delivered_measures_the_clean_run_again() -> None:
    clean = Clean(CLEAN, 0, 2, run_s=16.0, session=(2.0, 15.0), workers=(10.0, 13.0))
    unfaulted = TrialRecord(1, "toy", "int-group", 12.0, 0.0, sent=False, exit_code=0, run_s=8.5,
                            session=(1.0, 8.0), workers=(5.0, 7.0))  # fmt: skip
    assert remeasured(clean, unfaulted) == Clean(CLEAN, 0, 2, 8.5, (1.0, 8.0), (5.0, 7.0))
    assert remeasured(clean, replace(unfaulted, sent=True)) is None  # a faulted run is no clean run
    assert remeasured(clean, replace(unfaulted, reasons=["left running: 42 x"])) is None
    assert remeasured(clean, replace(unfaulted, exit_code=1)) is None


# --- exit codes -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "sent", "after_end", "allowed"),
    [
        ("int-command", True, False, {INTERRUPTED}),
        ("int-group", True, True, {INTERRUPTED, OK}),
        ("term-group", True, False, {TERMINATED}),
        ("kill-command", True, False, {-9}),
        ("kill-group", True, True, {-9, OK}),
        ("kill-session", True, False, {ExitCode.ENVIRONMENT}),
        ("kill-worker", True, False, {OK}),
        ("int-int-group", True, False, {INTERRUPTED}),
        ("term-int-group", True, False, {TERMINATED}),
        ("int-term-group", True, False, {INTERRUPTED}),
        ("kill-session", False, True, {OK}),
        ("term-command", False, True, {OK}),
    ],
)
def test_each_fault_allows_the_exit_codes_the_contract_gives_it(
    fault: str, sent: bool, after_end: bool, allowed: set[int]
) -> None:
    assert allowed_exits(FAULTS[fault], sent, after_end, clean_exit=0) == allowed


@pytest.mark.parametrize(
    ("fault", "ours", "python"),
    [("term-int-group", TERMINATED, {-15}), ("int-command", INTERRUPTED, {-2, 1}), ("kill-group", -9, set())],
)
def test_a_signal_in_the_interpreters_start_up_also_allows_what_python_does_with_it(
    fault: str, ours: int, python: set[int]
) -> None:
    """Before the entry module catches stop signals the interpreter answers them (README: not covered)."""
    assert allowed_exits(FAULTS[fault], True, False, clean_exit=0, in_startup=True) == {ours, *python}
    assert allowed_exits(FAULTS[fault], True, False, clean_exit=0) == {ours}


def test_python_speaking_in_its_start_up_is_ok_but_the_reruns_are_held_as_always() -> None:
    fatal = Outcome(1, "", "Fatal Python error: init_import_site\nTraceback (most recent call last):\n  x\n")
    early = observed("int-command", faulted=fatal, faulted_report=None, in_startup=True)
    assert judge(early, CLEAN, 0) == []
    assert judge(replace(early, in_startup=False), CLEAN, 0)  # the same words from our code are wrong
    failed_rerun = replace(early, reruns=(Outcome(13, "", "warnonce-guard: error: x\n"),))
    assert any("rerun 1 exited 13" in r for r in judge(failed_rerun, CLEAN, 0))


# --- the judge --------------------------------------------------------------------------------------------


def test_a_trial_that_keeps_the_contract_is_ok() -> None:
    assert judge(observed(), CLEAN, 0) == []
    report = observed("kill-worker", faulted=Outcome(0, "", ""), faulted_report=CLEAN)
    assert judge(report, CLEAN, 0) == []
    late = observed("term-group", after_end=True, faulted=Outcome(0, "", ""), faulted_report=CLEAN)
    assert judge(late, CLEAN, 0) == []
    resumed = observed(reruns=(Outcome(130, "", INTERRUPTED_LINE), Outcome(0, "", "")))
    assert judge(resumed, CLEAN, 0) == []


CRASHED = replace(CLEAN, mutants={**CLEAN.mutants, M1: ("RuntimeError", "live-arg", ())})
MOVED = replace(CLEAN, mutants={**CLEAN.mutants, M1: ("Killed", "live-arg", CLEAN.mutants[M2][2])})
TRACEBACK = "Traceback (most recent call last):\n  File ...\nKeyError: 'x'\n"


WRONG = [
    (
        "worker kill stored as crashed",
        {
            "fault": "kill-worker",
            "faulted": Outcome(1, "", ""),
            "faulted_report": CRASHED,
            "reruns": (Outcome(1, "", ""),),
            "final": CRASHED,
        },
        r"final statuses differ: xǁPlatformǁimport_kernels__mutmut_1 RuntimeError \(clean: Killed\)",
    ),
    (
        "double signal ends killed by SIGINT",
        {"fault": "int-int-group", "faulted": Outcome(-2, "", "")},
        r"the faulted run exited -2, expected 130",
    ),
    ("TERM then INT ends as INT", {"fault": "term-int-group"}, r"exited 130, expected 143: "),
    (
        "signal while naming is a bug",
        {"faulted": Outcome(70, "", "warnonce-guard: internal error\n" + TRACEBACK)},
        r"exited 70, expected 130.*printed a traceback.*wrote 4 lines on stderr",
    ),
    (
        "signal at the end is a silent -15",
        {"fault": "term-group", "after_end": True, "faulted": Outcome(-15, "", "")},
        r"exited -15, expected 0 or 143",
    ),
    ("killed-by moved", {"final": MOVED}, r"killed by cpu \(clean: interface\)"),
    ("a mutant missing", {"final": replace(CLEAN, mutants={M2: CLEAN.mutants[M2]})}, r"mutmut_1 missing"),
    (
        "a site's baseline changed",
        {"final": replace(CLEAN, sites={k: ("exposed", OWNER_PINNED) for k in CLEAN.sites})},
        r"site vllm/platforms/interface.py \('exposed'",
    ),
    ("a process left", {"left": ("4242 mutmut: vllm.x__mutmut_1",)}, r"left running: 4242 mutmut"),
    ("a user file changed", {"changed": ("/home/me/notes.txt",)}, r"changed: /home/me/notes.txt"),
    ("the faulted run hung", {"faulted": Outcome(None)}, r"the faulted run did not end \(hung\)"),
    (
        "the rerun fails",
        {"reruns": (Outcome(13, "", "warnonce-guard: error: mutmut died\n"),)},
        r"rerun 1 exited 13, expected 0: warnonce-guard: error: mutmut died",
    ),
    ("no report after the rerun", {"final": None}, r"no report after the reruns"),
    ("an error without its line", {"faulted": Outcome(13, "", "")}, r"exited 13 without a line on stderr"),
    ("a stray temporary report", {"stray": (".report.tmp-1-ab",)}, r"left beside --out: .report.tmp-1-ab"),
]


@pytest.mark.parametrize(("case", "changes", "reason"), WRONG, ids=[case for case, _, _ in WRONG])
def test_a_trial_that_breaks_the_contract_is_wrong_and_says_why(case: str, changes: dict, reason: str) -> None:
    reasons = judge(observed(**changes), CLEAN, 0)
    assert reasons and re.search(reason, "; ".join(reasons)), reasons


def test_the_row_shows_the_trial_and_why_it_is_wrong_and_the_last_line_counts_them() -> None:
    fine = TrialRecord(1, "toy", "int-group", 1.25, 0.0, phase="generation", sent=True, exit_code=130)
    bad = TrialRecord(2, "vllm", "kill-worker", 12.5, 0.0, phase="mutants", sent=True, exit_code=1,
                      reasons=["final statuses differ: m1 RuntimeError (clean: Killed)"])  # fmt: skip
    assert row(fine).split() == ["1", "toy", "int-group", "1.250", "s", "generation", "exit", "130", "ok"]
    assert row(bad).endswith("exit    1  wrong: final statuses differ: m1 RuntimeError (clean: Killed)")
    lines = closing([fine, bad], "nox -s faults -- --trials 2 --seed 5", 5)
    assert lines[-1] == "2 trials: 1 ok, 1 wrong"
    assert "per fault: int-group 1 (0 wrong), kill-worker 1 (1 wrong)" in lines
    assert lines[0] == "command: nox -s faults -- --trials 2 --seed 5 (seed 5)"
    assert "not delivered (the run or its aimed process had ended by the moment): 0 of 2" in lines


def test_the_phase_a_fault_landed_in_is_read_from_the_work_directory_and_out(tmp_path: Path) -> None:
    dirs = RunDirs(tmp_path / "tree", tmp_path / "report", tmp_path / "work")
    ws = dirs.work / "0123abcd"
    steps = [
        ("start", lambda: None),
        ("staging", lambda: ws.mkdir(parents=True)),
        ("staging", lambda: (ws / "mutmut.log").write_text("")),  # the session is started meanwhile
        ("staged", lambda: (ws / "setup.cfg").write_text("")),
        ("generation", lambda: (ws / "mutants").mkdir()),  # the generator copies the site files there
        ("baseline", lambda: (ws / "generation.json").write_text("{}")),
        ("mutants", lambda: (ws / "attribution" / "mutants").mkdir(parents=True)
         or (ws / "attribution" / "mutants" / "m1.json").write_text("{}")),
        ("collect", lambda: [(ws / "attribution" / "mutants" / f"m{n}.json").write_text("{}") for n in (2, 3)]),
        ("report", lambda: (tmp_path / ".report.tmp-1-ab").mkdir()),
        ("done", lambda: dirs.out.mkdir() or (dirs.out / "mutation.json").write_text("{}")),
    ]  # fmt: skip
    for phase, step in steps:
        step()
        assert phase_of(dirs, mutants=3) == phase
    (ws / "attribution" / "mutants" / "m3.json").unlink()
    (dirs.out / "mutation.json").unlink()
    (tmp_path / ".report.tmp-1-ab").rmdir()
    assert phase_of(dirs, mutants=3) == "mutants"
    (ws / "attribution" / "mutants").rename(ws / "attribution" / "later")
    assert phase_of(dirs, mutants=3, workers=True) == "mutants"  # a worker runs the first mutant


# --- a real campaign --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_tiny_seeded_campaign_prints_a_row_per_trial_and_the_count_and_logs_them(tmp_path: Path) -> None:
    """SIGKILL of the command or its group at any moment: the faults the tool has always survived."""
    log = tmp_path / "campaign.json"
    args = ["--trials", "2", "--seed", "4", "--vllm-trials", "0", "--targets", "toy"]
    args += ["--faults", "kill-command,kill-group", "--log", str(log), "--work-dir", str(tmp_path / "work")]
    done = subprocess.run(
        [sys.executable, "-m", "tools.campaign", *args],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    assert lines[-1] == "2 trials: 2 ok, 0 wrong"
    rows = [line for line in lines if re.match(r"^\s+\d+  toy ", line)]
    assert len(rows) == 2 and all(re.search(r"kill-(command|group)\s+\d+\.\d{3} s .* ok$", r) for r in rows), lines
    document = json.loads(log.read_text(encoding="utf-8"))
    assert [t["number"] for t in document["trials"]] == [1, 2] and all(t["ok"] for t in document["trials"])
    assert document["summary"] == {"trials": 2, "ok": 2, "wrong": 0} and document["seed"] == 4
    assert list((tmp_path / "work").iterdir()) == []  # every trial ok: nothing kept


def test_the_campaign_reads_every_sites_verdict_from_the_report_the_run_writes_today(tmp_path: Path) -> None:
    """The campaign compares runs by their reports: a column added to summary.md's sites table (the form, the
    operators without a mutant) must not make it read a site's form as its status (the slow tier's fault tests
    then all failed in their clean run)."""
    result = sample_result()
    (tmp_path / "summary.md").write_text(summary.render(result), encoding="utf-8")
    (tmp_path / "mutation.json").write_text(json.dumps(stryker.build(result)), encoding="utf-8")

    verdicts = read_verdicts(tmp_path)
    assert {site: status for site, (status, _) in verdicts.sites.items()} == {
        b.site.id: str(b.status) for b in result.baselines
    }
    assert len(verdicts.mutants) >= len(result.mutants)
