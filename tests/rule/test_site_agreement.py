"""Discovery, the operators and mutant naming agree on every site shape discovery accepts (a property test).

A generated platform module combines an import form, a handler shape, a logging call and a place for the
try. Discovery lists its sites; mutmut, with our operators anchored on them, mutates the module; naming
attributes every mutant. They must agree: every mutant names a discovered site by position, every
mutable site (cached, in a function) gets exactly one mutant per applicable operator, and no site shape
aborts naming.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from warnonce_guard.mutations.engine import naming
from warnonce_guard.mutations.identify import attribute
from warnonce_guard.mutations.operators import OPERATORS, anchors_of
from warnonce_guard.rule.sites import _SiteFinder, sites_in_source

from tests.toy import apply_operator

FILE = "vllm/platforms/gen.py"
MODULE = "vllm.platforms.gen"

IMPORTS = {
    "import": "import vllm._C  # noqa: F401",
    "import-as": "import vllm._C_AVX2 as kernels  # noqa: F401",
    "from-import": "from vllm import _C  # noqa: F401",
    "from-import-parenthesised": "from vllm import (\n    _moe_C,  # noqa: F401\n)",
    "relative-one-dot": "from . import _C  # noqa: F401",
    "relative-two-dots": "from .. import _C  # noqa: F401",
    "relative-too-deep": "from ... import _C  # noqa: F401",
    "from-kernel-module": "from vllm._C import ops  # noqa: F401",
    "import-module": 'importlib.import_module("vllm._C")',
    "two-kernels": "import vllm._C_AVX512, vllm._C  # noqa: F401",
    "not-a-kernel": "import vllm.envs  # noqa: F401",
}
HANDLERS = {
    "import-error": "except ImportError as e:",
    "module-not-found": "except ModuleNotFoundError as e:",
    "tuple": "except (OSError, ImportError) as e:",
    "exception": "except Exception as e:",
    "dotted": "except builtins.ImportError as e:",
    "value-error": "except ValueError as e:",
    "no-name": "except ImportError:",
}
CALLS = {
    "eager-repr": 'logger.warning_once("Failed to import: %s", repr(e))',
    "eager-str": 'logger.info_once("Failed to import: %s", str(e))',
    "live-repr": 'logger.warning_once("Failed to import: %r", e)',
    "fstring": 'logger.warning_once(f"Failed to import: {e!r}")',
    "multi-line": 'logger.error_once(\n    "Failed to import: %s",\n    repr(e),\n)',
    "scope": 'logger.debug_once("Failed to import: %s", repr(e), scope="local")',
    "plain": 'logger.warning("Failed to import: %s", repr(e))',
    "guarded-by-if": 'if "dynamic module" not in str(e):\n    logger.warning_once("Failed: %s", repr(e))',
    "two-calls": 'logger.warning_once("a: %s", repr(e))\nlogger.info_once("b: %r", e)',
    "nested-try": (
        "try:\n    import vllm._C_AVX2  # noqa: F401\nexcept ImportError as inner:\n"
        '    logger.warning_once("%s then %s", repr(e), repr(inner))'
    ),
    "in-a-closure": 'def later():\n    logger.warning_once("x: %s", repr(e))',
    "other-name": 'logger.warning_once("x: %s", repr(other))',
    "comment-after": 'logger.warning_once("x: %s", repr(e))\n# the handler ends here',
}
PLACES = ("method", "function", "branch", "nested-def", "module", "module-branch", "twice")
HEAD = "import builtins\nimport importlib\n\nfrom vllm.logger import init_logger\n\nlogger = init_logger(__name__)\n"


@dataclass(frozen=True)
class Variant:
    imports: str
    handler: str
    call: str
    place: str

    def try_block(self) -> str:
        body = textwrap.indent(IMPORTS[self.imports], "    ")
        call = textwrap.indent(CALLS[self.call], "    ")
        return f"try:\n{body}\n{HANDLERS[self.handler]}\n{call}\n"

    def source(self) -> str:
        block = self.try_block()
        head = HEAD
        if self.place == "module":
            return head + "\n" + block
        if self.place == "module-branch":
            return head + "\n# kernels with AVX2\nif has_avx2():\n" + textwrap.indent(block, "    ")
        if self.place == "function":
            return head + "\n\ndef import_kernels():\n" + textwrap.indent(block, "    ")
        if self.place == "nested-def":
            inner = "def inner():\n" + textwrap.indent(block, "    ") + "inner()\n"
            return head + "\n\ndef import_kernels():\n" + textwrap.indent(inner, "    ")
        if self.place == "branch":
            block = "if has_avx2():\n" + textwrap.indent(block, "    ") + "else:\n" + textwrap.indent(block, "    ")
        elif self.place == "twice":
            block = block + block
        method = "@classmethod\ndef import_kernels(cls):\n" + textwrap.indent(block, "    ")
        return head + "\n\nclass Platform:\n" + textwrap.indent(method, "    ")


variants = st.builds(
    Variant,
    st.sampled_from(sorted(IMPORTS)),
    st.sampled_from(sorted(HANDLERS)),
    st.sampled_from(sorted(CALLS)),
    st.sampled_from(PLACES),
)


def check_agreement(variant: Variant) -> None:
    source = variant.source()
    sites = sites_in_source(source, FILE, MODULE)
    whole = _SiteFinder._whole(source, FILE, MODULE, "vllm") if sites else []
    assert sites == sorted(whole, key=lambda s: (s.line, s.column)), source  # parsing regions = parsing the file
    mutable = {(s.line, s.column): s for s in sites if s.mutable}
    identities = attribute(FILE, naming.made_here(FILE, source, ["vllm"], anchors_of(sites)), sites)

    assert [i.unattributed for i in identities if i.unattributed] == [], source
    assert {(i.site.line, i.site.column) for i in identities} == set(mutable), source
    assert all(i.operator in OPERATORS for i in identities), source
    for site in mutable.values():  # once-dropped applies to every cached site: one mutant each
        mutants = [i for i in identities if i.site == site]
        assert sum(1 for i in mutants if i.operator == "once-dropped") == 1, (site.id, source)
        assert len({i.operator for i in mutants}) == len(mutants), (site.id, source)
    unanchored = sum(len(apply_operator(name, source)) for name in OPERATORS)
    assert len(identities) <= unanchored or not identities, source  # anchoring only ever narrows


@pytest.mark.usefixtures("module_mutmut_config")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(variants)
@example(Variant("relative-two-dots", "import-error", "eager-repr", "method"))
@example(Variant("relative-too-deep", "import-error", "eager-repr", "method"))
@example(Variant("import", "import-error", "nested-try", "twice"))
@example(Variant("import-module", "tuple", "guarded-by-if", "branch"))
@example(Variant("from-import", "import-error", "in-a-closure", "method"))
@example(Variant("import", "import-error", "eager-repr", "nested-def"))
@example(Variant("import", "import-error", "eager-repr", "module"))
@example(Variant("import", "import-error", "eager-repr", "module-branch"))
@example(Variant("import", "import-error", "comment-after", "method"))
def test_discovery_operators_and_naming_agree(variant: Variant) -> None:
    check_agreement(variant)


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.usefixtures("module_mutmut_config")
@pytest.mark.parametrize("imports", sorted(IMPORTS))
@pytest.mark.parametrize("handler", sorted(HANDLERS))
def test_every_import_form_handler_and_call_agrees_in_a_method(imports: str, handler: str) -> None:
    for call in sorted(CALLS):
        check_agreement(Variant(imports, handler, call, "method"))


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.usefixtures("module_mutmut_config")
@pytest.mark.parametrize("place", PLACES)
def test_every_call_agrees_in_every_place(place: str) -> None:
    for call in sorted(CALLS):
        for imports in ("import", "relative-two-dots"):
            check_agreement(Variant(imports, "import-error", call, place))


def test_the_generator_covers_sites_and_non_sites(module_mutmut_config: Path) -> None:
    site = sites_in_source(Variant("import", "import-error", "eager-repr", "method").source(), FILE, MODULE)
    none = sites_in_source(Variant("not-a-kernel", "import-error", "eager-repr", "method").source(), FILE, MODULE)
    assert [s.mutable for s in site] == [True] and none == []
