"""index.html: the mutation-testing-elements viewer, inlined, rendering the report offline in Chromium.

The viewer draws into shadow DOM, which `--dump-dom` leaves out. So the rendering test loads a copy
of the page with a small probe script appended: once the app has drawn, it walks the app and every
shadow root in it, joins the visible text (not <style>/<script>) and puts it into `<pre id="probe">`
in the light DOM, which `--dump-dom` prints. The assertions read only that probe, never the embedded
JSON, so a file name only counts if the viewer drew it. The unmodified page is also screenshotted.
"""

from __future__ import annotations

import html as htmllib
import json
import re
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from warnonce_guard.common.errors import ViewerMissing
from warnonce_guard.mutations.report import html, viewer, write_report

from tests.records_support import CPU, CUDA, RUN, run_result, sample_result

CHROMIUM = Path("/usr/bin/chromium")
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="/usr/bin/chromium is absent (apt-get install chromium)"
)

PROBE = """
<script>
(function () {
  const skip = new Set(["STYLE", "SCRIPT", "TEMPLATE"]);
  function collect(node, out) {
    if (node.nodeType === Node.TEXT_NODE) { out.push(node.data); return; }
    if (node.nodeType === Node.ELEMENT_NODE && skip.has(node.tagName)) return;
    if (node.shadowRoot) collect(node.shadowRoot, out);
    for (const child of node.childNodes) collect(child, out);
  }
  function visible() {
    const out = [];
    collect(document.querySelector("mutation-test-report-app"), out);
    return out.join(" ").replace(/\\s+/g, " ");
  }
  function publish() {
    const pre = document.createElement("pre");
    pre.id = "probe";
    pre.textContent = visible();
    document.body.appendChild(pre);
  }
  let tries = 100;
  (function poll() {
    if (visible().includes("All files") || --tries === 0) setTimeout(publish, 500);
    else setTimeout(poll, 100);
  })();
})();
</script>
"""


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    command = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--host-resolver-rules=MAP * ~NOTFOUND",  # no name resolves: the page must need no network
        "--virtual-time-budget=10000",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def rendered_text(page: Path, tmp_path: Path) -> str:
    probe = tmp_path / "probe.html"
    text = page.read_text(encoding="utf-8")
    at = text.rindex("</body>")
    probe.write_text(text[:at] + PROBE + text[at:], encoding="utf-8")
    dom = chromium("--dump-dom", probe.as_uri(), profile=tmp_path / "profile-dom").stdout
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.DOTALL)
    assert found, "the probe never published: the viewer did not render"
    return htmllib.unescape(found.group(1))


def png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and unfiltered rows of an 8-bit RGB/RGBA, non-interlaced PNG (what Chromium writes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        header = body if kind == b"IHDR" else header
        idat += body if kind == b"IDAT" else b""
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, "unexpected PNG format"
    bpp = 3 if colour == 2 else 4
    raw, stride, rows = zlib.decompress(idat), width * bpp, []
    prev = bytes(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        if kind == 2:  # Up, most of Chromium's rows: one pass without index arithmetic
            line = bytearray((v + up) & 0xFF for v, up in zip(line, prev, strict=True))
        elif kind != 0:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b, c = prev[x], prev[x - bpp] if x >= bpp else 0
                if kind == 1:
                    line[x] = (line[x] + a) & 0xFF
                elif kind == 3:
                    line[x] = (line[x] + (a + b) // 2) & 0xFF
                else:
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line))
        prev = rows[-1]
    return width, height, rows


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "mutation-report"
    write_report(sample_result(), out, viewer.find_viewer())
    return out


@needs_chromium
def test_viewer_renders_the_score_and_every_file_offline(report_dir: Path, tmp_path: Path) -> None:
    text = rendered_text(report_dir / "index.html", tmp_path)
    shown = f"{sample_result().viewer_score:.2f}"  # the viewer's own score: 66.67
    # Rows of the drawn file table: name, score of total, score of covered, killed, survived, timeout, ...
    assert f"All files {shown} {shown} 1 1 1 0 4" in text
    assert f"{Path(CPU).name} {shown} {shown} 1 1 1 0 0" in text
    assert f"{Path(CUDA).name} N/A N/A 0 0 0 0 4" in text  # the exposed site: Ignored only, no score


@needs_chromium
def test_page_states_the_runs_own_score_when_the_viewer_differs(report_dir: Path, tmp_path: Path) -> None:
    dom = chromium("--dump-dom", (report_dir / "index.html").as_uri(), profile=tmp_path / "profile").stdout
    note = re.search(r'<p id="warnonce-note"[^>]*>(.*?)</p>', dom, re.DOTALL)
    assert note and "33.33%" in note.group(1) and "66.67%" in note.group(1)


@needs_chromium
def test_screenshot_of_the_page_is_not_blank(report_dir: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    page = (report_dir / "index.html").as_uri()
    chromium(f"--screenshot={shot}", "--window-size=1280,900", page, profile=tmp_path / "profile")
    assert shot.stat().st_size > 10_000
    width, height, rows = png_pixels(shot)
    assert (width, height) == (1280, 900)
    colours = {rows[y][x : x + 3] for y in range(0, height, 7) for x in range(0, width * 3, 3 * 11)}
    assert len(colours) > 20, "the screenshot is (nearly) a single colour: nothing rendered"
    # The status bar is drawn green (detected) and red (undetected), as is the score below the low threshold.
    assert any(r > 180 and g < 80 and b < 80 for r, g, b in colours)
    assert any(r < 60 and g > 140 and b < 100 for r, g, b in colours)


def test_page_inlines_the_bundle_and_loads_nothing_from_outside(report_dir: Path) -> None:
    page = (report_dir / "index.html").read_text(encoding="utf-8")
    bundle = viewer.find_viewer().read_text(encoding="utf-8")
    assert bundle in page
    assert not re.search(r"<(script|link|img)\b[^>]*\b(src|href)=", page)


def test_the_page_title_names_the_target_the_run_its_start_and_the_tool_version(tmp_path: Path) -> None:
    stand_in = tmp_path / "viewer.js"
    stand_in.write_text("/* stand-in */", encoding="utf-8")
    write_report(run_result(), tmp_path / "out", stand_in)
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    title = (
        f"warnonce-guard mutation report: vLLM 0.33.0 (vllm==0.33.0 from PyPI), run {RUN.run_id} started "
        "2026-05-01T12:34:56Z, warnonce-guard 1.2.3"
    )
    assert re.search(r"<title>(.*)</title>", page).group(1) == htmllib.escape(title)
    assert f'title-postfix="{htmllib.escape(title)}"' in page


def test_report_json_cannot_close_the_script_element() -> None:
    hostile = {"source": "</script><script>alert(1)</script><!-- & \u2028"}
    embedded = html.script_json(hostile)
    assert "<" not in embedded and ">" not in embedded and "&" not in embedded
    assert json.loads(embedded) == hostile


def test_bundle_that_would_break_the_script_element_goes_in_as_a_data_url() -> None:
    element = html.bundle_element('console.log("</script>")')
    assert element.startswith('<script src="data:text/javascript;base64,') and element.endswith("></script>")
    assert html.bundle_element("var a = 1;") == "<script>\nvar a = 1;\n</script>"


def test_a_missing_or_changed_viewer_is_one_line_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    changed = tmp_path / "mutation-test-elements.js"
    changed.write_text("/* not the shipped bundle */", encoding="utf-8")
    monkeypatch.setattr(viewer, "VIEWER_JS", changed)
    with pytest.raises(ViewerMissing) as raised:
        write_report(sample_result(), tmp_path / "out")
    message = str(raised.value)
    assert "\n" not in message and "reinstall warnonce-guard" in message
    assert raised.value.exit_code != 2 and not (tmp_path / "out").exists()
