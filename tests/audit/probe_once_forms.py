"""Every once-cache call form of issue 36's Why, written as the libraries' own code and their users write them (read by
`tests/audit/test_probe.py` with the audit, never imported). A `LIVE <code>` line must fail with that code; a `VALID`
line must not fail; a `NOTED <code>` line is shown and does not fail."""

import functools
import logging

from accelerate.logging import get_logger
from optimum.utils.logging import warn_once
from sglang.multimodal_gen.runtime.utils.logging_utils import init_logger as init_multimodal_logger
from sglang.srt.utils import print_warning_once
from torchtune.utils._logging import log_once
from transformers.utils import logging as hf_logging
from vllm.logger import init_logger

logger = hf_logging.get_logger(__name__)  # transformers' patched Logger.warning_once: lru_cache(None)
std_logger = logging.getLogger(__name__)  # the same patch, on every logging.Logger once transformers is imported
alogger = get_logger(__name__)  # accelerate's MultiProcessAdapter.warning_once: lru_cache(None)
mm_logger = init_multimodal_logger(__name__)  # sglang's multimodal logger: renders first, keeps text
vllm_logger = init_logger(__name__)  # vLLM's _print_*_once: lru_cache(128)


@functools.lru_cache(None)
def _report_once(logger: logging.Logger, msg: object) -> None:
    logger.warning(msg)


class Model:
    def load(self) -> None:
        try:
            import my_kernels  # noqa: F401
        except ImportError as e:
            logger.warning_once("Kernels missing, falling back", stacklevel=2)  # VALID transformers takes stacklevel
            alogger.warning_once("Kernels missing on this rank", main_process_only=False)  # VALID accelerate takes it
            logger.warning_once("failed", exc_info=e)  # LIVE WOG001 exc_info reaches transformers' cache
            logger.warning_once("failed", exc_info=True)  # VALID logging reads the handled exception; True is kept
            warn_once(logger, e)  # LIVE WOG001 optimum
            warn_once(logger, f"failed: {e}")  # VALID
            log_once(logger, e)  # LIVE WOG001 torchtune
            log_once(logger, str(e), level=logging.WARNING)  # VALID
            print_warning_once(e)  # LIVE WOG001 sglang
            print_warning_once(f"failed: {e!r}")  # VALID
            _report_once(std_logger, e)  # LIVE WOG001 an lru_cache'd *_once function of this module
            _report_once(std_logger, repr(e))  # VALID
            mm_logger.warning_once("failed: %s", e)  # NOTED WOG013 it renders first: only text is kept
            logger.warning_once("loading %s", self)  # LIVE WOG012 the model, pinned by an unbounded cache
            logger.warning_once("loading %s", type(self).__name__)  # VALID
            std_logger.info_once("failed: %r", e)  # LIVE WOG001
            vllm_logger.warning_once("failed: %r", e)  # LIVE WOG001
            vllm_logger.warning_once("failed: %s", repr(e), scope="global")  # VALID vLLM takes scope, never cached
            vllm_logger.warning_once("failed: %s", repr(e), stacklevel=2)  # LIVE WOG011 vLLM's takes no stacklevel
            mm_logger.warning_once("failed: %s", repr(e), stacklevel=2)  # LIVE WOG011 nor does sglang's multimodal
