"""The patch's own test against the patched logger module and each mutant of the patch, in one pytest session.

    python -m tools.vllm_tests.fix_proof [--vllm-src PATH] [--work DIR]

`warnonce-guard export-fix` patches the target's `vllm/logger.py` (`caches.cache_fix.patched`); its test
(`upstream.fix.once_test_source`) must pass on the patch and fail on each way back to a cache that keeps the arguments
(`caches.cache_fix.PATCH_MUTANTS`: the cache keyed on the raw arguments again, the eager render dropped, the render
moved into the cache). Each variant of the module is loaded under a name of its own (`_fixproof_<variant>`, by a
conftest.py beside the tests), and the test, written as a file of its own, imports `init_logger` from it: vLLM is
imported once for all of them, and nothing of the installed vLLM is written. One row per variant; exit 1 when the
patch fails its test or a mutant passes it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from warnonce_guard.caches.cache_fix import PATCH_MUTANTS, patched
from warnonce_guard.caches.renders_first import once_methods
from warnonce_guard.rule.target import resolve_target
from warnonce_guard.upstream.fix import once_test_source

from tools.vllm_tests import compare

UNMUTATED = "the patch"
_CONFTEST = '''\
"""Load each variant of the logger module under a name of its own, before the tests import it."""

import importlib.util
import sys
from pathlib import Path

for _path in sorted(Path(__file__).parent.glob("_fixproof_*.py")):
    _spec = importlib.util.spec_from_file_location(_path.stem, _path)
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_path.stem] = _module
    _spec.loader.exec_module(_module)
'''


@dataclass(frozen=True)
class Row:
    variant: str  # UNMUTATED, or a PatchMutant's name
    description: str
    outcome: str  # "passed" when every case passed, "failed" when one failed, compare.ABSENT when none ran
    message: str  # the first failure's first line

    @property
    def expected(self) -> str:
        return "passed" if self.variant == UNMUTATED else "failed"

    @property
    def as_expected(self) -> bool:
        return self.outcome == self.expected


def variants(logger_text: str) -> list[tuple[str, str, str]]:
    """(name, what it does, source) of the patched module and of each mutant of the patch."""
    found = [(UNMUTATED, "the fix as exported: render first, cache the text", logger_text)]
    return found + [(m.name, m.description, m.apply(logger_text)) for m in PATCH_MUTANTS]


def _module_name(variant: str) -> str:
    return "_fixproof_" + variant.replace("-", "_").replace(" ", "_")


def prove(logger_text: str, work: Path, env: dict[str, str] | None = None) -> list[Row]:
    """Run the patch's test against every variant of the patched module; one row per variant."""
    methods = once_methods(logger_text)
    made = variants(logger_text)
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fix-proof-", dir=work) as scratch:
        folder = Path(scratch)
        (folder / "conftest.py").write_text(_CONFTEST, encoding="utf-8")
        for name, _, source in made:
            module = _module_name(name)
            (folder / f"{module}.py").write_text(source, encoding="utf-8")
            test = once_test_source(methods, module, frozenset(), standalone=True)
            (folder / f"test_{module}.py").write_text(test, encoding="utf-8")
        junit = folder / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--tb=line", "-p", "no:randomly"]
        command += ["--rootdir", str(folder), f"--junitxml={junit}", str(folder)]
        subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, check=False)
        results = compare.read(junit).results if junit.is_file() else {}
    rows = []
    for name, description, _ in made:
        mine = [r for key, r in results.items() if key.split("::")[0].endswith(f"test_{_module_name(name)}")]
        failed = [r for r in mine if r.outcome in ("failed", "error")]
        outcome = compare.ABSENT if not mine else "failed" if failed else "passed"
        rows.append(Row(name, description, outcome, failed[0].message if failed else ""))
    return rows


def table(rows: list[Row]) -> list[str]:
    """The rows as the session prints them."""
    header = ("variant", "what it does", "the patch's test", "expected")
    cells = [header, *((r.variant, r.description, r.outcome, r.expected) for r in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in cells]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.vllm_tests.fix_proof", allow_abbrev=False)
    parser.add_argument("--vllm-src", help="a vLLM tree whose vllm/logger.py to patch (default: the installed vLLM's)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()), help="where the run's files go")
    args = parser.parse_args(argv)
    target = resolve_target(args.vllm_src)
    source = (target.package_dir / "logger.py").read_text(encoding="utf-8")
    rows = prove(patched(source, "vllm/logger.py"), args.work, {**os.environ, "HF_HUB_OFFLINE": "1"})
    print("\n".join(table(rows)))
    wrong = [row for row in rows if not row.as_expected]
    for row in wrong:
        said = f"fix-proof: {row.variant}: {row.outcome}, expected {row.expected} {row.message}"
        print(said.rstrip(), file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
