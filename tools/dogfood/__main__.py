"""`python -m tools.dogfood [--work-dir DIR] [--max-children N] [--fresh]`: stage, mutate, score (`tools.dogfood`).

Exit 0 when every module is at `FLOOR` or above and every survivor is listed as equivalent, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from tools.dogfood.run import EQUIVALENTS_FILE, ROOT, score, stage, verdict
from tools.dogfood.table import render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.dogfood", allow_abbrev=False)
    parser.add_argument("--work-dir", type=Path, default=ROOT / ".nox" / "dogfood-work", help="(default: %(default)s)")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2, help="mutmut's workers")
    parser.add_argument("--fresh", action="store_true", help="forget mutmut's results of earlier runs first")
    args = parser.parse_args(argv)
    started = time.monotonic()
    stage(args.work_dir, fresh=args.fresh)
    scores, unlisted, unused = score(args.work_dir, args.max_children, EQUIVALENTS_FILE, args.fresh)
    print(render(scores))
    for name, description in unlisted:
        print(f"survived, not listed as equivalent: {name}\n    {description}")
    for entry in unused:
        print(f"listed as equivalent but no such survivor: {entry}")
    print(f"dogfood: {time.monotonic() - started:.0f} s")
    failures = verdict(scores, unlisted)
    for failure in failures:
        print(f"dogfood: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
