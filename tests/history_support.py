"""Builders shared by the history tests (this module holds no tests): vLLM-shaped trees, their archives, and an
index that serves them."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
import threading
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from warnonce_guard.guards.sessions import RecordKind
from warnonce_guard.history.index import ACCEPT, Dist, Release
from warnonce_guard.history.records import GuardRun, ReleaseMeta, SiteOutcome

from tests.toy import EAGER_CALL, PLATFORM_SOURCE, write_toy

LIVE_CALL = 'logger.warning_once("Failed to import from PKG._C: %r", e)'
PLAIN_CALL = 'logger.warning("Failed to import from PKG._C: %r", e)'
INTERFACE_SITE = "vllm/platforms/interface.py::Platform.import_kernels::vllm._C"
META = ReleaseMeta("9.9.9", "2026-01-02", None, "vllm-9.9.9.tar.gz")
LEAKS = ("exception retained", "owner pinned", "warning repeated")


def platform(call: str) -> str:
    """A platform module whose `Platform.import_kernels` logs a failed `PKG._C` import with `call`."""
    return PLATFORM_SOURCE.replace("CALL", call)


def vllm_tree(root: Path, call: str | None = EAGER_CALL, extra: dict[str, str] | None = None) -> Path:
    """`root/vllm` shaped like a release: a logger, and `platforms/interface.py` when `call` is given."""
    platforms = {"interface": platform(call)} if call else {}
    write_toy(root, "vllm", {**platforms, **(extra or {})})
    return root


def tree_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def sdist_bytes(files: dict[str, bytes], top: str = "vllm-9.9.9") -> bytes:
    """A .tar.gz with every file under `top/`, as an sdist has them (the same bytes for the same files)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}" if top else name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def wheel_bytes(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def served(folder: Path, filename: str, data: bytes, sha256: str | None = None, uploaded: str = "2026-01-02") -> Dist:
    """Put `data` in `folder` and describe it as the index would (a file:// URL); `sha256` overrides the hash."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / filename
    path.write_bytes(data)
    kind = "wheel" if filename.endswith(".whl") else "sdist"
    digest = sha256 or hashlib.sha256(data).hexdigest()
    return Dist(filename, kind, path.as_uri(), digest, len(data), f"{uploaded}T10:00:00Z", None)


def release(version: str, *dists: Dist) -> Release:
    return Release(version, tuple(dists))


def guard_run(*outcomes: SiteOutcome, error: str | None = None, timed_out: bool = False) -> GuardRun:
    return GuardRun(
        1 if error or any(o.outcome is not RecordKind.PASSED for o in outcomes) else 0, outcomes, error, 1.0, timed_out
    )


@dataclass
class Served:
    """What a server on localhost serves at `url`, and the paths it was asked for."""

    url: str
    asked: list[str] = field(default_factory=list)


@contextmanager
def http_server(
    body: bytes, content_type: str = "application/octet-stream", cut_short: bool = False
) -> Iterator[Served]:
    """`body` at every path of a server on localhost; `cut_short`: one chunk promising all of it, half sent."""

    class Answer(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # for chunks

        def do_GET(self) -> None:
            served.asked.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            if cut_short:
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(f"{len(body):x}\r\n".encode() + body[: len(body) // 2])
                self.close_connection = True
                return
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    served = Served(f"http://127.0.0.1:{server.server_port}/simple/")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def index_page(releases: Sequence[Release]) -> bytes:
    """The PEP 691 project page that lists `releases`."""
    files = [
        {
            "filename": d.filename,
            "url": d.url,
            "hashes": {"sha256": d.sha256},
            "size": d.size,
            "upload-time": d.uploaded,
            "yanked": (d.yanked or True) if d.yanked is not None else False,
        }
        for r in releases
        for d in r.files
    ]
    versions = [r.version for r in releases]
    return json.dumps({"meta": {"api-version": "1.1"}, "name": "vllm", "versions": versions, "files": files}).encode()


def index_server(releases: Sequence[Release]) -> AbstractContextManager[Served]:
    """An index on localhost listing `releases` (their files stay where `served` put them), for tests that go
    through the command line (`--index-url`)."""
    return http_server(index_page(releases), ACCEPT)
