"""The one workspace builder of the mutation-run tests.

`ws` is an empty workspace made as a run makes it (`Workspace.create`: its folder, marked as ours). A module
that needs what a stage left in it overrides `ws` with a fixture that takes this one and adds that state
(records_support.generated: a finished generation).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from warnonce_guard.mutations.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path / "ws")
    workspace.create()
    return workspace
