"""Loading a `--platform module:Class`: a plugin that is not there (6) told from one that is there and fails to
import (7), in process."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest
from warnonce_guard.common.errors import PlatformImportFailed, PlatformNotFound
from warnonce_guard.rule import platforms
from warnonce_guard.rule.platforms import load_class


@pytest.mark.parametrize(
    ("source", "error", "said"),
    [
        ("import torch_npu_not_here\nclass P: pass\n", PlatformImportFailed, "No module named 'torch_npu_not_here'"),
        ("raise ImportError('libnpu.so: cannot open shared object file')\n", PlatformImportFailed, "libnpu.so"),
        ("class P(:\n", PlatformImportFailed, "SyntaxError"),
    ],
)
def test_a_plugin_that_is_there_but_fails_to_import_is_exit_7_not_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, error: type[Exception], said: str
) -> None:
    (tmp_path / "broken_plugin_x").mkdir()
    (tmp_path / "broken_plugin_x" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "broken_plugin_x" / "platform.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "broken_plugin_x", raising=False)
    monkeypatch.delitem(sys.modules, "broken_plugin_x.platform", raising=False)
    with pytest.raises(error, match=r"broken_plugin_x\.platform fails to import") as caught:
        load_class("broken_plugin_x.platform:P")
    assert said in str(caught.value)
    # Not vacuous: a plugin that is not there at all (nor a package on its way) is "not found" (6).
    with pytest.raises(PlatformNotFound, match="install the plugin"):
        load_class("broken_plugin_x.nothing_here:P")
    with pytest.raises(PlatformNotFound, match="install the plugin"):
        load_class("no_such_package_y.platform:P")


@pytest.mark.parametrize(
    ("register", "platform", "usable"),
    [
        ("def register():\n    return 'acme_plugin_z.platform.Cls'\n", "acme_plugin_z.platform.Cls", "True"),
        ("def register():\n    raise RuntimeError('no device at 0x7f00')\n", None, "False"),
    ],
    ids=["resolves", "raises"],
)
def test_a_registered_plugin_is_keyed_by_its_distribution_and_class_never_its_error_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, register: str, platform: str | None, usable: str
) -> None:
    """What a run's workspace is keyed by (`RegisteredPlatform.key`): which plugin, of which distribution, resolving to
    which class; an error's text may hold an address, which would make every run a fresh one."""
    (tmp_path / "acme_plugin_z").mkdir()
    (tmp_path / "acme_plugin_z" / "__init__.py").write_text(register, encoding="utf-8")
    dist = tmp_path / "acme_plugin_z-1.2.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-plugin-z\nVersion: 1.2\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[vllm.platform_plugins]\nacme = acme_plugin_z:register\n", "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "acme_plugin_z", raising=False)
    (entry,) = importlib.metadata.Distribution.at(dist).entry_points

    found = platforms._registered(entry)

    assert found.platform == platform and (found.error is None) == (usable == "True")
    assert found.key() == ["acme", "acme_plugin_z:register", platform, "acme-plugin-z==1.2", usable]
