"""Upstream: the guards' cases as one pytest module a vLLM maintainer (or a plugin's) can merge (`export-test`).

    discover (or a platform's sites) -> cases (what a guard does to each site, in source form) -> render
    (the module's text, already formatted) -> write (--out, atomically), check (--check) or patch (--patch)

The module imports only vLLM, pytest and the standard library: it is the guards' drive, written small.
"""
