"""`--platform`'s sites are every guarded kernel import its `import_kernels` runs in its file (its own, a method or
module function it calls, a function nested in it), never only those standing in `import_kernels` itself."""

from __future__ import annotations

import textwrap
from pathlib import Path

from warnonce_guard.rule.platforms import PlatformTarget, platform_sites

PLUGIN = """
logger = None


def _module_helper():
    try:
        import myplug._C_mod  # noqa: F401
    except ImportError as e:
        logger.warning_once("mod: %r", e)


def _never_called():
    try:
        import myplug._C_never  # noqa: F401
    except ImportError as e:
        logger.warning_once("never: %r", e)


class MyPlatform:
    @classmethod
    def import_kernels(cls) -> None:
        try:
            import myplug._C  # noqa: F401
        except ImportError as e:
            logger.warning_once("own: %s", repr(e))

        def nested():
            try:
                import myplug._C_nested  # noqa: F401
            except ImportError as e:
                logger.warning_once("nested: %r", e)

        nested()
        cls._load_ext()
        _module_helper()

    @classmethod
    def _load_ext(cls) -> None:
        try:
            import myplug._C_ext  # noqa: F401
        except ImportError as e:
            getattr(logger, "warning_once")("ext: %r", e)

    @classmethod
    def get_attn_backend(cls) -> None:
        try:
            import myplug._C_attn  # noqa: F401
        except ImportError as e:
            logger.warning_once("attn: %r", e)
"""


def test_the_sites_a_platforms_import_kernels_runs_are_its_sites_and_no_others(tmp_path: Path) -> None:
    (tmp_path / "myplug").mkdir()
    (tmp_path / "myplug" / "platform.py").write_text(textwrap.dedent(PLUGIN))
    target = PlatformTarget("myplug.platform:MyPlatform", "myplug.platform", "MyPlatform.import_kernels", tmp_path,
                            "myplug/platform.py")  # fmt: skip

    sites = platform_sites(target)

    assert sorted(s.kernel_module for s in sites) == ["myplug._C", "myplug._C_ext", "myplug._C_mod", "myplug._C_nested"]
    assert {s.driver for s in sites} == {"myplug.platform:MyPlatform"}
