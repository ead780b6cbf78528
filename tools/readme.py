"""Generated text: README's operator and detector tables and docs/reference.md's exit-code, liveness and strict
tables, from their registries; and the documents generated whole (`docs/rules.md`, from the audit's rule table).

    python -m tools.readme           rewrite the blocks in README.md and docs/reference.md, and the documents
    python -m tools.readme --check   exit 1 (and say which) when a block or a document is out of date

A block sits between `<!-- NAME:start ... -->` and `<!-- NAME:end -->`; everything else is left as written.
A document is generated whole.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

from warnonce_guard.audit.docs import rules_document
from warnonce_guard.audit.rules import DOCS
from warnonce_guard.common.errors import exit_code_rows
from warnonce_guard.guards.detectors import DETECTORS, example_leak
from warnonce_guard.mutations.operators import describe_operators
from warnonce_guard.rule.liveness import EXAMPLES, LivenessExample
from warnonce_guard.strict.contract import KINDS

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
REFERENCE = ROOT / "docs" / "reference.md"


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
    def argument(e: LivenessExample) -> str:
        after = " ".join(line.strip() for line in e.bound.splitlines())
        return f"`{e.argument}` after `{after}`" if after else f"`{e.argument}`"

    rows = [f"| {argument(e)} | {e.kind or 'safe: no finding'} |" for e in EXAMPLES]
    return "\n".join(["| argument | kind |", "|---|---|", *rows])


def exit_codes_block() -> str:
    rows = [f"| {code} | {meaning} |" for code, meaning in exit_code_rows()]
    return "\n".join(["| exit | meaning |", "|---|---|", *rows])


def strict_block() -> str:
    def code(example: str) -> str:
        return "`" + example.replace("|", "\\|") + "`"  # a pipe inside a table cell is escaped, code or not

    rows = [
        f"| {k.name} | {'yes' if k.passes else 'no'} | {k.why} | {', '.join(code(e) for e in k.examples)} |"
        for k in KINDS
    ]
    return "\n".join(["| argument | passes | why | examples |", "|---|---|---|---|", *rows])


BLOCKS: dict[str, Callable[[], str]] = {"operators": operators_block, "detectors": detectors_block}
# README's blocks above; the reference page's here.
REFERENCE_BLOCKS: dict[str, Callable[[], str]] = {
    "exit-codes": exit_codes_block,
    "liveness": liveness_block,
    "strict": strict_block,
}


# Generated whole: path relative to the checkout -> its text.
DOCUMENTS: dict[str, Callable[[], str]] = {DOCS: rules_document}


def stale_documents(root: Path = ROOT) -> list[str]:
    """The documents whose file differs from what their registry says (or is missing)."""
    return [name for name, make in DOCUMENTS.items() if not _same(root / name, make())]


def _same(path: Path, text: str) -> bool:
    return path.is_file() and path.read_text(encoding="utf-8") == text


def render(text: str, blocks: dict[str, Callable[[], str]] = BLOCKS) -> str:
    """`text` with every block regenerated."""
    for name, make in blocks.items():
        pattern = re.compile(rf"(<!-- {name}:start[^\n]*-->\n)(.*?)(<!-- {name}:end -->)", re.DOTALL)
        if not pattern.search(text):
            raise ValueError(f"no {name} block (<!-- {name}:start ... --> ... <!-- {name}:end -->)")
        text = pattern.sub(lambda m, make=make: m.group(1) + make() + "\n" + m.group(3), text)
    return text


def stale_blocks(text: str, blocks: dict[str, Callable[[], str]] = BLOCKS) -> list[str]:
    """The names of the blocks that differ from what the registries say."""
    fresh = render(text, blocks)
    return [name for name in blocks if _block(text, name) != _block(fresh, name)]


def _block(text: str, name: str) -> str:
    return text.split(f"<!-- {name}:start")[1].split(f"<!-- {name}:end -->")[0]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    documents = ((README, BLOCKS), (REFERENCE, REFERENCE_BLOCKS))  # read at call time: tests point them elsewhere
    fix = "python -m tools.readme"
    if "--check" in args:
        stale = 0
        for path, blocks in documents:
            for name in stale_blocks(path.read_text(encoding="utf-8"), blocks):
                print(f"{path.name}: the {name} block is out of date; run `{fix}`", file=sys.stderr)
                stale += 1
        for name in stale_documents():
            print(f"{name} is out of date; run `{fix}`", file=sys.stderr)
            stale += 1
        return 1 if stale else 0
    for path, blocks in documents:
        path.write_text(render(path.read_text(encoding="utf-8"), blocks), encoding="utf-8")
    for name, make in DOCUMENTS.items():
        (ROOT / name).parent.mkdir(parents=True, exist_ok=True)
        (ROOT / name).write_text(make(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
