"""`index.html`: the mutation-testing-elements viewer with its JS bundle and the report inlined.

The page needs no network, and no source text in the report can close its `<script>` element (`script_json`).
"""

from __future__ import annotations

import base64
import html
import json
import re
from typing import Any

_UNSAFE_IN_SCRIPT = re.compile(r"<(/?)script", re.IGNORECASE)
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
{bundle}
</head>
<body>
{note}<mutation-test-report-app title-postfix="{title}">
Your browser does not support custom elements; open this report in a current Chrome, Firefox or Safari.
</mutation-test-report-app>
<script>
const app = document.querySelector("mutation-test-report-app");
app.report = {report};
function updateTheme() {{ document.body.style.backgroundColor = app.themeBackgroundColor; }}
app.addEventListener("theme-changed", updateTheme);
updateTheme();
</script>
</body>
</html>
"""


def script_json(data: Any) -> str:
    """`data` as JSON that is safe to place inside a `<script>` element."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=False)
    return re.sub("[<>&\u2028\u2029]", lambda m: _JSON_ESCAPES[m.group()], text)


def bundle_element(bundle: str) -> str:
    if _UNSAFE_IN_SCRIPT.search(bundle) is None:
        return f"<script>\n{bundle}\n</script>"
    encoded = base64.b64encode(bundle.encode("utf-8")).decode("ascii")
    return f'<script src="data:text/javascript;base64,{encoded}"></script>'


def note_element(note: str | None) -> str:
    """A banner above the viewer (its own colours, legible in the light and the dark theme)."""
    if not note:
        return ""
    style = "margin:0;padding:.5em 1em;font-family:sans-serif;background:#fff3cd;color:#664d03"
    return f'<p id="warnonce-note" style="{style}">{html.escape(note)}</p>\n'


def render(report: dict[str, Any], bundle: str, title: str, note: str | None = None) -> str:
    """The whole page; `bundle` is the text of mutation-test-elements.js, `note` an optional banner."""
    return _PAGE.format(
        title=html.escape(title), bundle=bundle_element(bundle), report=script_json(report), note=note_element(note)
    )
