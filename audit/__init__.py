"""The audit: every *_once call whose arguments can keep a live object in the cache (a linter).

vLLM's `logger.debug_once/info_once/warning_once/error_once` are `functools.lru_cache`d on their
arguments, so anything passed to them (other than an immutable primitive) is kept for the life of the
process. The audit parses every Python file of the target with `ast` (after a cheap `"_once"` text test)
and reports each argument that is not provably a str/int/float/bool/None/bytes or a tuple of those; what
is live, and of which kind, is `rule.liveness`'s policy (shared with site discovery). Standard library
only (but `--fix`/`--diff`: libcst): the audit runs wherever vLLM's own checks run. One module per job,
bottom to top:

    rules.py      the rule table: code, kind, name, summary, severity, message, fix, example and its fix per rule
    fixes.py      where formatting an argument first renders the message as before: the fix a finding records
    findings.py   the records: a finding (and its baseline key), the findings of a run
    calls.py      what a *_once call is (aliases included), its arguments, the finding each live one makes
    pragmas.py    `# warnonce: ok <reason>` on a call
    scan.py       one module's source: its findings, following the names bound to a live exception
    paths.py      which files a run reads, and the path each is shown (and keyed) under
    baseline.py   the accepted findings' file, and findings compared with it
    selection.py  which rules a run reports and fails on
    docs.py       docs/rules.md and each SARIF rule's help, from the rule table
    formats.py    the writers (text, JSON, GitHub, SARIF), one for each name in FORMATS below
    codemod.py    --fix/--diff: the recorded fixes written into the source (libcst, the mutation extra)
    run.py        the one entry point: a Request in, an Output (text, exit code) out
"""

# `--format`'s choices, and how `--help` describes each: the command line reads them here, without importing the
# writers (`formats.WRITERS`, imported when an audit runs).
FORMATS = {
    "text": "text (path:line:col: CODE message)",
    "json": "json",
    "github": "github (workflow annotations)",
    "sarif": "sarif (2.1.0)",
}
