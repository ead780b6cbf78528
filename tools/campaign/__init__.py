"""The fault campaign: `warnonce-guard mutate` faulted at random moments, rerun, and compared with a clean run.

    python -m tools.campaign --trials N --seed S [--vllm-trials K]   (`nox -s faults -- ...` runs it)

Each trial picks a target (a toy tree of one of several shapes, or the installed vLLM), a fault (a signal to
the command, to its process group, SIGKILL to the mutmut session or to one of its workers, two signals in a
row) and a moment drawn uniformly over the window, measured on a clean run of that target, in which the
aimed process lives. It injects the fault, reruns the same command until it completes, and checks what
the contract promises: the faulted run's exit code and single stderr line, the clean run's verdicts in the
end, no process of the run left, and every file of the target and of a user's folder beside the work
directory unchanged. It prints one row per trial and ends with `N trials: N ok, N wrong`.

    plan.py      the faults, the draw of targets and moments, the exit codes each fault allows
    judge.py     one trial's observations against the contract: the reasons it is wrong (none: ok)
    targets.py   the toy shapes and the installed vLLM, the command line, the clean run measured
    trial.py     one trial run: processes watched, the fault injected, reruns, files hashed
    cli.py       the command line: rows, the closing note, the JSON log
    runs.py      the toy trees' shapes, a run's folders and process, its verdicts, hashes of files (tests/faults.py
                 imports them too)

A checkout tool, not part of the package; it imports nothing from tests/: the toy vLLM is tools/toy_vllm.py's.
"""
