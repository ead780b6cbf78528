"""Branch steering on a synthetic module: each rule forces its test both ways and everything is put back."""

from __future__ import annotations

import enum
import types

import pytest
from warnonce_guard.guards.steering import CannotSteer, steered
from warnonce_guard.rule.site_row import Condition


class Arch(enum.Enum):
    X86 = "x86"
    ARM = "arm"
    POWER = "power"


def make_module() -> types.ModuleType:
    """`torch`-like namespace with flags, an `Arch` enum and a class whose classmethod reports the arch."""

    class ArchCls:
        @classmethod
        def get_arch(cls) -> Arch:
            raise RuntimeError("steering must patch get_arch, not call it")

    def avx512() -> bool:
        raise RuntimeError("steering must patch the flag, not call it")

    module = types.ModuleType("toy_platform")
    module.Arch = Arch
    module.arch_cls = ArchCls
    module.ns = types.SimpleNamespace(cpu=types.SimpleNamespace(flag=avx512, enabled=None), other=avx512)
    module.MODE = "real"
    return module


def run(expr: str, want: bool, module: types.ModuleType) -> bool:
    """Steer `expr` to `want`, then evaluate it in the module as the site's `if` would."""
    with steered((Condition(expr, want),), module):
        return bool(eval(expr, vars(module)))


@pytest.fixture
def module() -> types.ModuleType:
    return make_module()


@pytest.mark.parametrize("want", [True, False])
@pytest.mark.parametrize(
    "expr",
    [
        "arch_cls.get_arch() in (Arch.X86,)",
        "arch_cls.get_arch() not in (Arch.X86,)",
        "arch_cls.get_arch() == Arch.ARM",
        "arch_cls.get_arch() is not Arch.ARM",
        "ns.cpu.flag()",
        "not ns.cpu.flag()",
        "ns.cpu.flag() and ns.other()",
        "ns.cpu.flag() or ns.other()",
        "not (ns.cpu.flag() and arch_cls.get_arch() in (Arch.X86, Arch.ARM))",
        "ns.cpu.enabled",
    ],
)
def test_test_takes_the_wanted_value(module: types.ModuleType, expr: str, want: bool) -> None:
    assert run(expr, want, module) is want


def test_membership_steered_true_returns_a_member(module: types.ModuleType) -> None:
    with steered((Condition("arch_cls.get_arch() in (Arch.X86,)", True),), module):
        assert module.arch_cls.get_arch() is Arch.X86


def test_membership_steered_false_returns_another_member_of_the_enum(module: types.ModuleType) -> None:
    with steered((Condition("arch_cls.get_arch() in (Arch.X86,)", False),), module):
        arch = module.arch_cls.get_arch()

    assert isinstance(arch, Arch)
    assert arch is not Arch.X86


def test_steered_calls_are_counted_by_their_source(module: types.ModuleType) -> None:
    with steered((Condition("ns.cpu.flag()", True),), module) as patches:
        module.ns.cpu.flag()
        module.ns.cpu.flag()

    assert patches.calls == {"ns.cpu.flag()": 2}


def test_and_steered_false_patches_only_the_first_operand(module: types.ModuleType) -> None:
    with steered((Condition("ns.cpu.flag() and ns.other()", False),), module):
        assert module.ns.cpu.flag() is False
        with pytest.raises(RuntimeError):
            module.ns.other()


def test_classmethod_descriptor_is_put_back(module: types.ModuleType) -> None:
    before = module.arch_cls.__dict__["get_arch"]

    run("arch_cls.get_arch() in (Arch.X86,)", True, module)

    assert module.arch_cls.__dict__["get_arch"] is before
    assert isinstance(module.arch_cls.__dict__["get_arch"], classmethod)


def test_inherited_method_is_patched_on_the_subclass_and_removed_after(module: types.ModuleType) -> None:
    module.sub_cls = type("SubCls", (module.arch_cls,), {})

    assert run("sub_cls.get_arch() == Arch.POWER", True, module)

    assert "get_arch" not in module.sub_cls.__dict__
    with pytest.raises(RuntimeError, match="not call it"):
        module.sub_cls.get_arch()


def test_module_and_namespace_attributes_are_put_back(module: types.ModuleType) -> None:
    cpu = types.ModuleType("toy_torch_cpu")
    cpu._is_avx512_supported = real_flag = lambda: True
    module.torch = types.SimpleNamespace(cpu=cpu)
    enabled = module.ns.cpu.enabled
    conditions = (Condition("torch.cpu._is_avx512_supported()", False), Condition("ns.cpu.enabled", True))

    with steered(conditions, module):
        assert cpu._is_avx512_supported() is False
        assert module.ns.cpu.enabled is True

    assert cpu._is_avx512_supported is real_flag
    assert module.ns.cpu.enabled is enabled


def test_attribute_missing_before_is_removed_after(module: types.ModuleType) -> None:
    module.ns.cpu.__dict__.pop("enabled")

    with steered((Condition("ns.cpu.enabled", True),), module):
        assert module.ns.cpu.enabled is True

    assert not hasattr(module.ns.cpu, "enabled")


def run_all(conditions: tuple[Condition, ...], module: types.ModuleType) -> None:
    with steered(conditions, module):
        pass


def test_patches_are_undone_when_a_later_condition_cannot_be_steered(module: types.ModuleType) -> None:
    flag = module.ns.cpu.flag

    with pytest.raises(CannotSteer):
        run_all((Condition("ns.cpu.flag()", True), Condition("ns.cpu.flag() > 3", True)), module)

    assert module.ns.cpu.flag is flag


def test_patches_are_undone_when_the_body_raises(module: types.ModuleType) -> None:
    before = module.arch_cls.__dict__["get_arch"]

    with pytest.raises(KeyError), steered((Condition("arch_cls.get_arch() in (Arch.X86,)", True),), module):
        raise KeyError("boom")

    assert module.arch_cls.__dict__["get_arch"] is before


def test_conditions_inside_the_handler_are_left_alone(module: types.ModuleType) -> None:
    with steered((Condition("ignored_msg not in e.msg", True, in_handler=True),), module) as patches:
        pass

    assert patches.calls == {}


@pytest.mark.parametrize(
    ("expr", "reason"),
    [
        ("ns.cpu.flag() > 3", "no rule"),
        ("len(ns.cpu) == 1", "takes arguments"),
        ("ns.cpu.flag(1)", "no rule"),
        ("is_fast()", "bare name"),
        ("cls.get_arch() in (Arch.X86,)", "cannot evaluate"),
        ("arch_cls.get_arch() in UNKNOWN", "cannot evaluate"),
        ("x", "no rule"),
    ],
)
def test_expression_without_a_rule_raises_cannot_steer(module: types.ModuleType, expr: str, reason: str) -> None:
    module.is_fast = lambda: False

    with pytest.raises(CannotSteer, match=reason):
        run_all((Condition(expr, True),), module)
