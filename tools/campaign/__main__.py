"""`python -m tools.campaign ...` from the checkout (what `nox -s faults -- ...` runs): the campaign's CLI."""

import sys

from tools.campaign.cli import main

sys.exit(main())
