"""`python tests/campaign ...` (what `nox -s faults -- ...` runs): tests/ on the path, then the campaign's CLI."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: faults.py, toy.py and this package

from campaign.cli import main

sys.exit(main())
