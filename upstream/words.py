"""What the exported module says, named once: its header, its exception, the leaks its failures name.

The standard library only: `--check` and `tools.vllm_tests.exported` read exported files with it where the
rest of this package (libcst, the guards) is not installed.
"""

from __future__ import annotations

MARKER = "# Exported by warnonce-guard export-test"  # how a file (or a patch) of ours is recognised
HEADER = f"{MARKER}: re-export it rather than edit CASES.\n"
# The exception the exported test raises for a blocked kernel module, and its message: the test's text is rendered
# from these (`upstream.render`), and each case's warning is worked out with the same exception (`upstream.cases`).
BLOCKED_CLASS = "BlockedKernelImport"
BLOCKED_MESSAGE = "No module named {kernel!r} (blocked)"
LOGGER = "logger"  # the module-level name the exported test finds a site's logger under
# What a failing case says leaked, after its site (file:line): the guards' detectors' words (`guards.detectors`).
LEAKS = ("exception retained", "object pinned", "warning repeated")
