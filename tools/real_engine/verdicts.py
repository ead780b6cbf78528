"""What the guards say of the installed vLLM's CPU platform, site by site, for the real engine to be compared with.

    python -m tools.real_engine.verdicts OUT.json

Each cached site `CpuPlatform.import_kernels` runs is driven as the guards drive it (`guards.drive.drive`: twice
from an `LLMStandIn`, the kernel module blocked) and judged by the guards' detectors; OUT gets the detectors that
fired, by kernel module. `warnonce-guard guards --platform vllm.platforms.cpu:CpuPlatform` runs the same drive
under pytest and gives the run's verdict.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

PLATFORM = "vllm.platforms.cpu:CpuPlatform"


def verdicts() -> dict[str, list[str]]:
    """kernel module -> the detectors that fired on its site (empty: the guard passes)."""
    from warnonce_guard.guards.detectors import detections
    from warnonce_guard.guards.drive import drive
    from warnonce_guard.rule.platforms import platform_sites, resolve_platform

    return {
        site.kernel_module: [found.detector for found in detections(drive(site))]
        for site in platform_sites(resolve_platform(PLATFORM))
    }


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tools.real_engine.verdicts OUT.json")
    Path(sys.argv[1]).write_text(json.dumps(verdicts(), indent=2), encoding="utf-8")
