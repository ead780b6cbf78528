"""Every command README shows, and what runs it as written (tests/checkout/test_readme.py holds README to this list;
tests/checkout/test_readme_commands.py runs the `SANDBOXED` ones). A helper module: it holds no tests."""

from __future__ import annotations

import re

from tests import layout

ROOT = layout.ROOT
README = (ROOT / "README.md").read_text(encoding="utf-8")
# Every command README shows (an indented line), and what runs it as written: the file, and the text in it that runs
# the command. A command README shows that nothing runs fails this test.
HISTORY_TEST = ROOT / "tests" / "history" / "test_history_releases.py"
RUN_BY = {
    "python3 -m venv .venv && .venv/bin/pip install nox==2026.10.20 && .venv/bin/nox -s mutation": (
        ROOT / ".ci" / "run",
        ".venv/bin/nox -s mutation\n",
    ),
    "python3 -m venv .venv && .venv/bin/pip install nox==2026.10.20 && .venv/bin/nox -s tests": (
        ROOT / ".ci" / "run",
        ".venv/bin/nox -s tests\n",
    ),
    ".venv/bin/nox -s tests": (ROOT / ".ci" / "run", ".venv/bin/nox -s tests\n"),
    ".venv/bin/nox -s mutation": (ROOT / ".ci" / "run", ".venv/bin/nox -s mutation\n"),
    ".venv/bin/nox -s replay": (ROOT / ".ci" / "run", ".venv/bin/nox -s replay\n"),
    "warnonce-guard history --only 0.27.0,0.29.0,0.30.0": (HISTORY_TEST, 'RELEASES = "0.27.0,0.29.0,0.30.0"'),
}
# The rest are run as README shows them, in README's order, in a sandbox (tests/checkout/test_readme_commands.py), the
# export first (the mutation run scores what it writes): each with the exit code it must end with, a line it prints
# and a file it leaves (relative to the sandbox: ~ is home/, the other commands run in work/).
SANDBOXED: dict[str, tuple[int, str, str]] = {
    "warnonce-guard export-test --out tests/platforms/test_kernel_import_warnings.py": (
        0, "", "home/vllm/tests/platforms/test_kernel_import_warnings.py"
    ),
    "cd ~/vllm && warnonce-guard mutate --tests tests/platforms tests/test_logger.py --tests-root .": (
        0, "Mutation score: 100.00% (18 killed of 18 reached)", "home/vllm/mutation-report/summary.md"
    ),
    "cd ~/vllm && warnonce-guard sites --write .buildkite/warnonce_guard_sites.json": (
        0, ".buildkite/warnonce_guard_sites.json: 6 site(s) recorded", "home/vllm/.buildkite/warnonce_guard_sites.json"
    ),
    "warnonce-guard audit vllm_ascend/": (1, "WOG001 logger.warning_once(...) passes `e`", ""),
    "warnonce-guard audit vllm_ascend/ --diff": (1, "+        logger.warning_once(", ""),
    "warnonce-guard audit --write-baseline accepted.json && warnonce-guard audit --baseline accepted.json": (
        0, "", "work/accepted.json"
    ),
    "pytest --warnonce-strict -n 2": (0, "1 passed", ""),
    "warnonce-guard guards --platform my_plugin.platform:MyPlatform": (0, "1 passed", ""),
    "warnonce-guard export-test --platform my_plugin.platform:MyPlatform --out tests/test_kernel_import_warnings.py": (
        0, "", "work/tests/test_kernel_import_warnings.py"
    ),
    "warnonce-guard export-fix --patch --out once-cache.patch": (
        0, "once-cache.patch: a patch of vllm/logger.py and tests/test_logger_once_cache.py", "work/once-cache.patch"
    ),
}  # fmt: skip


def shown_commands(text: str) -> list[str]:
    """The commands README shows: its lines indented by four spaces, before the project tree, that start with a
    program (not a table, the upstream table or an install line, which tests/audit/test_install.py runs), without
    their trailing comment."""
    body = text.split("## The project")[0]
    lines = [re.sub(r"\s+#\s.*$", "", line[4:]) for line in body.splitlines() if line.startswith("    ") and line[4:]]
    programs = ("python3 -m venv", ".venv/bin/", "warnonce-guard", "cd ", "pytest", "nox")
    return [line for line in lines if line.startswith(programs)]
