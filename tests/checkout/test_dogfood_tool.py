"""`nox -s dogfood` (tools/dogfood): it stages every package of the checkout, and every equivalent it lists says why."""

from __future__ import annotations

import tomllib

from tests import layout
from tools.dogfood import run


def test_it_stages_every_package_setup_cfg_maps() -> None:
    assert list(layout.PACKAGE_FOLDERS.values()) == run.PACKAGES


def test_every_listed_equivalent_names_one_mutated_module_and_a_reason() -> None:
    listed = tomllib.loads(run.EQUIVALENTS_FILE.read_text(encoding="utf-8"))["equivalent"]
    modules = {module.removeprefix(f"{run.PACKAGE}/") for module in run.MODULES}
    for entry in listed:
        assert entry["mutant"].partition(":")[0] in modules and len(entry["reason"]) > 20, entry
    assert len({entry["mutant"] for entry in listed}) == len(listed)  # each once
