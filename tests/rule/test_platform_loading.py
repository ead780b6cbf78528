"""Loading a `--platform module:Class`: a plugin that is not there (6) told from one that is there and fails to
import (7), in process."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from warnonce_guard.common.errors import PlatformImportFailed, PlatformNotFound
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
