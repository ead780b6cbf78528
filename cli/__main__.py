"""The process's first module: the `warnonce-guard` script and `python -m warnonce_guard.cli`.

It answers SIGINT and SIGTERM from its first instruction to its last (docs/reference.md, Interrupted runs), so it
imports only modules built into the interpreter or loaded with it (even `typing` would take 5 ms).
"""

import _signal  # what `signal` wraps, loaded with the interpreter (`signal` itself takes 1.5 ms to import)
import atexit
import gc
import os
import sys

# the exit code is 128 + the signal's number, as shells report it (ExitCode.INTERRUPTED, ExitCode.TERMINATED)
SAID = {_signal.SIGINT: "interrupted", _signal.SIGTERM: "terminated"}
LAUNCH = "warnonce_guard.mutations.engine.launch"  # imported first by `mutate`, to start its session (`entry`)
_arrivals = -1  # the read end of the wakeup pipe: the signals in the order they came (see cli.Stops)


def stopped_before_the_command(signum: int, frame: object) -> None:
    """A signal before the command line took over (or after it ended): nothing to clean up but the session `mutate`
    started, so one line and exit now with the code of the signal that came first. A later one waits (blocked):
    reaping the session, this handler would run again inside itself and say the later one."""
    _signal.pthread_sigmask(_signal.SIG_BLOCK, set(SAID))
    try:
        arrived = os.read(_arrivals, 64)
    except OSError:
        arrived = b""
    signum = next((number for number in arrived if number in SAID), signum)
    try:
        _kill_early_session()
        os.write(2, f"warnonce-guard: {SAID[signum]}\n".encode())
    finally:  # stderr closed, or its reader gone: the exit code still says it
        os._exit(128 + signum)


def _kill_early_session() -> None:
    """Kill and reap the session `mutate` started before its command began (a signal ends the process now). With
    os's calls, not `launch.stop_early`: Popen's wait takes a lock the code this handler interrupted may hold."""
    session = getattr(sys.modules.get(LAUNCH), "early", None)
    if session is not None:
        try:
            os.killpg(session.pid, _signal.SIGKILL)
            os.waitpid(session.pid, 0)
        except OSError:  # gone already, or reaped
            pass


def _stop_early_session() -> None:
    """Stop the session `mutate` started before its command began, if the command never took it."""
    launch = sys.modules.get(LAUNCH)
    if launch is not None:
        launch.stop_early()


def entry() -> None:
    """Run the command line and end the process with its exit code (never returns)."""
    global _arrivals
    _arrivals, write = os.pipe()
    for end in (_arrivals, write):
        os.set_blocking(end, False)
    _signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    for sig in SAID:
        _signal.signal(sig, stopped_before_the_command)
    try:
        if sys.argv[1:2] == ["mutate"]:  # its session starts first (the run's critical path)
            gc.disable()  # its imports, with Python's cycle collector off (`processes.collect_from_here`)
            from warnonce_guard.mutations.engine import launch

            launch.start_early(sys.argv[2:])
        from warnonce_guard.cli.main import main

        code = main(exiting=True)
    except SystemExit as stop:  # argparse's usage errors and --help
        if not isinstance(stop.code, int | None):
            raise
        code = stop.code or 0
    finally:
        _stop_early_session()
    atexit._run_exitfuncs()  # what Python's own exit would run first (multiprocessing's, logging's)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a full or closed stream: the exit code still says what happened
            pass
    os._exit(code)


if __name__ == "__main__":
    entry()
