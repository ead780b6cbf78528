"""The audit on synthetic sources: which `*_once` arguments can keep a live object, and the baseline ratchet."""

from __future__ import annotations

import importlib.util
import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from warnonce_guard.audit import grammar
from warnonce_guard.audit.baseline import load_baseline
from warnonce_guard.audit.findings import Finding
from warnonce_guard.audit.paths import tree_files
from warnonce_guard.audit.run import audit_files
from warnonce_guard.audit.scan import findings_in_source
from warnonce_guard.cli.main import main
from warnonce_guard.common.errors import BadBaseline

FILE = "vllm/platforms/x.py"


def find(source: str, file: str = FILE) -> list[Finding]:
    return findings_in_source(textwrap.dedent(source), file)


def logged(arg: str, setup: str = "") -> str:
    """A function that logs `arg` from inside `except Exception as e` (with `setup` lines first)."""
    lines = ["def f(x, xs):", "    try:", "        pass", "    except Exception as e:"]
    lines += [f"        {line}" for line in setup.splitlines()]
    lines.append(f'        logger.warning_once("msg %s", {arg})')
    return "\n".join(lines) + "\n"


def kinds(source: str) -> list[tuple[str, str]]:
    return [(f.argument, f.kind) for f in find(source)]


VLLM_LOGGER = "from vllm.logger import init_logger\n\nlogger = init_logger(__name__)\n"


def vllm_logged(arg: str) -> str:
    """`logged(arg)` through vLLM's logger (its `init_logger`): the call is checked against vLLM's signature alone."""
    return f"{VLLM_LOGGER}\n\n{logged(arg)}"


# ---- what is safe, what is live -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "arg",
    [
        "'text'",
        "3",
        "1.5",
        "None",
        "True",
        "b'raw'",
        "f'{e}'",
        "repr(e)",
        "str(e)",
        "ascii(e)",
        "format(e, '')",
        "'{}'.format(e)",
        "f'{x}: {{}}'.format(e)",
        "'%s' % (e,)",
        "', '.join(xs)",
        "', '.join(map(str, e.args))",
        "len(xs)",
        "int(x)",
        "float(x)",
        "bool(e)",
        "type(e).__name__",
        "type(x).__qualname__",
        "(repr(e), 1, 'a')",
        "not e",
        "e is None",
        "x in xs",
        "1 + 2",
        "'a' if x else 'b'",
        "hasattr(e, 'errno')",
    ],
)
def test_safe_argument_is_not_reported(arg: str) -> None:
    assert find(logged(arg)) == []


@pytest.mark.parametrize(
    ("arg", "kind"),
    [
        ("e", "exception"),
        ("e.__traceback__", "exception"),
        ("e.args", "attribute"),
        ("type(e)", "call"),
        ("e.with_traceback(None)", "exception"),
        ("foo(e)", "exception"),
        ("(e, 1)", "exception"),
        ("e.__class__.__name__", "exception"),
        ("x", "name"),
        ("x.__name__", "attribute"),
        ("foo(x).__name__", "attribute"),
        ("-x", "expression"),
        ("x.attr", "attribute"),
        ("xs[0]", "subscript"),
        ("foo(x)", "call"),
        ("type(x)", "call"),
        ("x.__class__.__name__", "attribute"),
        ("sep.join(xs)", "call"),
        ("(x, 1)", "container"),
        ("(y for y in xs)", "container"),
        ("[1, 2]", "unhashable"),
        ("{'a': 1}", "unhashable"),
        ("{x}", "unhashable"),
        ("[y for y in xs]", "unhashable"),
        ("{y: 1 for y in xs}", "unhashable"),
        ("sorted(xs)", "unhashable"),
        ("list(xs)", "unhashable"),
        ("(1, [x])", "unhashable"),
        ("[e]", "unhashable"),
        ("sys.exc_info()[1]", "exception"),
        ("sys.exc_info()", "exception"),
        ("sys.exception()", "exception"),
        ("sys.exc_info()[0]", "subscript"),
        ("*xs", "starred"),
        ("lambda: 1", "lambda"),
        ("x + 1", "expression"),
        ("x if x else 'b'", "expression"),
        ("x == 1", "expression"),
    ],
)
def test_live_argument_is_reported_with_its_kind(arg: str, kind: str) -> None:
    assert kinds(logged(arg)) == [(arg, kind)]


def test_message_that_is_not_a_literal_is_checked_like_any_argument() -> None:
    source = """\
        logger.info_once(MESSAGE)
        logger.info_once(f"{MESSAGE}")
        logger.info_once("%s" % MESSAGE)
    """
    assert kinds(source) == [("MESSAGE", "name")]


def test_keywords_are_checked_except_scope() -> None:
    source = """\
        logger.warning_once("msg", scope=where)
        logger.warning_once(msg=text)
        logger.warning_once("msg", **kw)
    """
    assert kinds(VLLM_LOGGER + textwrap.dedent(source)) == [("msg=text", "name"), ("**kw", "starred")]


@pytest.mark.parametrize(("keyword", "kind"), [("stacklevel=2", "keyword"), ("**kw", "starred"), ("msg=e", "keyword")])
def test_a_keyword_after_scope_is_still_checked(keyword: str, kind: str) -> None:
    assert kinds(vllm_logged(f"repr(e), scope='local', {keyword}")) == [(keyword, kind)]


@pytest.mark.parametrize("kwargs", ["**{'error': e}", "**dict(error=e)"])
def test_double_star_keywords_that_carry_the_exception_are_the_exception(kwargs: str) -> None:
    (finding,) = find(logged(f"repr(e), {kwargs}"))
    assert (finding.argument, finding.kind, finding.code, finding.line) == (kwargs, "exception", "WOG001", 5)


@pytest.mark.parametrize("keyword", ["exc_info=True", "extra={'a': e}", "stack_info=True", "stacklevel=2"])
def test_a_keyword_vllms_once_methods_do_not_take_makes_the_call_raise(keyword: str) -> None:
    (finding,) = find(vllm_logged(f"repr(e), {keyword}"))
    assert (finding.argument, finding.kind, finding.code) == (keyword, "keyword", "WOG011")
    assert "raises TypeError" in finding.message and "kept by the cache" not in finding.message
    assert "vllm.logger's warning_once does not take (it takes (msg, *args, scope='local'))" in finding.message
    assert finding.fix is None


@pytest.mark.parametrize("keyword", ["exc_info=True", "stack_info=True", "stacklevel=2"])
def test_a_keyword_logging_takes_is_no_error_on_a_logger_not_known_here(keyword: str) -> None:
    assert find(logged(f"repr(e), {keyword}")) == []  # transformers' patched warning_once takes it


def test_a_keyword_no_logger_takes_makes_the_call_raise_whatever_the_logger() -> None:
    (finding,) = find(logged("repr(e), colour='red'"))
    assert (finding.argument, finding.code) == ("colour='red'", "WOG011")
    assert "no logger's call it may be (the logger is not known here) takes it (vllm.logger's: " in finding.message


def test_keywords_no_logger_takes_together_make_the_call_raise_naming_the_one_most_refuse() -> None:
    (finding,) = find(logged("repr(e), scope='local', stacklevel=2"))  # vLLM's takes one, transformers' the other
    assert (finding.argument, finding.code) == ("scope='local'", "WOG011")
    assert "takes it with the call's other keywords" in finding.message


def test_a_message_given_twice_makes_the_call_raise() -> None:
    assert kinds('logger.warning_once("a", msg="b")') == [("msg='b'", "keyword")]


def test_every_once_level_and_any_receiver_is_audited_but_plain_calls_are_not() -> None:
    """A method that merely ends like a cache's (cutlass's `BaseDSL.print_warning_once`) is not that cache's."""
    source = """\
        logger.debug_once("%s", a)
        self.log.info_once("%s", b)
        get_logger().error_once("%s", c)
        self._warning_once("%s", d)
        dsl.print_warning_once("%s", e)
        logger.warning("%s", f)
        warning_once("%s", g)
    """
    assert [(f.level, f.argument) for f in find(source)] == [
        ("debug_once", "a"),
        ("info_once", "b"),
        ("error_once", "c"),
        ("_warning_once", "d"),
    ]


# ---- aliases: the *_once methods as values -------------------------------------------------------


def test_aliases_of_the_once_methods_are_followed_within_the_module() -> None:
    source = """\
        import functools
        warn = logger.warning_once
        again = warn
        note = getattr(logger, "info_once")

        class Platform:
            def __init__(self):
                self._debug = logger.debug_once

            def import_kernels(self):
                try:
                    pass
                except ImportError as e:
                    warn("Failed: %r", e)
                    again("Failed: %r", e)
                    note("Failed: %s", e)
                    self._debug("Failed: %s", e)
                    getattr(logger, "error_once")("Failed: %s", e)
                    warning("Failed: %s", e)  # not an alias: plain logging, not audited
    """
    found = find(source)
    assert [(f.level, f.argument, f.kind) for f in found] == [
        ("warning_once", "e", "exception"),
        ("warning_once", "e", "exception"),
        ("info_once", "e", "exception"),
        ("debug_once", "e", "exception"),
        ("error_once", "e", "exception"),
    ]
    assert found[0].message.startswith("warn(...) (warning_once) passes `e`")
    assert found[3].message.startswith("self._debug(...) (debug_once) passes `e`")


def test_a_partial_of_a_once_method_passes_what_it_binds_and_what_it_is_called_with() -> None:
    source = """\
        import functools
        from functools import partial
        try:
            pass
        except ImportError as e:
            bound = functools.partial(logger.warning_once, "Failed: %r", e)
            later = partial(logger.info_once, "Failed: %s")
            later(e)
    """
    found = find(source)
    assert [(f.line, f.level, f.argument, f.kind) for f in found] == [
        (6, "warning_once", "e", "exception"),
        (8, "info_once", "e", "exception"),
    ]
    assert found[0].message.startswith("functools.partial(logger.warning_once, ...) passes `e`")
    assert found[0].fix is not None and found[1].fix is None  # the partial's message is elsewhere: not fixed


def test_a_partial_of_an_alias_binds_what_the_alias_and_it_bind() -> None:
    source = """\
        import functools
        warn = logger.warning_once
        note = functools.partial(warn, "Failed: %s")
        try:
            pass
        except ImportError as e:
            functools.partial(warn, "Failed: %s", e)
            note(e)
            functools.partial(note, e)()
    """
    found = find(source)
    assert [(f.line, f.level, f.argument, f.kind, f.fix) for f in found] == [
        (7, "warning_once", "e", "exception", found[0].fix),
        (8, "warning_once", "e", "exception", None),  # the message is the partial's: not fixed here
        (9, "warning_once", "e", "exception", None),
    ]
    assert found[0].message.startswith("functools.partial(warn, ...) passes `e`")
    assert found[1].message.startswith("note(...) (warning_once) passes `e`")


def test_an_alias_bound_in_one_piece_of_a_big_file_is_known_in_a_later_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grammar, "CHUNK", 64)
    filler = "".join(f"x{i} = {i}\n" for i in range(40))
    later = "try:\n    pass\nexcept ImportError as e:\n    warn(e)\n"
    source = f"warn = logger.warning_once\n{filler}{later}"
    assert len(source) > 4 * grammar.CHUNK and len(list(grammar.modules(source))) > 1
    (finding,) = findings_in_source(source, FILE)
    assert (finding.line, finding.level, finding.kind) == (source.count("\n"), "warning_once", "exception")


def test_an_attribute_of_what_a_call_returns_is_never_an_alias() -> None:
    source = """\
        make().warn = logger.warning_once
        try:
            pass
        except ImportError as e:
            other().warn("Failed: %r", e)
    """
    assert find(source) == []


def test_a_module_without_an_alias_is_not_searched_for_one() -> None:
    source = """\
        try:
            pass
        except ImportError as e:
            warn("Failed: %r", e)
    """
    assert find(source) == []


# ---- what a finding says to do --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "hint"),
    [
        ('logger.warning_once("Failed: %r", err)', 'format it first ("%s", repr(err))'),
        ('logger.warning_once("Failed: %s", err)', 'format it first ("%s", str(err))'),
        ('logger.warning_once("Failed: %a", err)', 'format it first ("%s", ascii(err))'),
        ('logger.warning_once("Failed: %s", (err, 1))', 'format it first ("%s", str((err, 1)))'),
        ("logger.warning_once(err)", "format it first (str(err))"),
        ('logger.warning_once("Failed: %d", err)', 'format it first ("%s", repr(err))'),  # no fix: %d
        ('logger.warning_once("Failed: %s", [err])', 'format it first ("%s", str([err])), or pass a tuple'),
    ],
)
def test_the_hint_names_the_real_variable_and_formats_it_as_its_placeholder_does(call: str, hint: str) -> None:
    (finding,) = find(f"try:\n    pass\nexcept ImportError as err:\n    {call}\n")
    assert finding.message.endswith(f"; {hint}")
    assert "repr(e)" not in finding.message


# ---- where the exception comes from ----------------------------------------------------------------


def test_name_outside_any_handler_is_not_an_exception() -> None:
    source = """\
        def f(e):
            logger.warning_once("%s", e)
    """
    assert kinds(source) == [("e", "name")]


def test_handler_name_ends_with_the_handler() -> None:
    source = """\
        try:
            pass
        except ImportError as e:
            pass
        e = compute()
        logger.warning_once("%s", e)
    """
    assert kinds(source) == [("e", "name")]


def test_nested_function_in_a_handler_closes_over_the_exception() -> None:
    source = """\
        try:
            pass
        except ImportError as e:
            def later():
                logger.warning_once("%s", e)
            callback = lambda: logger.info_once("%s", e)
    """
    assert kinds(source) == [("e", "exception"), ("e", "exception")]


def test_parameter_of_a_nested_function_shadows_the_exception() -> None:
    source = """\
        try:
            pass
        except ImportError as e:
            def later(e):
                logger.warning_once("%s", e)
    """
    assert kinds(source) == [("e", "name")]


def test_nested_handlers_each_bind_their_own_name() -> None:
    source = """\
        try:
            pass
        except ImportError as outer:
            try:
                pass
            except OSError as inner:
                logger.warning_once("%s %s", outer, inner)
            logger.warning_once("%s", inner)
    """
    assert kinds(source) == [("outer", "exception"), ("inner", "exception"), ("inner", "name")]


def test_name_rebound_to_a_string_is_no_longer_the_exception() -> None:
    assert kinds(logged("e", setup="e = str(e)")) == [("e", "name")]


def test_rebinding_in_one_branch_keeps_the_exception_after_the_branch() -> None:
    assert kinds(logged("e", setup="if x:\n    e = str(e)")) == [("e", "exception")]


def test_alias_of_the_exception_is_an_exception_even_after_the_handler() -> None:
    source = """\
        last = None
        for attempt in range(3):
            try:
                pass
            except OSError as e:
                last = e
        logger.warning_once("gave up: %s", last)
    """
    assert kinds(source) == [("last", "exception")]


# ---- identity ---------------------------------------------------------------------------------------


def test_function_names_are_qualified() -> None:
    source = """\
        logger.info_once("%s", a)

        class Platform:
            @classmethod
            def import_kernels(cls):
                def inner():
                    logger.info_once("%s", b)
                logger.info_once("%s", c)
    """
    assert [(f.qualname, f.argument) for f in find(source)] == [
        ("<module>", "a"),
        ("Platform.import_kernels.inner", "b"),
        ("Platform.import_kernels", "c"),
    ]


def test_key_has_no_line_and_numbers_duplicates() -> None:
    source = """\
        def f():
            logger.info_once("%s", x)
            logger.info_once("%s", x)
    """
    first, second = find(source)
    assert first.key == f"{FILE}::f::info_once::x#0"
    assert second.key == f"{FILE}::f::info_once::x#1"
    shifted = find("\n\n\n" + textwrap.dedent(source))
    assert [f.key for f in shifted] == [first.key, second.key]
    assert shifted[0].line == first.line + 3


def test_file_that_does_not_parse_is_one_finding_at_its_error() -> None:
    (finding,) = find('logger.info_once("%s", x)\ndef broken(:\n')
    assert (finding.code, finding.file, finding.line, finding.column) == ("WOG000", FILE, 2, 12)
    assert finding.argument.startswith("does not parse (")


def test_a_file_the_prefilter_drops_is_neither_parsed_nor_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 42: 77% of flashinfer's audit was compiling files that hold no cache's name; such a file is left, even
    one that does not parse (it holds no call to check), and nothing parses or compiles it."""
    for name in ("parse", "compile"):
        monkeypatch.setattr(f"ast.{name}" if name == "parse" else "builtins.compile", _refuse(name))
    monkeypatch.setattr("symtable.symtable", _refuse("symtable"))
    assert find("x = 1\ndef broken(:\n") == []
    assert find("type Alias = int\ndef f[T](x: T) -> T:\n    return x\n") == []


def _refuse(name: str) -> Callable[..., object]:
    def refused(*args: object, **kwargs: object) -> object:
        raise AssertionError(f"{name} ran on a file the prefilter dropped")

    return refused


# ---- the command: text, JSON, baseline ratchet ------------------------------------------------------


LEAK = """\
def import_kernels():
    try:
        import vllm._C
    except ImportError as e:
        logger.warning_once("Failed: %r", e)
"""
NOISE = 'def helper(x):\n    logger.info_once("%s", x)\n'


def tree(root: Path, **files: str) -> Path:
    """`root/vllm` with `__init__.py`, `platforms/` and the given modules (name -> source)."""
    (root / "vllm" / "platforms").mkdir(parents=True, exist_ok=True)
    (root / "vllm" / "__init__.py").write_text("", encoding="utf-8")
    for name, source in files.items():
        (root / "vllm" / f"{name}.py").write_text(source, encoding="utf-8")
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["audit", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_live_exception_fails_and_other_findings_do_not(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tree(tmp_path, noise=NOISE)
    assert run(capsys, "--vllm-src", str(root))[0] == 0
    tree(tmp_path, leak=LEAK)
    code, out, _ = run(capsys, "--vllm-src", str(root))
    assert code == 1
    assert "1 failing finding(s) (WOG001 1); 2 finding(s) in all, 1 live exception(s): 1 new, 0 accepted" in out
    assert out.splitlines()[0].startswith("vllm/leak.py:5:43: WOG001 logger.warning_once(...) passes `e`")


def test_a_run_failed_by_a_call_that_raises_says_so_in_its_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raises = 'from vllm.logger import init_logger\nlogger = init_logger(__name__)\nlogger.warning_once("%s", [1, 2])\n'
    root = tree(tmp_path, leak=raises)
    code, out, _ = run(capsys, "--vllm-src", str(root))
    assert code == 1 and " raises TypeError" in out.splitlines()[0]  # vllm-omni's sorted(...)[:10], in short
    assert out.splitlines()[-1].startswith("1 failing finding(s) (WOG010 1); 1 finding(s) in all, 0 live exception(s)")


def test_strict_fails_on_any_new_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tree(tmp_path, noise=NOISE)
    assert run(capsys, "--vllm-src", str(root), "--strict")[0] == 1


def test_json_document_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tree(tmp_path, leak=LEAK, noise=NOISE)
    code, out, _ = run(capsys, "--vllm-src", str(root), "--format", "json")
    doc = json.loads(out)
    assert code == 1
    assert set(doc) == {"target", "counts", "findings", "suppressed", "stale"}
    assert doc["counts"]["findings"] == 2 and doc["counts"]["exceptions"] == 1 and doc["counts"]["failing"] == 1
    assert doc["counts"]["files_scanned"] == 3 and doc["counts"]["files_parsed"] == 2
    leak = next(f for f in doc["findings"] if f["kind"] == "exception")
    assert leak == {
        "file": "vllm/leak.py",
        "line": 5,
        "qualname": "import_kernels",
        "level": "warning_once",
        "argument": "e",
        "kind": "exception",
        "occurrence": 0,
        "column": 43,
        "end_line": 5,
        "end_column": 44,
        "suppressed": None,
        "call": "logger.warning_once(...)",
        "fix": {
            "wrapper": "repr",
            "index": 0,
            "conversion": "r",
            "message": {"line": 5, "column": 29, "end_line": 5, "end_column": 41},
        },
        "key": "vllm/leak.py::import_kernels::warning_once::e#0",
        "code": "WOG001",
        "accepted": False,
        "fails": True,
        "cache": leak["cache"],
    }
    unknown = "the cache of whichever logger it is (its logger is not followed from this file to a known one)"
    assert leak["cache"] == unknown
    assert "vLLM" in doc["target"]


def test_baseline_accepts_known_findings_and_fails_on_a_new_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tree(tmp_path / "src", leak=LEAK, noise=NOISE)
    baseline = tmp_path / "baseline.json"
    code, _, err = run(capsys, "--vllm-src", str(root), "--write-baseline", str(baseline))
    assert code == 0 and "wrote 2 accepted finding(s)" in err

    assert run(capsys, "--vllm-src", str(root), "--baseline", str(baseline))[0] == 0

    second = LEAK.replace("import_kernels", "import_more_kernels")
    tree(root, leak=LEAK + second)
    code, out, _ = run(capsys, "--vllm-src", str(root), "--baseline", str(baseline), "--format", "json")
    counts = json.loads(out)["counts"]
    assert code == 1
    assert (counts["new_exceptions"], counts["accepted"], counts["stale"]) == (1, 2, 0)


def test_baseline_survives_line_shifts_and_lists_stale_entries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tree(tmp_path / "src", leak=LEAK, noise=NOISE)
    baseline = tmp_path / "baseline.json"
    run(capsys, "--vllm-src", str(root), "--write-baseline", str(baseline))

    tree(root, leak="# a new header\n\n" + LEAK)
    (root / "vllm" / "noise.py").unlink()
    code, out, _ = run(capsys, "--vllm-src", str(root), "--baseline", str(baseline))
    assert code == 0
    assert "0 failing finding(s); 1 finding(s) in all, 1 live exception(s): 0 new, 1 accepted by the baseline" in out
    assert "WOG001" not in out  # accepted: not reported again
    assert "1 stale baseline entry" in out and len(out.splitlines()) == 1  # a count, not a line per entry
    code, out, _ = run(capsys, "--vllm-src", str(root), "--baseline", str(baseline), "--format", "json")
    assert json.loads(out)["stale"] == ["vllm/noise.py::helper::info_once::x#0"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("{not json", "not valid JSON"),
        ('{"findings": [1]}', "not a baseline"),
        ("[]", "not a baseline"),
    ],
)
def test_bad_baseline_is_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    root = tree(tmp_path / "src", noise=NOISE)
    baseline = tmp_path / "baseline.json"
    if content is not None:
        baseline.write_text(content, encoding="utf-8")
    with pytest.raises(BadBaseline, match=message):
        load_baseline(baseline)
    code, out, err = run(capsys, "--vllm-src", str(root), "--baseline", str(baseline))
    assert code == BadBaseline.exit_code != 0
    assert out == "" and err.count("\n") == 1 and message in err


def test_unparsable_file_in_the_tree_is_a_finding_and_the_others_are_still_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tree(tmp_path, broken='logger.info_once("x")\nif :\n', leak=LEAK)
    code, out, err = run(capsys, "--vllm-src", str(root))
    assert code == 1 and err == ""
    assert [line.split(" ", 2)[:2] for line in out.splitlines()[:-1]] == [
        ["vllm/broken.py:2:4:", "WOG000"],
        ["vllm/leak.py:5:43:", "WOG001"],
    ]


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed")
def test_audit_of_the_installed_vllm_covers_every_file() -> None:
    from warnonce_guard.rule.target import installed

    target = installed()
    result = audit_files(tree_files(target.root))
    assert result.files_scanned == sum(1 for _ in target.package_dir.rglob("*.py"))
    assert 0 < result.files_parsed <= result.files_scanned
    assert result.findings, "vLLM has *_once calls with non-literal arguments"
    assert all((target.root / f.file).is_file() for f in result.findings)


# ---- names bound only to what cannot be hashed (WOG010) -----------------------------------------------


LAYERNORM = """\
class RMSNorm:
    def __init__(self, enabled):
        if enabled:
            custom_ops = ["+rms_norm"]
        else:
            custom_ops = ["-rms_norm"]
        logger.warning_once("custom ops: %s", custom_ops)
"""


def test_a_name_bound_to_a_list_on_every_path_is_unhashable() -> None:
    """vllm-hust 0.17.2.post1 layernorm.py:198 passes such a list: the call raises TypeError, WOG002 hid it."""
    assert kinds(LAYERNORM) == [("custom_ops", "unhashable")]


def test_a_module_level_list_is_unhashable() -> None:
    assert kinds('x = [1, 2]; logger.info_once("%s", x)\n') == [("x", "unhashable")]


@pytest.mark.parametrize(
    "source",
    [
        'def f(x):\n    logger.info_once("%s", x)\n',  # a parameter
        'def f(y):\n    x = [1] if y else "a"\n    logger.info_once("%s", x)\n',
        'def f(y):\n    x = [1]\n    if y:\n        x = "a"\n    logger.info_once("%s", x)\n',
        'def f(ys):\n    x = [1]\n    [logger.info_once("%s", x) for x in ys]\n',  # the comprehension's own x
        'def f(ys):\n    x = [1]\n    g = lambda x: logger.info_once("%s", x)\n',  # the lambda's own x
        'def f():\n    global x\n    x = [1]\n    logger.info_once("%s", x)\n',
        'x = [1]\ndef f():\n    logger.info_once("%s", x)\n',  # another scope's
        'def f(self):\n    self = other\n    self.x = []\n    logger.info_once("%s", self.x)\n',
        'def f(ys):\n    x = [1]\n    for x in ys:\n        pass\n    logger.info_once("%s", x)\n',
        'def f(path):\n    x = []\n    with open(path) as x:\n        logger.info_once("%s", x)\n',
        'def f():\n    os = []\n    import os.path\n    logger.info_once("%s", os)\n',  # binds os
        'def f(m):\n    rest = {}\n    match m:\n        case {"k": 1, **rest}:\n            pass\n'
        '    logger.info_once("%s", rest)\n',
        'def f(m):\n    match m:\n        case {**rest}:\n            logger.info_once("%s", rest)\n',
    ],
    ids=[
        "parameter",
        "list or str",
        "re-bound in a branch",
        "comprehension",
        "lambda",
        "global",
        "outer",
        "self",
        "loop target",
        "with target",
        "import a.b",
        "mapping pattern's rest",
        "only a mapping pattern's rest",
    ],
)
def test_a_name_that_may_be_anything_stays_unknown(source: str) -> None:
    assert [kind for _, kind in kinds(source)] in (["name"], ["attribute"])


@pytest.mark.parametrize(
    "source",
    [
        'def f():\n    x: list = [1]\n    logger.info_once("%s", x)\n',
        'def f(y):\n    if (x := [y]):\n        logger.info_once("%s", x)\n',
        'def f():\n    x = [1]\n    x: list\n    logger.info_once("%s", x)\n',  # an annotation alone binds nothing
        'def f():\n    x = [1]\n    def g():\n        x = 2\n    logger.info_once("%s", x)\n',  # g's own x
        'def f():\n    y = [1]\n    x = y\n    logger.info_once("%s", x)\n',
    ],
    ids=["annotated", "walrus", "annotation alone", "nested function", "another such name"],
)
def test_a_name_bound_only_to_what_cannot_be_hashed_is_unhashable_however_bound(source: str) -> None:
    assert kinds(source) == [("x", "unhashable")]


@pytest.mark.parametrize("argument", ["pad[:n]", "pad * n", "n * pad", "ys + pad"])
def test_a_slice_or_a_sum_or_product_of_a_list_name_is_unhashable(argument: str) -> None:
    source = f'def f(n, ys):\n    pad = [0]\n    logger.info_once("%s", {argument})\n'
    assert kinds(source) == [(argument, "unhashable")]


@pytest.mark.parametrize(
    "source",
    [
        'def f(self, other):\n    other.x = []\n    logger.info_once("%s", other.x)\n',  # not the method's self
        'def f(self):\n    self.a.b = []\n    logger.info_once("%s", self.a.b)\n',  # an attribute of an attribute
    ],
    ids=["another object", "nested attribute"],
)
def test_only_a_direct_attribute_of_self_can_be_known_unhashable(source: str) -> None:
    assert [kind for _, kind in kinds(source)] == ["attribute"]


def test_an_alias_after_another_assignment_is_an_alias() -> None:
    source = "x = 1\ny: int = 2\nwarn = logger.warning_once\ntry:\n    pass\nexcept ImportError as e:\n    warn(e)\n"
    assert kinds(source) == [("e", "exception")]


def test_a_call_passing_a_once_method_is_no_once_call() -> None:
    assert find("def f(e):\n    register(logger.warning_once, e)\n") == []


def test_a_partial_binding_nothing_is_the_method_itself_and_is_fixed() -> None:
    source = "try:\n    pass\nexcept ImportError as e:\n"
    source += '    functools.partial(logger.warning_once)("m %r", e)\n'
    (finding,) = find(source)
    assert (finding.kind, finding.fix is not None) == ("exception", True)


def test_a_finding_on_an_argument_over_lines_spans_them() -> None:
    source = 'try:\n    pass\nexcept ImportError as e:\n    logger.warning_once("m %s", foo(\n        e))\n'
    (finding,) = find(source)
    assert (finding.line, finding.end_line, finding.end_column) == (4, 5, 11)
