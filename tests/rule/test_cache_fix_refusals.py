"""A logger module the fix's writer (`rule.cache_fix.patched`) cannot patch is refused in one line saying what differs
from vLLM's: the printer's parameters, its logging call's stacklevel, a caller sharing its line with other code."""

from __future__ import annotations

import pytest
from warnonce_guard.common.errors import LoggerNotPatchable
from warnonce_guard.caches.cache_fix import patched

HEAD = "from functools import lru_cache\n\n@lru_cache\n"
PRINTER = "def _print_warning_once(logger, msg, *args):\n    logger.warning(msg, *args, stacklevel=3)\n"
CALLER = "\n\ndef warning_once(self, msg, *args):\n    _print_warning_once(self, msg, *args)\n"
NOT_VLLMS = "my/logger.py: _print_warning_once (line 4) does not take (logger, msg, *args) as vLLM's do"
NOT_CONSTANT = "my/logger.py: _print_warning_once (line 4) does not log with a constant stacklevel and nothing else"


@pytest.mark.parametrize(
    ("source", "says"),
    [
        (HEAD + PRINTER.replace("msg, *args)", "msg, extra, *args)") + CALLER, NOT_VLLMS),  # a third parameter
        (HEAD + PRINTER.replace("*args)", "*args, **kwargs)") + CALLER, NOT_VLLMS),  # a **kwargs too
        (HEAD + PRINTER.replace("stacklevel=3", "stacklevel=level") + CALLER, NOT_CONSTANT),
        (HEAD + PRINTER.replace("stacklevel=3", "stacklevel='3'") + CALLER, NOT_CONSTANT),  # a constant, no int
        (HEAD + PRINTER.replace("stacklevel=3", "stacklevel=3, extra={}") + CALLER, NOT_CONSTANT),
        (
            HEAD + PRINTER + CALLER.replace("*args)\n", "*args, extra=1)\n"),
            "my/logger.py: the call of _print_warning_once on line 9 is not `_print_warning_once(self, msg, *args)` as "
            "a statement",
        ),
        (
            HEAD + PRINTER + CALLER.replace("*args)\n", "*args); seen = True\n"),
            "my/logger.py: the call on line 9 shares its line with other code",
        ),
        (
            HEAD + PRINTER + CALLER.replace("    _print", "    seen = True; _print"),
            "my/logger.py: the call on line 9 shares its line with other code",
        ),
    ],
    ids=[
        "third-parameter",
        "kwargs",
        "stacklevel-a-name",
        "stacklevel-a-str",
        "another-keyword",
        "a-keyword",
        "code-after",
        "code-before",
    ],
)
def test_a_printer_or_caller_not_shaped_as_vllms_is_refused_in_one_line(source: str, says: str) -> None:
    with pytest.raises(LoggerNotPatchable) as refused:
        patched(source, "my/logger.py")
    assert str(refused.value) == says


def test_the_same_shapes_written_as_vllms_are_patched() -> None:
    assert "def _print_warning_once(logger, msg)" in patched(HEAD + PRINTER + CALLER, "my/logger.py")


def test_the_rendered_text_takes_a_name_its_caller_does_not_use() -> None:
    uses_text = "\n\nclass L:\n    def warning_once(self, msg, *args):\n        text = 'bound elsewhere'\n"
    uses_text += "        _print_warning_once(self, msg, *args)\n"
    block = (
        "        rendered = _render_once(msg, args)\n"
        "        if rendered is None:  # logging reports the mismatch; nothing is cached\n"
        "            self.warning(msg, *args, stacklevel=2)\n"
        "        else:\n"
        "            _print_warning_once(self, rendered)\n"
    )
    assert patched(HEAD + PRINTER + uses_text, "my/logger.py").endswith(block)
