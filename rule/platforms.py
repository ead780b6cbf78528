"""Platform plugins: guard any platform class, and list the ones registered with vLLM.

Out-of-tree platforms subclass `vllm.platforms.interface.Platform`. One that does not override
`import_kernels` runs the base class's site; one that does has sites of its own, in its own package.
`--platform module:Class` targets the sites of whichever class defines the `import_kernels` the given
class runs, and the guards call them through the given class.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
from dataclasses import dataclass, replace
from pathlib import Path

from warnonce_guard.common.errors import NothingToCheck, PlatformImportFailed, PlatformNotFound
from warnonce_guard.rule.sites import Site, sites_in_source
from warnonce_guard.rule.target import PACKAGE

ENTRY_POINT_GROUP = "vllm.platform_plugins"
METHOD = "import_kernels"


@dataclass(frozen=True)
class PlatformTarget:
    spec: str  # module:Class, as given
    defining_module: str  # where the import_kernels it runs is defined
    defining_qualname: str  # e.g. Platform.import_kernels
    root: Path  # the directory holding the defining module's top-level package
    file: str  # the defining module's file, relative to root

    @property
    def package(self) -> str:
        return self.defining_module.split(".")[0]


def _split(spec: str) -> tuple[str, str]:
    if ":" in spec:
        module, _, name = spec.partition(":")
    else:
        module, _, name = spec.rpartition(".")
    if not module or not name:
        raise PlatformNotFound(f"--platform {spec}: give it as module:Class, e.g. my_plugin.platform:MyPlatform")
    return module, name


def load_class(spec: str) -> type:
    module_name, name = _split(spec)
    try:
        owner: object = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if not _names_the_module(err.name, module_name):  # the plugin is there; something it imports is not
            raise PlatformImportFailed(
                f"--platform {spec}: {module_name} fails to import: {err}; install what it needs here"
            ) from None
        raise PlatformNotFound(f"--platform {spec}: cannot import {module_name} ({err}); install the plugin") from None
    except Exception as err:  # the module is there and raises (ImportError, SyntaxError, anything) on import
        raise PlatformImportFailed(
            f"--platform {spec}: {module_name} fails to import: {type(err).__name__}: {err}"
        ) from None
    for part in name.split("."):
        owner = getattr(owner, part, None)
        if owner is None:
            raise PlatformNotFound(f"--platform {spec}: {module_name} has no class {name}")
    if not isinstance(owner, type):
        raise PlatformNotFound(f"--platform {spec}: {name} is not a class")
    return owner


def _names_the_module(missing: str | None, module_name: str) -> bool:
    """The missing module is `module_name` or a package on its way (`no_such_plugin` of `no_such_plugin.x`)."""
    return missing is not None and (module_name == missing or module_name.startswith(f"{missing}."))


def resolve_platform(spec: str) -> PlatformTarget:
    """Which class's `import_kernels` the platform runs, and where that class's source is."""
    cls = load_class(spec)
    definer = next((klass for klass in cls.__mro__ if METHOD in vars(klass)), None)
    if definer is None:
        raise PlatformNotFound(f"--platform {spec}: {cls.__name__} has no {METHOD}; is it a vLLM Platform?")
    source = inspect.getsourcefile(definer)
    module = importlib.import_module(definer.__module__)
    if source is None or module.__file__ is None:
        raise PlatformNotFound(f"--platform {spec}: no Python source for {definer.__module__}")
    depth = definer.__module__.count(".") + (1 if Path(module.__file__).name == "__init__.py" else 0)
    root = Path(source).resolve().parents[depth]
    return PlatformTarget(
        spec=f"{cls.__module__}:{cls.__qualname__}",
        defining_module=definer.__module__,
        defining_qualname=f"{definer.__qualname__}.{METHOD}",
        root=root,
        file=Path(source).resolve().relative_to(root).as_posix(),
    )


def platform_sites(target: PlatformTarget) -> list[Site]:
    """The cached sites the platform runs, each to be driven through the platform class."""
    source = (target.root / target.file).read_text(encoding="utf-8")
    sites = sites_in_source(source, target.file, target.defining_module, target.package)
    if target.package != PACKAGE:  # a plugin's own kernels, or vLLM's, may be imported there
        sites += [s for s in sites_in_source(source, target.file, target.defining_module, PACKAGE) if s not in sites]
    chosen = [replace(s, driver=target.spec) for s in sites if s.qualname == target.defining_qualname and s.cached]
    if not chosen:
        raise NothingToCheck(
            f"platform {target.spec} runs {target.defining_module}.{target.defining_qualname}, "
            "which has no kernel-import site logging through a *_once call; nothing to guard"
        )
    return chosen


@dataclass(frozen=True)
class RegisteredPlatform:
    name: str  # the entry point's name
    entry_point: str  # its value, the plugin function
    platform: str | None  # the class path the function returns (None: not available on this machine)
    error: str | None = None


def registered_platforms() -> list[RegisteredPlatform]:
    """Platforms registered under vLLM's `vllm.platform_plugins` entry points, with what each resolves to."""
    found = []
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            platform = entry.load()()
            found.append(RegisteredPlatform(entry.name, entry.value, platform))
        except Exception as err:  # a broken plugin is reported, not fatal
            found.append(RegisteredPlatform(entry.name, entry.value, None, f"{type(err).__name__}: {err}"))
    return sorted(found, key=lambda p: p.name)
