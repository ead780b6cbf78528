"""The environment protocol: every `WARNONCE_GUARD_*` variable is spelled in common/protocol.py alone, and what a
writer tells is what a reader reads."""

from __future__ import annotations

from pathlib import Path

from warnonce_guard.common import protocol

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("common", "rule", "caches", "guards", "audit", "strict", "mutations", "history", "upstream", "cli")


def test_no_module_but_the_protocol_spells_a_variable_of_it() -> None:
    spelled = [
        path.relative_to(ROOT).as_posix()
        for folder in PRODUCT
        for path in (ROOT / folder).rglob("*.py")
        if protocol.PREFIX in path.read_text(encoding="utf-8")
    ]
    assert spelled == ["common/protocol.py"]


def test_what_the_guards_are_told_is_what_they_read_and_a_callers_settings_go() -> None:
    environ = {
        protocol.VLLM_SRC: "/the/users/tree",
        protocol.SITES: "/stale/sites.json",
        protocol.PREFIX + "ANYTHING": "else",
        "PATH": "/bin",
        "MUTANT_UNDER_TEST": "vllm.x__mutmut_1",
    }
    protocol.tell_guards(
        environ,
        attribution="/ws/attribution",
        run_id="run1",
        mutant_variable="MUTANT_UNDER_TEST",
        baseline_phases=("", "stats"),
        mutant_mark="__mutmut_",
        expect_vllm="/site-packages/vllm",
        mutated="/ws/mutants",
        evidence=False,
    )
    protocol.tell_site_functions(environ, {"vllm.x": ["site-a"]})
    told = protocol.settings(environ)

    assert (told.vllm_src, told.sites, told.platform) == (None, None, None)  # the caller's tree and sites went
    assert protocol.PREFIX + "ANYTHING" not in environ and environ["PATH"] == "/bin"  # the rest is kept
    assert (told.attribution, told.run_id, told.expect_vllm, told.mutated, told.evidence) == (
        "/ws/attribution", "run1", "/site-packages/vllm", "/ws/mutants", False
    )  # fmt: skip
    assert (told.mutant, told.baseline_phases, told.mutant_mark) == ("vllm.x__mutmut_1", {"", "stats"}, "__mutmut_")
    assert told.function_sites() == {"vllm.x": ["site-a"]}


def test_nothing_told_reads_as_a_plain_guard_run() -> None:
    told = protocol.settings({})
    assert told.attribution is None and told.evidence and told.parent_pid is None and told.mutant == ""
    assert told.expect_vllm is None and told.mutated is None
    assert told.baseline_phases == {""} and told.function_sites() == {}


def test_a_child_is_told_its_parent() -> None:
    environ: dict[str, str] = {}
    protocol.tell_parent(environ, 4242)
    assert protocol.settings(environ).parent_pid == 4242
