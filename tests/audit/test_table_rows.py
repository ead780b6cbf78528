"""The rows of caches/caches.toml as the audit reads the packages they come from (issue 42): a call of each kind of
cache (a function reached through a re-export, a logger's method, a function stored on a logger instance, a patch of
`logging.Logger`, a set of keys) keeps a live exception and fails; what the cache never keeps does not; a configured
entry always takes effect, or is said to take none."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from warnonce_guard.audit.scan import findings_in_source, needs_parse
from warnonce_guard.caches.model import BY_KEY, DEFAULT_MODEL, BadCacheEntry, user_caches
from warnonce_guard.cli.main import main
from warnonce_guard.common.errors import ExitCode


def found(source: str, module: str, model: object = DEFAULT_MODEL) -> list[tuple[str, str, str]]:
    """(code, argument, the cache's label or how it is described) of each finding."""
    findings = findings_in_source(textwrap.dedent(source), "m.py", module, model)  # type: ignore[arg-type]
    return [(f.code, f.argument, f.cache or "") for f in findings]


def failing(source: str, module: str) -> list[tuple[str, str]]:
    return [(code, argument) for code, argument, _ in found(source, module) if code in ("WOG001", "WOG010", "WOG011")]


HANDLED = "try:\n    pass\nexcept Exception as e:\n"
WARNING_CACHE = "WarningCache\ncache = WarningCache()"


@pytest.mark.parametrize(
    ("module", "imported", "call", "label"),
    [
        # a function, reached through its package's re-export
        ("deepspeed.runtime.engine", "from deepspeed.utils import log_dist_once", "log_dist_once(e, ranks=[0])",
         "deepspeed's log_dist_once lru_cache"),
        ("ray.rllib.x", "from ray.util import log_once", "log_once(e)", "ray's log_once set of keys"),
        # a logger's method (the cache behind flashinfer's JIT logger)
        ("flashinfer.gemm.x", "from ..jit.core import logger", 'logger.warning_once("failed: %s", e)',
         "flashinfer's JIT logger *_once lru_cache"),
        # a cached function stored on deepspeed's logger instance
        ("deepspeed.comm.comm", "from deepspeed import utils", 'utils.logger.warning_once("failed: %s", e)',
         "deepspeed's logger.warning_once lru_cache"),
        # auto-round's functools.cache patched onto logging.Logger
        ("auto_round_extension.cuda.x", "from auto_round.logger import logger", 'logger.warning_once("%s", e)',
         "auto-round's patched Logger.warning_once/info_once cache"),
        # a set of messages (lightning's WarningCache), its method not named *_once
        ("lightning.pytorch.x", f"from lightning.pytorch.utilities.rank_zero import {WARNING_CACHE}",
         "cache.warn(e)", "lightning's WarningCache (a set of messages)"),
    ],
)  # fmt: skip
def test_a_live_exception_into_each_kind_of_cache_fails_naming_its_row(
    module: str, imported: str, call: str, label: str
) -> None:
    source = f"{imported}\n{HANDLED}    {call}\n"
    assert needs_parse(source)
    ((code, argument, cache),) = found(source, module)
    assert (code, argument) == ("WOG001", "e") and cache.startswith(label), cache


def test_what_a_row_says_its_cache_never_keeps_is_no_error() -> None:
    source = """\
        from deepspeed.utils import log_dist_once
        import warnings

        log_dist_once("loaded", ranks=[0])  # made a tuple before the cache
        log_dist_once("loaded", ranks=[rank, 1])
        log_dist_once("loaded", [0])  # by position too
        warnings.warn(e)  # not a WarningCache
        other.warn(e)  # a receiver not followed to one: only *_once methods count on any logger
        dsl.print_warning_once(e)  # cutlass's, not vLLM's warning_once
        """
    assert failing(source, "deepspeed.runtime.engine") == []
    assert failing("from deepspeed.utils import log_dist_once\nlog_dist_once('m', ranks=[{}])\n", "x.y") == [
        ("WOG010", "ranks=[{}]")  # the tuple still holds a dict
    ]


def test_a_cache_of_a_set_of_messages_keys_on_the_message_alone() -> None:
    source = "from lightning_utilities import WarningCache\nc = WarningCache()\nc.warn('m', stacklevel=e, extra=e)\n"
    assert failing(source, "lightning.x") == []  # neither reaches the set
    assert failing(
        "from auto_round.logger import logger\nlogger.warning_once('m', stacklevel=2)\n", "auto_round.x"
    ) == [
        ("WOG011", "stacklevel=2")  # auto-round's warning_once(self, msg, *args) takes no keyword
    ]


def test_a_bounded_cache_is_described_with_its_size_and_an_unknown_logger_names_no_library() -> None:
    source = f"from axolotl.utils.logging import get_logger\nlogger = get_logger(__name__)\n{HANDLED}"
    ((_, _, cache),) = found(source + "    logger.warning_once('%s', e)\n", "axolotl.cli.x")
    assert cache == "axolotl's MultiProcessAdapter.warning_once lru_cache (axolotl.utils.logging, 10 entries)"
    ((_, _, unknown),) = found(f"{HANDLED}    somebody.warning_once('%s', e)\n", "plugin.x")
    assert "vLLM" not in unknown and "transformers" not in unknown and "whichever logger" in unknown


def test_every_row_has_a_place_for_each_method_it_lists_and_cites_its_source() -> None:
    for key in ("deepspeed", "deepspeed-logger", "deepspeed-dist", "flashinfer", "auto-round", "axolotl", "ray"):
        assert key in BY_KEY
    lightning = BY_KEY["lightning"]
    assert (
        [p.rpartition(".")[2] for p in lightning.runtime] == list(lightning.methods) == ["warn", "info", "deprecation"]
    )
    assert lightning.source.startswith("lightning-utilities 0.15.3 lightning_utilities/core/rank_zero.py:97-116")


# ---- configured entries: each takes effect, or says it takes none -----------------------------------------------


def test_a_configured_logger_cache_whose_methods_are_not_named_once_is_read_and_checked() -> None:
    """Lightning's WarningCache declared as README said: the `_once` prefilter skipped every file (0 of 266 parsed)."""
    (row,) = user_caches(
        [
            {
                "name": "my_plugin.cache.Seen.note",
                "kind": "logger",
                "signature": "(message)",
                "loggers": ["my_plugin.cache.Seen"],
            }
        ],
        "pyproject.toml",
    )
    model = DEFAULT_MODEL.with_rows([row])
    source = f"from my_plugin.cache import Seen\nseen = Seen()\n{HANDLED}    seen.note(e)\n"
    assert "_once" not in source and needs_parse(source, model) and not needs_parse(source)
    assert [(c, a) for c, a, _ in found(source, "my_plugin.x", model)] == [("WOG001", "e")]


def test_a_configured_entry_naming_a_built_in_cache_is_refused_unless_it_replaces_it() -> None:
    entry = {"name": "vllm.logger._VllmLogger.warning_once", "kind": "logger", "signature": "(msg, *args)"}
    with pytest.raises(BadCacheEntry, match="names the built-in cache 'vllm'; say replace = true"):
        user_caches([entry], "pyproject.toml")
    (row,) = user_caches([{**entry, "replace": True, "renders-first": True}], "pyproject.toml")
    model = DEFAULT_MODEL.with_rows([row])
    assert row.replaces == ("vllm",) and model.vllm is None and model.named("vllm.logger._VllmLogger") is row
    with pytest.raises(BadCacheEntry, match="replace = true, but it names no built-in cache"):
        user_caches([{"name": "a.b.c_once", "kind": "function", "signature": "(m)", "replace": True}], "here")


def test_the_run_lists_the_configured_rows_and_says_which_matched_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[[tool.warnonce-guard.cache]]\nname = "my_plugin.log.remember_once"\nkind = "function"\n'
        'signature = "(msg)"\n\n[[tool.warnonce-guard.cache]]\nname = "my_plugin.log.unused_once"\n'
        'kind = "function"\nsignature = "(msg)"\n'
    )
    pkg = tmp_path / "my_plugin"
    pkg.mkdir()
    (pkg / "x.py").write_text(f"from my_plugin.log import remember_once\n{HANDLED}    remember_once(e)\n")
    monkeypatch.chdir(tmp_path)
    assert main(["audit", "my_plugin"]) == ExitCode.CHECK_FAILED
    (note,) = capsys.readouterr().err.splitlines()
    assert "caches: the built-in table and 2 from" in note and "my_plugin.log.remember_once" in note
    assert "'my_plugin.log.unused_once' matched nothing in the files audited" in note
    assert "remember_once' matched" not in note


def test_a_malformed_entry_is_bad_input_on_one_line_naming_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[[tool.warnonce-guard.cache]]\nname = "a.b_once"\nkind = "function"\nsignature = "(m)"\nmaxsize = 0\n'
    )
    (tmp_path / "x.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert main(["audit", "x.py"]) == ExitCode.BAD_INPUT == 3
    (line,) = capsys.readouterr().err.splitlines()
    assert "cache 'a.b_once': maxsize must be a positive integer" in line
