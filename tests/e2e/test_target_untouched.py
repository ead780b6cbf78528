"""A mutation run reads the target where it lies and never writes it: over an installed vLLM (bytecode beside its
sources, as pip leaves it) and over a source tree (none), every file of the target keeps its bytes and modification
time, no `__pycache__` appears, no process of the run opens a file of the target for writing (an audit hook in
every one of them says so), and each mutant's guards run the workspace's copy of the site module, never the target's.
"""

from __future__ import annotations

import compileall
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.toy import INTERFACE, fitting_operators, make_tree

pytestmark = pytest.mark.slow

SITE_FILE = "vllm/platforms/interface.py"
SITE_MODULE = "vllm.platforms.interface"

# Installed as `sitecustomize` in every Python process of the run (through PYTHONPATH): records each open for
# writing and each change of a file (anywhere), each open for reading under AUDIT_WATCH, and, whenever a process
# is told the mutant it runs, which file the site module came from. One JSON line per event, appended (os.write
# is not audited: the hook never sees itself).
RECORDER = """
import json, os, sys

_LOG = os.open(os.environ["AUDIT_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
_GUARDS = "WARNONCE_GUARD_PARENT_PID" in os.environ  # a process the run started (the session), or forked from it
_WATCH = os.environ["AUDIT_WATCH"]
_WRITES = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_CHANGES = {"os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.truncate", "os.utime", "os.chmod", "os.chown",
            "os.link", "os.symlink", "shutil.rmtree", "shutil.copyfile", "shutil.move"}


def _record(**entry):
    entry.update(pid=os.getpid(), guards=_GUARDS)
    os.write(_LOG, (json.dumps(entry) + "\\n").encode())


def _path(value):
    return os.fsdecode(value) if isinstance(value, (str, bytes)) else None


def _hook(event, args):
    if event == "open" and (path := _path(args[0])) is not None:
        mode, flags = args[1], args[2]
        write = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool((flags or 0) & _WRITES)
        if write or path.startswith(_WATCH):
            _record(event=event, path=os.path.abspath(path), write=write)
    elif event in _CHANGES and (path := _path(args[0])) is not None:
        _record(event=event, path=os.path.abspath(path), write=True)
    elif event == "os.putenv" and args[0] == b"MUTANT_UNDER_TEST" and b"__mutmut_" in args[1]:
        module = sys.modules.get(os.environ["AUDIT_SITE_MODULE"])
        _record(event="mutant", mutant=os.fsdecode(args[1]), site_module=getattr(module, "__file__", None))


sys.addaudithook(_hook)
"""


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    """Every entry under `root`: a file's content hash and modification time, a directory's mtime."""
    out = {}
    for path in [root, *sorted(root.rglob("*"))]:
        st = path.lstat()
        what = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
        out[path.relative_to(root).as_posix()] = (what, st.st_mtime_ns)
    return out


def recorded_run(tmp_path: Path, root: Path, installed: bool, viewer: Path) -> tuple[list[dict[str, object]], Path]:
    """`warnonce-guard mutate` over the tree at `root`, installed (found on the path) or given by --vllm-src, every
    process of it audited; what was recorded, and the workspace."""
    recorder = tmp_path / "recorder"
    recorder.mkdir()
    (recorder / "sitecustomize.py").write_text(RECORDER)
    log, work, out = tmp_path / "audit.jsonl", tmp_path / "work", tmp_path / "report"
    path = [str(recorder), *([str(root)] if installed else []), os.environ.get("PYTHONPATH", "")]
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}  # a user's
    env.update(
        PYTHONPATH=os.pathsep.join(path),
        AUDIT_LOG=str(log),
        AUDIT_WATCH=str(root.resolve()),
        AUDIT_SITE_MODULE=SITE_MODULE,
    )
    where = [] if installed else ["--vllm-src", str(root)]
    args = [sys.executable, "-m", "warnonce_guard.cli", "mutate", *where, "--out", str(out), "--work-dir", str(work)]
    done = subprocess.run(
        [*args, "--viewer-js", str(viewer)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads((out / "mutation.json").read_text())
    assert f"installed at {root / 'vllm'}" in report["config"]["target"] or not installed  # the toy, not vLLM
    statuses = [m["status"] for m in report["files"][SITE_FILE]["mutants"]]
    assert statuses == ["Killed"] * len(fitting_operators(INTERFACE))
    (ws,) = [p for p in work.iterdir() if p.is_dir()]
    return [json.loads(line) for line in log.read_text().splitlines()], ws


@pytest.mark.parametrize("installed", [True, False], ids=["installed", "source-tree"])
def test_a_run_reads_the_target_where_it_lies_and_never_writes_it(
    installed: bool, tmp_path: Path, small_viewer: Path
) -> None:
    root = make_tree(tmp_path / ("site-packages" if installed else "checkout"))
    if installed:  # as pip leaves it: compiled beside the sources
        assert compileall.compile_dir(root / "vllm", quiet=1)
    before = snapshot(root)

    events, ws = recorded_run(tmp_path, root, installed, small_viewer)

    assert snapshot(root) == before  # bytes and modification times; no __pycache__ came or went
    target = str(root.resolve()) + os.sep
    writes = [e for e in events if e.get("write")]
    assert [e for e in writes if str(e["path"]).startswith(target)] == []
    assert any(str(e["path"]).startswith(str(ws.resolve())) for e in writes if e["guards"])  # the hook saw writes
    # the guards' processes import the target from where it lies, but never its site module
    reads = [e for e in events if e["guards"] and e["event"] == "open" and not e["write"]]
    read = {Path(str(e["path"])).relative_to(root.resolve()).as_posix() for e in reads}
    assert any(name.startswith("vllm/logger") or name.startswith("vllm/__pycache__/logger") for name in read), read
    assert [name for name in read if "platforms/interface" in name or "platforms/__pycache__/interface" in name] == []
    mutants = [e for e in events if e["event"] == "mutant" and e["guards"]]
    assert len({e["mutant"] for e in mutants}) == len(fitting_operators(INTERFACE))
    assert {e["site_module"] for e in mutants} == {str(ws / "mutants" / SITE_FILE)}
