"""README's generated blocks: the operator, detector, liveness and exit-code tables, from their registries.

    python -m tools.readme           rewrite the blocks in README.md
    python -m tools.readme --check   exit 1 (and say which) when a block is out of date

A block sits between `<!-- NAME:start ... -->` and `<!-- NAME:end -->`; everything else is left as written.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from warnonce_guard.common.errors import ExitCode
from warnonce_guard.guards.detectors import DETECTORS, example_leak
from warnonce_guard.mutations.operators import describe_operators
from warnonce_guard.rule.liveness import EXAMPLES
from warnonce_guard.strict.contract import KINDS

README = Path(__file__).resolve().parent.parent / "README.md"


def operators_block() -> str:
    rows = [f"| `{name}` | {text} | `{example}` |" for name, text, example in describe_operators()]
    return "\n".join(["| operator | what it puts back | example |", "|---|---|---|", *rows])


def detectors_block() -> str:
    rows = []
    for d in DETECTORS:
        found = d(example_leak(d))
        assert found is not None, f"{d.name}: its example leak must make it fire"
        rows.append(f"| {d.name} | {d.description} | {', '.join(f'`{f}`' for f in d.reads)} | `{found.evidence}` |")
    head = "| detector | fires when | reads | its evidence, on its example leak |"
    return "\n".join([head, "|---|---|---|---|", *rows])


def liveness_block() -> str:
    rows = [f"| `{e.argument}` | {e.kind or 'safe: no finding'} |" for e in EXAMPLES]
    return "\n".join(["| argument | kind |", "|---|---|", *rows])


def exit_codes_block() -> str:
    rows = [f"| {code.value} | `{code.name}` | {code.meaning} |" for code in ExitCode]
    return "\n".join(["| exit | name | meaning |", "|---|---|---|", *rows])


def strict_block() -> str:
    def code(example: str) -> str:
        return "`" + example.replace("|", "\\|") + "`"  # a pipe inside a table cell is escaped, code or not

    rows = [
        f"| {k.name} | {'yes' if k.passes else 'no'} | {k.why} | {', '.join(code(e) for e in k.examples)} |"
        for k in KINDS
    ]
    return "\n".join(["| argument | passes | why | examples |", "|---|---|---|---|", *rows])


BLOCKS: dict[str, Callable[[], str]] = {
    "operators": operators_block,
    "detectors": detectors_block,
    "liveness": liveness_block,
    "exit-codes": exit_codes_block,
    "strict": strict_block,
}


def render(text: str) -> str:
    """`text` with every block regenerated."""
    for name, make in BLOCKS.items():
        pattern = re.compile(rf"(<!-- {name}:start[^\n]*-->\n)(.*?)(<!-- {name}:end -->)", re.DOTALL)
        if not pattern.search(text):
            raise ValueError(f"README has no {name} block (<!-- {name}:start ... --> ... <!-- {name}:end -->)")
        text = pattern.sub(lambda m, make=make: m.group(1) + make() + "\n" + m.group(3), text)
    return text


def stale_blocks(text: str) -> list[str]:
    """The names of the blocks that differ from what the registries say."""
    fresh = render(text)
    return [name for name in BLOCKS if _block(text, name) != _block(fresh, name)]


def _block(text: str, name: str) -> str:
    return text.split(f"<!-- {name}:start")[1].split(f"<!-- {name}:end -->")[0]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = README.read_text(encoding="utf-8")
    if "--check" in args:
        stale = stale_blocks(text)
        for name in stale:
            fix = "python -m tools.readme"
            print(f"README.md: the {name} block is out of date; run `{fix}`", file=sys.stderr)
        return 1 if stale else 0
    README.write_text(render(text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
