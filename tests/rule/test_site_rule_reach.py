"""The callables a handler's call reaches a `*_once` method through (`site_rule.reaching_callables`), as discovery
reports the sites called through them: a helper, an alias or an inherited method, where the source binds it."""

from __future__ import annotations

import textwrap

import pytest
from warnonce_guard.rule.sites import sites_in_source

LOG_IT = "logger.warning_once('Failed: %r', err)"
SITE = """\
{pre}

class {cls}({bases}):
{methods}
    @classmethod
    def import_kernels(cls):
{binding}
        try:
            import vllm._C  # noqa: F401
        except ImportError as e:
            {call}
"""


def sites(
    call: str, *, pre: str = "", methods: str = "", binding: str = "", bases: str = "object", cls: str = "P"
) -> list[tuple[str, str, str, str]]:
    """(via, log_method, receiver, form) of each site discovery recognises in a class whose `import_kernels` runs
    `call` in its handler, after `binding` (its own statements, at 8 spaces), with `pre` and `methods` before it."""
    source = SITE.format(pre=pre, cls=cls, bases=bases, methods=methods, binding=binding or "        pass", call=call)
    found = sites_in_source(textwrap.dedent(source), "vllm/platforms/x.py", "vllm.platforms.x", "vllm")
    return [(site.via, site.log_method, site.receiver, site.form) for site in found if site.recognised]


def method(name: str, body: str) -> str:
    return f"    @classmethod\n    def {name}(cls, err):\n        {body}\n\n"


QUIET = "print(err)"


@pytest.mark.parametrize(
    ("pre", "reached", "form"),
    [
        ("def _b(err):\n    logger.warning_once('Failed: %s', repr(err))\n\ndef _a(err):\n    _b(err)\n",
         ("warning_once", "logger"), "eager"),
        ("warn = log.info_once\n\ndef _a(err):\n    warn('Failed: %r', err)\n", ("info_once", "log"), "live"),
        (f"def _b(err):\n    {LOG_IT}\n\ndef _a(err):\n    _c(err)\n\ndef _c(err):\n    {LOG_IT}\n",
         ("warning_once", "logger"), "live"),
    ],
    ids=["through-a-helper-formatting-what-it-is-given", "through-an-alias", "through-a-helper-defined-after-it"],
)  # fmt: skip
def test_a_helper_reaching_the_method_through_another_callable_logs_as_that_callable(
    pre: str, reached: tuple[str, str], form: str
) -> None:
    """The site is the method and logger at the end of the chain, as live as the last helper's own call makes it
    (`_b` formats what it is given: eager, whatever `_a` gives it), wherever the module defines the next one."""
    assert sites("_a(e)", pre=pre) == [("_a", *reached, form)]


def test_a_method_helper_reaching_the_method_through_another_method_of_its_class_is_followed() -> None:
    methods = method("_log", "cls._emit(err)") + method("_emit", LOG_IT)
    assert sites("cls._log(e)", methods=methods) == [("cls._log", "warning_once", "logger", "live")]


def test_a_function_the_method_defines_is_followed_to_the_methods_own_alias() -> None:
    """`XPUPlatform`: a class whose name starts with what a qualified name is stripped of."""
    binding = "        warn = log.info_once\n\n        def _report(err):\n            warn('Failed: %r', err)\n"
    found = sites("_report(e)", binding=binding, cls="XPUPlatform")
    assert found == [("_report", "info_once", "log", "live")]


def test_a_function_a_module_function_defines_is_followed() -> None:
    source = f"""\
def load():
    def _report(err):
        {LOG_IT}

    try:
        import vllm._C  # noqa: F401
    except ImportError as e:
        _report(e)
"""
    found = sites_in_source(source, "vllm/platforms/x.py", "vllm.platforms.x", "vllm")
    assert [(site.qualname, site.via, site.form) for site in found] == [("load", "_report", "live")]


def test_a_function_another_method_defines_is_not_the_handlers_to_call() -> None:
    methods = "    @classmethod\n    def other(cls):\n        def _report(err):\n"
    methods += f"            {LOG_IT}\n\n        return _report\n\n"
    assert sites("_report(e)", methods=methods) == []


def test_an_alias_bound_in_the_class_body_is_no_name_a_method_can_call_bare() -> None:
    assert sites("warn('Failed: %r', e)", methods="    warn = logger.warning_once\n\n") == []


@pytest.mark.parametrize(
    "binding",
    [
        "if cls.x:\n    warn = logger.warning_once",
        "if cls.x:\n    warn = print\nelse:\n    warn = logger.warning_once",
        "for _ in cls.xs:\n    warn = logger.warning_once",
        "with cls.lock:\n    warn = logger.warning_once",
        "try:\n    warn = logger.warning_once\nexcept Exception:\n    pass",
        "try:\n    pass\nexcept Exception:\n    warn = logger.warning_once",
        "try:\n    pass\nfinally:\n    warn = logger.warning_once",
        "match cls.x:\n    case _:\n        warn = logger.warning_once",
    ],
    ids=["if", "else", "for", "with", "try", "handler", "finally", "match-case"],
)
def test_an_alias_the_method_binds_in_any_block_is_a_callable_of_its_handler(binding: str) -> None:
    binding = textwrap.indent(binding, " " * 8)
    assert sites("warn('Failed: %r', e)", binding=binding) == [("warn", "warning_once", "logger", "live")]


@pytest.mark.parametrize(
    "pre",
    ["if X:\n    warn = logger.warning_once", "try:\n    pass\nfinally:\n    warn = logger.warning_once"],
    ids=["if", "finally"],
)
def test_an_alias_the_module_binds_in_a_block_is_a_callable_of_every_handler(pre: str) -> None:
    assert sites("warn('Failed: %r', e)", pre=pre) == [("warn", "warning_once", "logger", "live")]


BASE = "class Base:\n" + method("_log_failure", LOG_IT)


@pytest.mark.parametrize(
    ("pre", "bases", "methods", "call", "found"),
    [
        (BASE, "Base", "", "self._log_failure(e)", [("self._log_failure", "warning_once", "logger", "live")]),
        (BASE + "\nclass A:\n    pass\n", "A, Base", method("_log_failure", QUIET), "cls._log_failure(e)", []),
    ],
    ids=["through-self", "overridden-by-the-class-with-two-bases"],
)  # fmt: skip
def test_an_inherited_helper_is_the_classes_unless_it_overrides_it(
    pre: str, bases: str, methods: str, call: str, found: list[tuple[str, str, str, str]]
) -> None:
    assert sites(call, pre=pre, bases=bases, methods=methods) == found


def test_a_class_a_function_declares_before_its_bases_inherits_through_the_nearer_base() -> None:
    """Python's order for `Q(P, R)` is Q, P, Base, R: Base's helper, which P inherits, not R's quiet one. P is read
    after Q (it is defined after it): what P inherits reaches Q in a later pass."""
    source = f"""\
def _declare():
    class Q(P, R):
        @classmethod
        def import_kernels(cls):
            try:
                import vllm._C  # noqa: F401
            except ImportError as e:
                cls._log_failure(e)

    return Q


{BASE}
class R:
{method("_log_failure", QUIET)}
class P(Base):
    pass
"""
    found = sites_in_source(source, "vllm/platforms/x.py", "vllm.platforms.x", "vllm")
    assert [(site.qualname, site.via, site.form) for site in found] == [
        ("_declare.Q.import_kernels", "cls._log_failure", "live")
    ]
