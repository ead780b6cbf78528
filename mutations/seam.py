"""Plugging our operators into mutmut 3.8.1, which has no hook for custom operators.

The narrowest seam: `mutmut.mutation.file_mutation.create_mutations` reads the module global
`mutation_operators` (imported by name from `mutmut.mutation.mutators`) on every call. Swapping that one
attribute for our list turns every stock operator off and ours on. mutmut generates mutants in a
`fork`ed pool, so children inherit the swap as long as it is active when mutmut starts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata

from guards.errors import EngineFailed
from guards.site_rule import DEFAULT_KERNEL_PATTERN
from mutations.operators import PACKAGE, Anchors, operators_for

PINNED_MUTMUT = "3.8.1"
SEAM_MODULE = "mutmut.mutation.file_mutation"
SEAM_ATTRIBUTE = "mutation_operators"


class SeamMismatch(EngineFailed):
    """mutmut is not the version whose internals the operator seam was written against."""


def check_seam() -> None:
    """Raise `SeamMismatch` unless mutmut is 3.8.1 and `create_mutations` reads the global we replace."""
    version = metadata.version("mutmut")
    if version != PINNED_MUTMUT:
        raise SeamMismatch(
            f"mutmut {version} is installed but the operator seam targets {PINNED_MUTMUT}; "
            f"install mutmut=={PINNED_MUTMUT} or re-check {SEAM_MODULE}.{SEAM_ATTRIBUTE}"
        )
    from mutmut.mutation import file_mutation

    if not hasattr(file_mutation, SEAM_ATTRIBUTE):
        raise SeamMismatch(f"{SEAM_MODULE} has no `{SEAM_ATTRIBUTE}`: the operator seam is gone; re-check mutmut")
    code = getattr(getattr(file_mutation, "create_mutations", None), "__code__", None)
    if code is None or SEAM_ATTRIBUTE not in code.co_names:
        raise SeamMismatch(
            f"{SEAM_MODULE}.create_mutations no longer reads the global `{SEAM_ATTRIBUTE}`; "
            "swapping it would leave mutmut's stock operators on"
        )


@contextmanager
def our_operators(
    package: str | Sequence[str] = PACKAGE, pattern: str = DEFAULT_KERNEL_PATTERN, anchors: Anchors | None = None
) -> Iterator[None]:
    """Within the block, mutmut makes only our mutants (stock operators off); restored on exit.

    Several packages (vLLM and a platform plugin) give one block of operators each, in that order.
    With `anchors` (`operators.anchors_of(sites)`) they fire only in the tries of those sites.
    """
    check_seam()
    from mutmut.mutation import file_mutation

    packages = (package,) if isinstance(package, str) else tuple(package)
    stock = getattr(file_mutation, SEAM_ATTRIBUTE)
    table = [pair for p in packages for pair in operators_for(p, pattern, anchors)]
    setattr(file_mutation, SEAM_ATTRIBUTE, table)
    try:
        yield
    finally:
        setattr(file_mutation, SEAM_ATTRIBUTE, stock)
