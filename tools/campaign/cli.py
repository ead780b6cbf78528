"""The campaign's command line: plan the trials, measure each target's clean run once, run the trials, print a
row per trial, a closing note (the command to repeat it, counts per fault and target) and, last,
`N trials: N ok, N wrong`; a JSON log of every trial is rewritten after each one. Exit 0 when every trial
is ok, 1 when one is wrong, 2 for a bad option, 3 when a target cannot be set up, 130 on Ctrl-C."""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

from tools.campaign.plan import FAULTS, Fault, Planned, draw_moment, plan, trial_rng
from tools.campaign.targets import TOYS, VLLM, Clean, Target, installed_vllm, make_target
from tools.campaign.trial import TrialRecord, measure, run_trial, windows_of

VLLM_SHARE = 0.1  # of the trials, on vLLM, unless --vllm-trials says otherwise


def _names(text: str, known: Sequence[str], what: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(unknown) or '(none)'}; known: {', '.join(known)}")
    return names


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tools.campaign", description=__doc__)
    parser.add_argument("--trials", type=int, default=40, help="how many trials (default 40)")
    parser.add_argument("--seed", type=int, default=None, help="the draw's seed (default: a random one, printed)")
    parser.add_argument(
        "--vllm-trials", type=int, default=None, help="trials on the installed vLLM (default: a tenth, when installed)"
    )
    toys, faults = list(TOYS), list(FAULTS)
    parser.add_argument(
        "--targets", type=lambda t: _names(t, toys, "toy"), default=toys, help=f"toys to draw from ({','.join(toys)})"
    )
    parser.add_argument(
        "--faults", type=lambda t: _names(t, faults, "fault"), default=faults, help=f"from {','.join(faults)}"
    )
    parser.add_argument(
        "--only", type=lambda t: [int(n) for n in t.split(",")], help="only these trials of the plan (to repeat one)"
    )
    parser.add_argument("--log", type=Path, default=Path("fault-campaign.json"), help="the JSON log to write")
    parser.add_argument("--work-dir", type=Path, default=None, help="where trials run (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep every trial's folder (default: the wrong ones)")
    args = parser.parse_args(argv)
    if args.trials < 1:
        parser.error("--trials must be at least 1")
    if args.vllm_trials is None:
        args.vllm_trials = round(args.trials * VLLM_SHARE) if installed_vllm() else 0
    if not 0 <= args.vllm_trials <= args.trials:
        parser.error(f"--vllm-trials must be between 0 and --trials ({args.trials})")
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1_000_000)
    return args


def repeat_command(args: argparse.Namespace) -> str:
    """The command that runs the same trials again."""
    words = ["nox", "-s", "faults", "--", "--trials", str(args.trials), "--seed", str(args.seed)]
    words += ["--vllm-trials", str(args.vllm_trials)]
    if args.targets != list(TOYS):
        words += ["--targets", ",".join(args.targets)]
    if args.faults != list(FAULTS):
        words += ["--faults", ",".join(args.faults)]
    if args.only:
        words += ["--only", ",".join(map(str, args.only))]
    return shlex.join(words)


def remeasured(clean: Clean, record: TrialRecord) -> Clean | None:
    """The target's clean run measured again from a trial whose fault was never delivered: that run went to its
    end unfaulted, on the machine as loaded now (a shared machine's load changes a run's length twofold, and
    moments drawn from a slower run fall after the end of every faster one). None: the trial faulted its run."""
    if record.sent or not record.ok or record.exit_code != clean.exit_code:
        return None
    return replace(
        clean, run_s=record.run_s, session=record.session or clean.session, workers=record.workers or clean.workers
    )


def row(record: TrialRecord) -> str:
    verdict = "ok" if record.ok else "wrong: " + "; ".join(record.reasons)
    where = record.phase if record.sent else "(ended)"
    return (
        f"{record.number:>4}  {record.target:<12} {record.fault:<15} {record.moment_s:7.3f} s  {where:<10} "
        f"exit {record.exit_code!s:>4}  {verdict}"
    )


def closing(records: Sequence[TrialRecord], command: str, seed: int) -> list[str]:
    """The closing note: how to repeat the campaign, its counts per fault and target, and the last line."""
    lines = [f"command: {command} (seed {seed})"]
    for key, what in ((lambda r: r.fault, "fault"), (lambda r: r.target, "target")):
        total, wrong = Counter(map(key, records)), Counter(key(r) for r in records if not r.ok)
        counts = ", ".join(f"{name} {total[name]} ({wrong[name]} wrong)" for name in sorted(total))
        lines.append(f"per {what}: {counts}")
    early = sum(r.sent and r.phase == "interpreter" for r in records)
    lines.append(
        f"in the interpreter's start-up (before the entry module caught stop signals; README: Python's): {early}"
    )
    late = sum(not r.sent for r in records)
    lines.append(f"not delivered (the run or its aimed process had ended by the moment): {late} of {len(records)}")
    bad = sum(not r.ok for r in records)
    lines.append(f"{len(records)} trials: {len(records) - bad} ok, {bad} wrong")
    return lines


def write_log(
    path: Path, command: str, args: argparse.Namespace, cleans: dict[str, Clean], records: Sequence[TrialRecord]
) -> None:
    document = {
        "command": command,
        "seed": args.seed,
        "targets": {
            name: {key: getattr(c, key) for key in ("run_s", "session", "workers", "mutants", "exit_code")}
            for name, c in cleans.items()
        },
        "trials": [{**asdict(r), "ok": r.ok} for r in records],
        "summary": {"trials": len(records), "ok": sum(r.ok for r in records), "wrong": sum(not r.ok for r in records)},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(document, indent=1), encoding="utf-8")
    os.replace(partial, path)


def say(line: str) -> None:
    print(line, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    command = repeat_command(args)
    faults: list[Fault] = [FAULTS[name] for name in args.faults]
    planned: list[Planned] = plan(args.seed, args.trials, args.vllm_trials, args.targets, faults, VLLM)
    selected = [p for p in planned if args.only is None or p.number in args.only]
    if args.work_dir:
        args.work_dir.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="fault-campaign-", dir=args.work_dir)).resolve()  # runs start elsewhere
    found = installed_vllm()
    on = f"vLLM {found[1]}" if found else "vLLM (not installed)"
    say(f"fault campaign: seed {args.seed}, {len(selected)} trial(s), {args.vllm_trials} planned on {on}; in {base}")
    targets: dict[str, Target] = {}
    cleans: dict[str, Clean] = {}
    records: list[TrialRecord] = []
    try:
        for p in selected:
            if p.target not in targets:
                targets[p.target] = target = make_target(p.target, base / "targets")
                cleans[p.target] = clean = measure(target, base / "clean" / p.target, timeout=1800)
                say(
                    f"clean run of {p.target}: {clean.run_s:.2f} s, {clean.mutants} mutants, exit {clean.exit_code}, "
                    f"session {_span(clean.session)}, workers {_span(clean.workers)}"
                )
            clean = cleans[p.target]
            moment, gap = draw_moment(trial_rng(args.seed, p.number), p.fault, windows_of(clean))
            folder = base / f"trial-{p.number:03d}"
            folder.mkdir()
            timeout = max(120.0, 8 * clean.run_s)
            record = run_trial(p.number, targets[p.target], clean, p.fault, moment, gap, folder, timeout)
            records.append(record)
            say(row(record))
            write_log(args.log, command, args, cleans, records)
            if record.ok and not args.keep:
                shutil.rmtree(folder, ignore_errors=True)
            if again := remeasured(clean, record):
                cleans[p.target] = again
                say(
                    f"clean run of {p.target} measured again (trial {p.number} ran to its end unfaulted): "
                    f"{again.run_s:.2f} s, session {_span(again.session)}, workers {_span(again.workers)}"
                )
    except (LookupError, RuntimeError) as err:
        print(f"fault-campaign: error: {err}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("fault-campaign: interrupted", file=sys.stderr)
        return 130
    finally:
        if records:
            write_log(args.log, command, args, cleans, records)
        if not args.keep and all(r.ok for r in records):
            shutil.rmtree(base, ignore_errors=True)
        else:
            say(f"kept {base}" + ("" if args.keep else " (the folders of the wrong trials)"))
    for line in closing(records, command, args.seed)[:-1]:
        say(line)
    say(f"log: {args.log}")
    say(closing(records, command, args.seed)[-1])
    return 0 if all(r.ok for r in records) else 1


def _span(span: tuple[float, float] | None) -> str:
    return f"{span[0]:.2f}-{span[1]:.2f} s" if span else "not seen"
