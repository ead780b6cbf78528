"""mutmut's exit codes and what they mean, copied from `mutmut.stats.status_by_exit_code` (3.8.1).

A test pins `EXIT_CODE_STATUS` and `DEFAULT_STATUS` to mutmut's own table, so a new mutmut that adds or
changes a code fails loudly instead of being misread. `mutations.judge` decides what each means for
a verdict (with the guards' records); this module only names them.
"""

from __future__ import annotations

from enum import StrEnum

from warnonce_guard.common.errors import ExitCode


class EngineStatus(StrEnum):
    """mutmut's status names, exactly as it spells them."""

    KILLED = "killed"
    SURVIVED = "survived"
    NO_TESTS = "no tests"
    INTERRUPTED = "check was interrupted by user"
    NOT_CHECKED = "not checked"
    SKIPPED = "skipped"
    SUSPICIOUS = "suspicious"
    TIMEOUT = "timeout"
    TYPE_CHECK = "caught by type check"
    SEGFAULT = "segfault"


PYTEST_NO_TESTS = 5  # pytest's exit status when it collected (or kept) no test

# The session's exit codes the parent reads (never the tool's own: mutmut's 0 and 1 mean it finished, and a
# GuardError raised there exits with its row of ExitCode): the work directory refused a write, or the engine failed.
WRITE_REFUSED = 12
ENGINE_FAILED = int(ExitCode.ENVIRONMENT)
NOTHING_COLLECTED = int(ExitCode.NOTHING_TO_CHECK)  # a suite that collected no test
SUITE_BROKEN = 6  # a suite whose collection failed on the unmutated code (pytest's exit status 2, 3 or 4)

EXIT_CODE_STATUS: dict[int | None, EngineStatus] = {
    1: EngineStatus.KILLED,
    3: EngineStatus.KILLED,  # mutmut: "internal error in pytest means a kill"
    0: EngineStatus.SURVIVED,
    PYTEST_NO_TESTS: EngineStatus.NO_TESTS,
    2: EngineStatus.INTERRUPTED,
    None: EngineStatus.NOT_CHECKED,
    33: EngineStatus.NO_TESTS,
    34: EngineStatus.SKIPPED,
    35: EngineStatus.SUSPICIOUS,
    36: EngineStatus.TIMEOUT,
    37: EngineStatus.TYPE_CHECK,
    -24: EngineStatus.TIMEOUT,  # SIGXCPU
    24: EngineStatus.TIMEOUT,
    152: EngineStatus.TIMEOUT,
    255: EngineStatus.TIMEOUT,
    -11: EngineStatus.SEGFAULT,
    -9: EngineStatus.SEGFAULT,
}
DEFAULT_STATUS = EngineStatus.SUSPICIOUS  # any other code


def engine_status(code: int | None) -> EngineStatus:
    return EXIT_CODE_STATUS.get(code, DEFAULT_STATUS)
