"""Release history: every vLLM release on the package index, fetched and checked, one verdict each.

    index -> fetch -> survey (discovery) -> guard_run (subprocess) -> verdict -> cache -> render

`index` lists releases from the index's JSON API, `fetch` downloads a release's sdist (or a wheel) into
the work directory, verifies it against the index's sha256 and extracts its `vllm/` tree, `survey`
runs discovery on that tree (the rule's `Site` records), `guard_run` runs the guards against it in a fresh
interpreter and reads back their records (`RecordKind` per site), `verdict` turns both into a `ReleaseVerdict`,
`cache` keeps verdicts by release and tool fingerprint, and `render` writes the JSON and the Markdown table;
`run` strings them together (its `Stages`). The work directory is checked and claimed as a mutation run's is
(`common.ownership`, `common.locks`), and errors are rows of the one exit-code table (`common.errors`).
"""
