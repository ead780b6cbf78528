"""Leaks written at the ARM-branch site of vLLM 0.33.0's cpu.py in forms discovery does not (or did not) read: each
must make its guard fail and the mutation run report the site exposed (issue 40)."""

from __future__ import annotations

from pathlib import Path

from tests.exported_support import vllm_copy

FIXED = """\
            except ImportError as e:
                logger.warning_once("Failed to import from vllm._C: %s", repr(e))"""
M = '"Failed to import from vllm._C: %r"'
_HANDLER = "            except ImportError as e:\n"


def _handler(*lines: str) -> str:
    return _HANDLER + "\n".join(" " * 16 + line for line in lines)


# name -> the handler written in place of FIXED
FORMS: dict[str, str] = {
    "getattr": _handler(f'getattr(logger, "warning_once")({M}, e)'),
    "lambda wrapper": _handler(f"(lambda x: logger.warning_once({M}, x))(e)"),
    "direct cached printer": _handler(
        "from vllm.logger import _print_warning_once", f"_print_warning_once(logger, {M}, e)"
    ),
    "context manager's __exit__": _handler(
        "class _Report:",
        "    def __enter__(self):",
        "        return self",
        "    def __exit__(self, *exc):",
        f"        logger.warning_once({M}, e)",
        "with _Report():",
        "    pass",
    ),
    "starred list": _handler(f"logger.warning_once({M}, *[e])"),
    "default argument lambda": _handler(f"logger.warning_once({M}, (lambda x=e: x)())"),
    "comprehension": _handler(f"[logger.warning_once({M}, x) for x in [e]]"),
    "__context__": _handler(
        "try:",
        '    raise RuntimeError("reported")',
        "except RuntimeError as e2:",
        f"    logger.warning_once({M}, e2.__context__)",
    ),
    "methodcaller": _handler("import operator", f'operator.methodcaller("warning_once", {M}, e)(logger)'),
    "local alias": _handler("warn = logger.warning_once", f"warn({M}, e)"),
    "partial": _handler("import functools", f"functools.partial(logger.warning_once, {M})(e)"),
    "dict of methods": _handler(f'{{"w": logger.warning_once}}["w"]({M}, e)'),
}


def hostile_tree(root: Path, form: str) -> Path:
    """A copy of the installed vLLM whose ARM-branch site is written in `form`."""
    tree = vllm_copy(root)
    cpu = tree / "vllm" / "platforms" / "cpu.py"
    text = cpu.read_text(encoding="utf-8")
    assert text.count(FIXED) == 1  # the ARM branch's handler, the last site of the file
    cpu.write_text(text.replace(FIXED, FORMS[form]), encoding="utf-8")
    return tree
