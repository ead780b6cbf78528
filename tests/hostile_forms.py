"""Leaks written in forms discovery does not read, or did not (issue 40): each must make its site's guard fail and
the mutation run report the site exposed. A form is the statements of a handler `except ImportError as e:`, with
PKG for the package (its logger module has vLLM's `_print_warning_once`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from warnonce_guard.rule.site_row import Site
from warnonce_guard.rule.sites import discover

from tests.exported_support import vllm_copy

M = '"Failed to import: %r"'

FORMS: dict[str, str] = {
    "getattr": f'getattr(logger, "warning_once")({M}, e)',
    "lambda wrapper": f"(lambda x: logger.warning_once({M}, x))(e)",
    "direct cached printer": f"from PKG.logger import _print_warning_once\n_print_warning_once(logger, {M}, e)",
    "context manager's __exit__": textwrap.dedent(
        f"""\
        class _Report:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                logger.warning_once({M}, e)

        with _Report():
            pass"""
    ),
    "starred list": f"logger.warning_once({M}, *[e])",
    "default argument lambda": f"logger.warning_once({M}, (lambda x=e: x)())",
    "comprehension": f"[logger.warning_once({M}, x) for x in [e]]",
    "__context__": textwrap.dedent(
        f"""\
        try:
            raise RuntimeError("reported")
        except RuntimeError as e2:
            logger.warning_once({M}, e2.__context__)"""
    ),
    "methodcaller": f'import operator\noperator.methodcaller("warning_once", {M}, e)(logger)',
    "local alias": f"warn = logger.warning_once\nwarn({M}, e)",
    "partial": f"import functools\nfunctools.partial(logger.warning_once, {M})(e)",
    "dict of methods": f'{{"w": logger.warning_once}}["w"]({M}, e)',
}


def written(form: str, package: str, indent: int) -> str:
    """A form's statements for `package`, every line but the first indented by `indent` (the first takes the place
    of a call that is indented already)."""
    text = FORMS[form].replace("PKG", package)
    return textwrap.indent(text, " " * indent).lstrip(" ")


def hostile_tree(root: Path, forms: list[str]) -> tuple[Path, dict[str, str]]:
    """A copy of the installed vLLM whose guarded sites are written in `forms`, one each (the ARM-branch site of
    cpu.py first, then the others in discovery's order); and each hostile site's id -> its form."""
    tree = vllm_copy(root)
    sites = discover(tree)
    arm = [s for s in sites if s.file.endswith("cpu.py") and s.branch.startswith("not (")]
    order = arm + [s for s in sites if s.guarded and s not in arm]
    assert len(forms) <= len(order)
    chosen = dict(zip((s.id for s in order), forms, strict=False))
    for site in sorted(order[: len(forms)], key=lambda s: -s.line):  # from the bottom: lines stay where they are
        _rewrite(tree / site.file, site, written(chosen[site.id], "vllm", site.column))
    return tree, chosen


def _rewrite(path: Path, site: Site, statements: str) -> None:
    """Put `statements` in place of the site's call (a statement of its own, on lines line..end_line)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    start, end = site.line - 1, site.end_line
    indent = " " * site.column
    lines[start:end] = [indent + statements + "\n"]
    path.write_text("".join(lines), encoding="utf-8")
