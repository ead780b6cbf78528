"""The audit: every *_once call whose arguments can keep a live object in the cache (a linter).

vLLM's `logger.debug_once/info_once/warning_once/error_once` are `functools.lru_cache`d on their
arguments, so anything passed to them (other than an immutable primitive) is kept for the life of the
process. The audit parses every Python file of the target with `ast` (after a cheap `"_once"` text test)
and reports each argument that is not provably a str/int/float/bool/None/bytes or a tuple of those; what
is live, and of which kind, is `rule.liveness`'s policy (shared with site discovery). Standard library
only (but `--fix`/`--diff`: libcst): the audit runs wherever vLLM's own checks run. docs/ARCHITECTURE.md's
module map names each of its modules and its job.
"""

# `--format`'s choices, and how `--help` describes each: the command line reads them here, without importing the
# writers (`formats.WRITERS`, imported when an audit runs).
FORMATS = {
    "text": "text (path:line:col: CODE message)",
    "json": "json",
    "github": "github (workflow annotations)",
    "sarif": "sarif (2.1.0)",
}
