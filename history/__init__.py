"""Release history: every vLLM release on the package index, fetched and checked, one verdict each.

    index -> fetch -> survey (discovery) -> guard_run (subprocess) -> verdict -> cache -> render

one module per stage (each says its part), strung together by `run` (its `Stages`). The work directory is
checked and claimed as a mutation run's is (`common.ownership`, `common.locks`), and errors are rows of the one
exit-code table (`common.errors`).
"""
