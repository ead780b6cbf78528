"""Which cache a call reaches, read from the module that makes it: its imports (relative ones too), the names and
`self.x` it binds (in the function that binds them), loggers of known packages, cached functions; the settings' own
caches; and vLLM's logger as the target's `vllm/logger.py` is written (issue 35's patch: it renders first)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from warnonce_guard.audit.scan import findings_in_source
from warnonce_guard.cli.main import main
from warnonce_guard.common.errors import ExitCode

from tests.rule.test_caches import _PRINTERS, INLINE, STOCK


def codes(source: str, module: str | None = "pkg.mod", is_package: bool = False) -> list[tuple[int, str]]:
    return [
        (f.line, f.code)
        for f in findings_in_source(textwrap.dedent(source), "pkg/mod.py", module, is_package=is_package)
    ]


def caches(source: str, module: str | None = "pkg.mod", is_package: bool = False) -> list[str]:
    return [f.cache for f in findings_in_source(textwrap.dedent(source), "pkg/mod.py", module, is_package=is_package)]


TRANSFORMERS = "transformers' patched Logger.warning_once/info_once lru_cache"


@pytest.mark.parametrize(
    ("module", "is_package", "imported"),
    [
        ("transformers.models.bert.modeling_bert", False, "from ...utils import logging"),
        ("transformers.models.bert", True, "from ...utils import logging"),
        ("transformers.generation.utils", False, "from ..utils import logging"),
        ("transformers.trainer", False, "from .utils import logging"),
        ("anything", False, "from transformers.utils import logging"),
        ("anything", False, "from transformers import logging"),
    ],
)
def test_a_logger_from_transformers_get_logger_is_followed_through_relative_imports(
    module: str, is_package: bool, imported: str
) -> None:
    source = f"""\
        {imported}

        logger = logging.get_logger(__name__)
        logger.warning_once("x", stacklevel=2)
        logger.warning_once("%s", x)
        """
    assert codes(source, module, is_package) == [(5, "WOG002")]  # stacklevel is no error: transformers' takes it
    assert caches(source, module, is_package)[0].startswith(TRANSFORMERS)


def test_a_relative_import_above_the_top_package_reaches_nothing_known() -> None:
    source = """\
        from ....utils import logging

        logger = logging.get_logger(__name__)
        logger.warning_once("x", stacklevel=2)
        """
    assert (
        codes(source, "transformers.models.bert") == []
    )  # not followed: transformers' (one of those it may be) takes it
    assert caches("from ....utils import logging\nlogging.get_logger(__name__).info_once('%s', x)\n")[0].startswith(
        "the cache of whichever logger it is"
    )


def test_a_name_is_read_where_the_call_is_bound_in_its_function_first() -> None:
    source = """\
        import logging

        from sglang.multimodal_gen.runtime.utils.logging_utils import init_logger


        def std(x):
            logger = logging.getLogger("torch")
            logger.warning_once("%s", x)


        def multimodal(x):
            logger = init_logger("sglang.test")
            logger.warning_once("holding %s", x)
        """
    found = findings_in_source(textwrap.dedent(source), "pkg/mod.py", "pkg.mod")
    assert [(f.line, f.code) for f in found] == [(8, "WOG002")]  # the multimodal logger keeps only text


def test_a_logger_held_by_self_and_a_logger_imported_from_a_known_package_are_followed() -> None:
    source = """\
        from accelerate.logging import get_logger
        from transformers.trainer import logger as trainer_logger
        from vllm.logger import logger as vllm_logger


        class Trainer:
            def __init__(self):
                self.log = get_logger(__name__)

            def step(self, e):
                self.log.warning_once("x", main_process_only=False, in_order=True)
                trainer_logger.warning_once("x", stack_info=True)
                vllm_logger.warning_once("x", stack_info=True)
        """
    assert codes(source) == [(13, "WOG011")]


def test_a_name_bound_to_two_loggers_is_checked_against_both() -> None:
    source = """\
        import logging

        from vllm.logger import init_logger

        logger = init_logger(__name__) if VLLM else logging.getLogger(__name__)
        logger = logging.getLogger(__name__)


        class Model:
            def load(self):
                logger.warning_once("x", stacklevel=2)
                logger.warning_once("%s", self)
        """
    assert codes(source) == [(12, "WOG002")]  # transformers' takes stacklevel; vLLM's is bounded: `self` is a name
    (finding,) = findings_in_source(textwrap.dedent(source), "pkg/mod.py", "pkg.mod")
    assert finding.cache.startswith("the cache it reaches (vLLM's logger *_once lru_cache (vllm.logger, 128 entries);")


def test_an_lru_cached_once_function_of_the_module_is_checked_and_its_logger_is_not() -> None:
    source = """\
        import functools


        @functools.lru_cache(maxsize=None)
        def note_once(logger, msg, level=20):
            logger.log(level, msg)


        @functools.lru_cache
        def lookup(key):
            return key


        def f(logger, cfg):
            try:
                pass
            except Exception as e:
                note_once(logger, e)
                note_once(logger, repr(e), level=cfg.level)
                note_once(logger, repr(e), colour="red")
                lookup(e)
        """
    found = findings_in_source(textwrap.dedent(source), "pkg/mod.py", "pkg.mod")
    assert [(f.line, f.code, f.argument) for f in found] == [
        (18, "WOG001", "e"),
        (19, "WOG003", "level=cfg.level"),
        (20, "WOG011", "colour='red'"),
    ]
    assert found[0].cache == "note_once's lru_cache (pkg.mod, unbounded)" and found[0].fix is not None


@pytest.mark.parametrize(
    ("imports", "decorator", "size"),
    [
        ("from functools import lru_cache as memo", "@memo(maxsize=None)", "unbounded"),
        ("import functools as ft", "@ft.lru_cache", "128 entries"),
        ("from functools import cache as remember", "@remember", "unbounded"),
        ("from mylib import lru_cache", "@lru_cache(16)", "16 entries"),  # spelled lru_cache: read as one, the stricter
        ("from mylib import lru_cache as memo", "@memo(4)", "4 entries"),  # and under another name
        ("import mylib as m", "@m.cache", "unbounded"),
        ("from functools import wraps as lru", "@lru(print)", None),
    ],
    ids=["from-as", "module-as", "cache-as", "spelled", "spelled-as", "module-spelled", "other-function"],
)
def test_a_cache_decorator_is_read_through_the_module_s_imports(imports: str, decorator: str, size: str | None) -> None:
    source = f"""\
{imports}


{decorator}
def note_once(logger, msg):
    logger.warning(msg)


def f(logger):
    try:
        pass
    except Exception as e:
        note_once(logger, e)
"""
    found = findings_in_source(source, "pkg/mod.py", "pkg.mod")
    cache = f"note_once's lru_cache (pkg.mod, {size})"
    expected = [] if size is None else [(len(source.splitlines()), "WOG001", cache)]
    assert [(f.line, f.code, f.cache) for f in found] == expected


@pytest.mark.parametrize("call", ["print_warning_once(e)", "utils.print_warning_once(e)"])
def test_a_cached_function_of_the_table_is_followed_through_its_reexports(call: str) -> None:
    source = f"""\
        from sglang.srt import utils
        from sglang.srt.utils import print_warning_once

        try:
            pass
        except Exception as e:
            {call}
        """
    (finding,) = findings_in_source(textwrap.dedent(source), "x.py", "x")
    assert (finding.code, finding.level) == ("WOG001", "print_warning_once")


def test_a_function_of_the_same_name_not_from_the_table_is_not_a_cache() -> None:
    source = (
        "from my_lib import print_warning_once\n\ntry:\n    pass\nexcept Exception as e:\n    print_warning_once(e)\n"
    )
    assert codes(source) == []


def test_an_instance_into_an_unbounded_cache_fails_and_into_vllms_is_a_warning() -> None:
    source = """\
        import logging

        from vllm.logger import init_logger

        hf = logging.getLogger(__name__)
        vllm = init_logger(__name__)


        class Model:
            def load(self):
                hf.warning_once("%s", self)
                vllm.warning_once("%s", self)

                def inner():
                    hf.warning_once("%s", self)  # the closure's self is the method's

            @staticmethod
            def build(self):
                hf.warning_once("%s", self)  # not an instance: a parameter named self
        """
    assert codes(source) == [(11, "WOG012"), (12, "WOG002"), (15, "WOG012"), (19, "WOG002")]


# ---- through the command line: the settings' caches, and a vLLM whose logger renders first ---------------------------


def audit_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object], str]:
    code = main(["audit", *argv, "--format", "json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_a_cache_of_the_settings_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent(
            """\
            [[tool.warnonce-guard.cache]]
            name = "my_plugin.log.remember"
            kind = "function"
            signature = "(logger, msg, *args)"
            held = ["logger"]
            maxsize = 32
            """
        )
    )
    plugin = tmp_path / "my_plugin"
    plugin.mkdir()
    (plugin / "__init__.py").write_text("")
    (plugin / "platform.py").write_text(
        "from .log import remember\n\ntry:\n    pass\nexcept Exception as e:\n    remember(LOGGER, 'x %s', e)\n"
    )
    monkeypatch.chdir(tmp_path)
    code, document, _ = audit_json(capsys, "my_plugin")
    (finding,) = document["findings"]  # type: ignore[misc]
    assert code == ExitCode.CHECK_FAILED
    assert (finding["code"], finding["level"], finding["fails"]) == ("WOG001", "remember", True)
    assert finding["cache"] == "my_plugin.log.remember's cache (configured, 32 entries)"


def test_a_bad_cache_in_the_settings_is_bad_input_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text('[[tool.warnonce-guard.cache]]\nname = "x.f"\nkind = "function"\n')
    (tmp_path / "x.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert main(["audit", "x.py"]) == ExitCode.BAD_INPUT
    (line,) = capsys.readouterr().err.splitlines()
    assert "[tool.warnonce-guard]: a cache entry needs signature" in line


LEAK = (
    "from vllm.logger import init_logger\n\nlogger = init_logger(__name__)\n\ntry:\n    pass\nexcept Exception as e:\n"
)
LEAK += "    logger.warning_once('failed: %r', e)\n"


def vllm_tree(root: Path, logger: str) -> Path:
    """A vLLM tree whose `vllm/logger.py` is `logger`, with one module passing a live exception to `warning_once`."""
    package = root / "vllm"
    (package / "platforms").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "logger.py").write_text(logger)
    (package / "leak.py").write_text(LEAK)
    return root


@pytest.mark.parametrize(("printers", "code"), [(_PRINTERS, "WOG001"), (INLINE, "WOG013")], ids=["stock", "patched"])
def test_a_live_exception_into_a_vllm_whose_logger_renders_first_is_only_noted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], printers: str, code: str
) -> None:
    root = vllm_tree(tmp_path, STOCK.replace(_PRINTERS, printers))
    exit_code, document, err = audit_json(capsys, "--vllm-src", str(root))
    (finding,) = [f for f in document["findings"] if f["file"] == "vllm/leak.py"]  # type: ignore[union-attr]
    assert finding["code"] == code and finding["fails"] is (code == "WOG001")
    assert exit_code == (ExitCode.CHECK_FAILED if code == "WOG001" else ExitCode.OK)
    assert ("render the message first" in err) is (code == "WOG013")
    # the same tree given as paths: its own vllm/logger.py decides
    exit_code, document, _ = audit_json(capsys, str(root / "vllm"))
    assert [f["code"] for f in document["findings"] if f["file"].endswith("leak.py")] == [code]  # type: ignore[union-attr]


def test_an_import_is_read_where_it_is_made_a_functions_own_shadows_the_modules_there_only() -> None:
    source = """\
        from transformers.utils import logging

        logger = logging.get_logger(__name__)


        def quiet_kernels():
            import logging

            logging.getLogger("kernels").setLevel(logging.CRITICAL)


        def load():
            logger.warning_once("x", stacklevel=2)  # transformers' takes it


        def resolved_late(x):
            from vllm.logger import init_logger

            init_logger(__name__).info_once("x", stacklevel=2)  # vLLM's does not
        """
    assert codes(source) == [(19, "WOG011")]


def test_on_a_receiver_not_followed_only_a_once_method_is_read_as_reaching_a_cache() -> None:
    source = """\
        def f(log):
            try:
                pass
            except Exception as e:
                log.warn(e)  # lightning's WarningCache.warn keeps its message, but `warn` is everyone's
                log.warning_once("failed: %s", e)
        """
    assert [code for line, code in codes(source) if line == 5] == []
    assert [code for line, code in codes(source) if line == 6] == ["WOG001"]
