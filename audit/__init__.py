"""The audit: every *_once call whose arguments can keep a live object in the cache (a linter).

Standard library only (but `--fix`/`--diff`: libcst), so it runs wherever vLLM's own checks run; what is live is
`rule.liveness`'s policy (shared with site discovery).
"""

# `--format`'s choices, and how `--help` describes each: the command line reads them here, without importing the
# writers (`formats.WRITERS`, imported when an audit runs).
FORMATS = {
    "text": "text (path:line:col: CODE message)",
    "json": "json",
    "github": "github (workflow annotations)",
    "sarif": "sarif (2.1.0)",
}
