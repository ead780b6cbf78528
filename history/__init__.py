"""Release history: every vLLM release on the package index, fetched and checked, one verdict each.

    index -> fetch -> survey (discovery) -> guards (subprocess) -> classify -> cache -> render

`index` lists releases from the index's JSON API, `fetch` downloads a release's sdist (or a wheel) into
the work directory, verifies it against the index's sha256 and extracts its `vllm/` tree, `survey`
runs discovery on that tree, `core.run_guards` runs the guards against it in a fresh interpreter,
`classify` turns both into a `ReleaseVerdict`, `cache` keeps verdicts by release and tool fingerprint,
and `render` writes the JSON and the Markdown table. `core` is the only module that touches discovery
and the guards (their command line and record format); the work directory is checked and claimed as a
mutation run's is (`common.ownership`, `common.locks`), and errors are rows of the one exit-code table
(`common.errors`).
"""
