"""The miniature vLLM a mutation run works on (no torch): its logger, a platform module with one kernel-import
site, the tree they make, and the mutants an operator makes of a module. Written once for the tests
(tests/toy.py builds on it), the fault campaign (tools/campaign) and the benchmark (bench/)."""

from __future__ import annotations

from pathlib import Path

from warnonce_guard.caches.cache_fix import patched

LOGGER_SOURCE = """
import logging
from functools import lru_cache
from types import MethodType


@lru_cache
def _print_debug_once(logger, msg, *args):
    logger.debug(msg, *args, stacklevel=3)


@lru_cache
def _print_info_once(logger, msg, *args):
    logger.info(msg, *args, stacklevel=3)


@lru_cache
def _print_warning_once(logger, msg, *args):
    logger.warning(msg, *args, stacklevel=3)


@lru_cache
def _print_error_once(logger, msg, *args):
    logger.error(msg, *args, stacklevel=3)


def _debug_once(self, msg, *args):
    _print_debug_once(self, msg, *args)


def _info_once(self, msg, *args):
    _print_info_once(self, msg, *args)


def _warning_once(self, msg, *args):
    _print_warning_once(self, msg, *args)


def _error_once(self, msg, *args):
    _print_error_once(self, msg, *args)


_METHODS_TO_PATCH = {
    "debug_once": _debug_once,
    "info_once": _info_once,
    "warning_once": _warning_once,
    "error_once": _error_once,
}


def init_logger(name):
    logger = logging.getLogger(name)
    for method_name, method in _METHODS_TO_PATCH.items():
        setattr(logger, method_name, MethodType(method, logger))
    return logger
"""

# The toy logger with the cache-level fix of `warnonce-guard export-fix` (render first, cache the text).
FIXED_LOGGER_SOURCE = patched(LOGGER_SOURCE)

# A platform module with one kernel-import site; PKG is the package, CALL the handler's logging call.
PLATFORM_SOURCE = """
from PKG.logger import init_logger

logger = init_logger(__name__)


class Platform:
    @classmethod
    def import_kernels(cls) -> None:
        try:
            import PKG._C  # noqa: F401
        except ImportError as e:
            CALL
"""

EAGER_CALL = 'logger.warning_once("Failed to import from PKG._C: %s", repr(e))'

# The miniature vLLM a mutation run works on (no torch): a logger and one platform module with one eager site.
INTERFACE = PLATFORM_SOURCE.replace("CALL", EAGER_CALL).replace("PKG", "vllm")


def make_tree(root: Path, interface: str = INTERFACE, logger: str = LOGGER_SOURCE) -> Path:
    """`root/vllm/` shaped like vLLM: _version.py, logger.py (`logger`) and platforms/interface.py (`interface`)."""
    package = root / "vllm"
    (package / "platforms").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "_version.py").write_text("__version__ = version = '9.9.9'\n__commit_id__ = commit_id = 'gtoy'\n")
    (package / "logger.py").write_text(logger)
    (package / "platforms" / "__init__.py").write_text("")
    (package / "platforms" / "interface.py").write_text(interface)
    return root


def apply_operator(name: str, source: str) -> list[str]:
    """Every mutant one operator makes of a module, unanchored: the mutated source per mutant, in source order."""
    import libcst as cst
    from warnonce_guard.mutations.operators import OPERATORS, mutate_try
    from warnonce_guard.rule.site_rule import TryNode, walk

    module = cst.parse_module(source)
    mutants = []
    for try_node in (node for node in walk(module) if isinstance(node, TryNode)):
        for mutated in mutate_try(OPERATORS[name].function, try_node):
            replaced = module.deep_replace(try_node, mutated)
            assert isinstance(replaced, cst.Module)
            mutants.append(replaced.code)
    return mutants
