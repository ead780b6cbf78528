"""Settings as ruff users expect them: `[tool.warnonce-guard]` of the nearest pyproject.toml, rule selection with ruff's
precedence, the command line over the configuration, and one line for anything wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from warnonce_guard.audit.config import find
from warnonce_guard.audit.rules import RULES
from warnonce_guard.audit.selection import DEFAULT, EVERY, Layer, resolve
from warnonce_guard.cli.main import main
from warnonce_guard.common.errors import UsageError

NOISE_AND_LEAK = """\
def f(x):
    try:
        pass
    except Exception as e:
        logger.warning_once("%s %s", x, e)
"""


def cli(*select: str, ignore: tuple[str, ...] = (), extend: tuple[str, ...] = ()) -> Layer:
    return Layer("the command line", select or None, extend, ignore)


def test_the_default_selection_is_every_error_and_every_info() -> None:
    assert {rule.code for rule in RULES if rule.severity in ("error", "info")} == DEFAULT
    assert {"WOG000", "WOG001", "WOG013", "WOG100"} <= DEFAULT and "WOG002" not in DEFAULT
    assert resolve([]) == DEFAULT


@pytest.mark.parametrize(
    ("layers", "selected"),
    [
        ([cli("ALL", ignore=("WOG002",))], EVERY - {"WOG002"}),
        ([cli("WOG002", ignore=("ALL",))], {"WOG002"}),  # the more specific selector wins
        ([cli("WOG00", ignore=("WOG00",))], set()),  # at the same specificity, ignore wins
        ([cli("WOG00", ignore=("WOG0",))], {f"WOG00{i}" for i in range(10)}),
        ([cli(extend=("WOG002",))], DEFAULT | {"WOG002"}),
        ([cli(ignore=("WOG1",))], DEFAULT - {"WOG100", "WOG101"}),
        # the command line's layer comes after the configuration's: its extend-select re-selects what the
        # configuration ignores, its select starts over
        ([Layer("pyproject.toml", ignore=("WOG001",)), cli(extend=("WOG001",))], DEFAULT),
        ([Layer("pyproject.toml", select=("WOG002",)), cli(extend=("WOG003",))], {"WOG002", "WOG003"}),
        ([Layer("pyproject.toml", select=("WOG002",)), cli("WOG003")], {"WOG003"}),
        # ALL is the least specific selector: any prefix wins over it, whichever side either is on
        ([cli(ignore=("ALL",), extend=("WOG",))], EVERY),
        ([cli(ignore=("ALL",), extend=("WOG0",))], {f"WOG0{i:02}" for i in range(14)}),
        ([cli("ALL", ignore=("WOG",))], set()),
        ([cli("ALL", ignore=("ALL",))], set()),  # a tie: ignore wins
    ],
)
def test_selection_resolves_as_ruff_does(layers: list[Layer], selected: set[str]) -> None:
    assert resolve(layers) == selected


@pytest.mark.parametrize("selector", ["WOG999", "WOG9", "WO", "E501", "all", ""])
def test_an_unknown_selector_is_a_usage_error_naming_it(selector: str) -> None:
    with pytest.raises(UsageError, match=f"unknown rule selector {selector!r}"):
        resolve([cli(selector)])


def test_the_unknown_selector_error_lists_every_known_code_and_where_it_is_written() -> None:
    with pytest.raises(UsageError) as raised:
        resolve([Layer("pyproject.toml", select=("WOG9",))])
    known = ", ".join(rule.code for rule in RULES)
    assert str(raised.value) == f"pyproject.toml: unknown rule selector 'WOG9' (want ALL, a code or a prefix: {known})"
    assert len(RULES) == 16


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_nearest_pyproject_with_the_table_is_read_and_its_folder_is_the_root(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.warnonce-guard]\nselect = ["WOG002"]\n')
    write(tmp_path / "pkg" / "pyproject.toml", "[tool.ruff]\n")  # no table of ours: passed over, as ruff does
    (tmp_path / "pkg" / "sub").mkdir()
    config = find([tmp_path / "pkg" / "sub"], tmp_path / "pkg")
    assert (config.file, config.root, config.lists) == (tmp_path / "pyproject.toml", tmp_path, {"select": ("WOG002",)})


def test_without_a_configuration_the_root_is_the_git_work_tree_else_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "pkg").mkdir()
    (tmp_path / "loose").mkdir()
    assert find([tmp_path / "repo" / "pkg"], tmp_path).root == tmp_path / "repo"
    assert find([tmp_path / "loose"], tmp_path / "loose").root == tmp_path / "loose"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[tool.warnonce-guard\n", "not valid TOML"),
        ('[tool.warnonce-guard]\nselekt = ["WOG001"]\n', "unknown key 'selekt'"),
        ('[tool.warnonce-guard]\nselect = "WOG001"\n', "select must be a list of strings"),
        ('[tool.warnonce-guard]\nforce-exclude = "yes"\n', "force-exclude must be true or false"),
        ("[tool]\nwarnonce-guard = 1\n", "not a table"),
        ('[tool.warnonce-guard]\nselect = ["WOG999"]\n', "unknown rule selector 'WOG999'"),
    ],
)
def test_a_bad_configuration_is_one_line_naming_the_file_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    write(tmp_path / "pyproject.toml", text)
    write(tmp_path / "pkg" / "x.py", NOISE_AND_LEAK)
    monkeypatch.chdir(tmp_path)
    code = main(["audit", "pkg"])
    out, err = capsys.readouterr()
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert str(tmp_path / "pyproject.toml") in err and message in err


def test_an_unknown_code_on_the_command_line_is_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "pkg" / "x.py", NOISE_AND_LEAK)
    monkeypatch.chdir(tmp_path)
    for option in ("--select", "--ignore", "--extend-select"):
        code = main(["audit", "pkg", option, "WOG001,WOG777"])
        out, err = capsys.readouterr()
        assert (code, out, err.count("\n")) == (2, "", 1) and "'WOG777'" in err


def codes_reported(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    code = main(["audit", *argv])
    return code, [line.split()[1] for line in capsys.readouterr().out.splitlines()[:-1]]


def test_the_configuration_selects_and_the_command_line_overrides_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "pkg" / "x.py", NOISE_AND_LEAK)
    monkeypatch.chdir(tmp_path)
    assert codes_reported(capsys, "pkg") == (1, ["WOG001"])
    write(tmp_path / "pyproject.toml", '[tool.warnonce-guard]\nextend-select = ["WOG002"]\nignore = ["WOG001"]\n')
    assert codes_reported(capsys, "pkg") == (1, ["WOG002"])
    assert codes_reported(capsys, "pkg", "--ignore", "WOG002") == (0, [])
    assert codes_reported(capsys, "pkg", "--select", "WOG001") == (1, ["WOG001"])
    assert codes_reported(capsys, "pkg", "--strict") == (1, ["WOG002", "WOG001"])
    assert codes_reported(capsys, "pkg", "--exit-zero") == (0, ["WOG002"])


def test_strict_is_select_all_and_not_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "pkg" / "x.py", NOISE_AND_LEAK)
    monkeypatch.chdir(tmp_path)
    assert codes_reported(capsys, "pkg", "--strict") == codes_reported(capsys, "pkg", "--select", "ALL")
    code = main(["audit", "pkg", "--strict", "--select", "WOG001"])
    assert code == 2 and "not both" in capsys.readouterr().err
