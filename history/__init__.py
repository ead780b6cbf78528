"""Release history: every vLLM release on the package index, fetched and checked, one verdict each.

    index -> fetch -> survey (discovery) -> guard_run (subprocess) -> verdict -> cache -> render

one module per stage (each says its part), strung together by `run` (its `Stages`). The work directory is
checked and claimed as a mutation run's is (`common.ownership`, `common.locks`), and errors are rows of the one
exit-code table (`common.errors`).
"""

from pathlib import Path

# The sweep's defaults, here for `history --help` (the command line builds it without importing the stages):
DEFAULT_INDEX = "https://pypi.org/simple/"  # where the releases are listed (PEP 691), as `history --index-url` says
DEFAULT_WORK_DIR = Path(".warnonce-history")  # where the sweep keeps downloads, trees, logs and verdicts
