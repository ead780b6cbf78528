"""gitignore matching, on the examples of git's own documentation (gitignore(5)), and checked against git itself."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from warnonce_guard.audit.excludes import Excludes
from warnonce_guard.audit.gitignore import GitIgnores, decision, parse

# (patterns of one .gitignore at the top, path, is a folder, ignored?) from gitignore(5)'s PATTERN FORMAT and NOTES.
DOCUMENTED = [
    # "The pattern hello.* matches any file or directory whose name begins with hello."
    (["hello.*"], "hello.txt", False, True),
    (["hello.*"], "a/hello.java", False, True),
    # "... prepend the pattern with a slash, i.e. /hello.*; the pattern now matches hello.txt, hello.c but not
    # a/hello.java."
    (["/hello.*"], "hello.txt", False, True),
    (["/hello.*"], "hello.c", False, True),
    (["/hello.*"], "a/hello.java", False, False),
    # "The pattern foo/ will match a directory foo and paths underneath it, but will not match a regular file or a
    # symbolic link foo"
    (["foo/"], "foo", True, True),
    (["foo/"], "a/foo", True, True),
    (["foo/"], "foo", False, False),
    # "The pattern doc/frotz and /doc/frotz have the same effect": a middle slash anchors it.
    (["doc/frotz"], "doc/frotz", False, True),
    (["/doc/frotz"], "doc/frotz", False, True),
    (["doc/frotz"], "a/doc/frotz", False, False),
    # "doc/frotz/ matches doc/frotz directory, but not a/doc/frotz directory; frotz/ matches frotz and a/frotz"
    (["doc/frotz/"], "doc/frotz", True, True),
    (["doc/frotz/"], "a/doc/frotz", True, False),
    (["frotz/"], "a/frotz", True, True),
    # "foo/* matches foo/test.json (a regular file), foo/bar (a directory), but it does not match foo/bar/hello.c"
    (["foo/*"], "foo/test.json", False, True),
    (["foo/*"], "foo/bar", True, True),
    (["foo/*"], "foo/bar/hello.c", False, False),
    # "**/foo matches file or directory foo anywhere, the same as pattern foo"
    (["**/foo"], "foo", False, True),
    (["**/foo"], "x/y/foo", True, True),
    # "**/foo/bar matches file or directory bar anywhere that is directly under directory foo"
    (["**/foo/bar"], "x/foo/bar", False, True),
    (["**/foo/bar"], "foo/x/bar", False, False),
    # "abc/** matches all files inside directory abc"
    (["abc/**"], "abc/x/y.py", False, True),
    (["abc/**"], "x/abc/y.py", False, False),
    # "a/**/b matches a/b, a/x/b, a/x/y/b and so on"
    (["a/**/b"], "a/b", False, True),
    (["a/**/b"], "a/x/b", False, True),
    (["a/**/b"], "a/x/y/b", False, True),
    # "Other consecutive asterisks are considered regular asterisks"
    (["x**y"], "xaby", False, True),
    (["x**y"], "xa/by", False, False),
    # "An optional prefix ! negates the pattern; any matching file excluded by a previous pattern will become
    # included again." The last matching pattern decides.
    (["*.html", "!foo.html"], "foo.html", False, False),
    (["*.html", "!foo.html"], "gitignore.html", False, True),
    (["!foo.html", "*.html"], "foo.html", False, True),
    # "Put a backslash in front of the first ! for patterns that begin with a literal !" (and # likewise).
    (["\\!important!.txt"], "!important!.txt", False, True),
    (["\\#file"], "#file", False, True),
    (["#file"], "#file", False, False),  # a comment
    # "Trailing spaces are ignored unless they are quoted with backslash"
    (["trail  "], "trail", False, True),
    (["trail\\ "], "trail ", False, True),
    # "? matches any one character except /"; "[a-zA-Z] range notation"
    (["?.py"], "a.py", False, True),
    (["?.py"], "ab.py", False, False),
    (["*.[oa]"], "lib.a", False, True),
    (["*.[oa]"], "src/internal.o", False, True),
    (["*.[oa]"], "x.c", False, False),
    (["[!a]*.py"], "b.py", False, True),
    (["[!a]*.py"], "a.py", False, False),
]


@pytest.mark.parametrize(("patterns", "path", "folder", "ignored"), DOCUMENTED)
def test_the_documented_examples(patterns: list[str], path: str, folder: bool, ignored: bool) -> None:
    assert bool(decision(parse("\n".join(patterns)), path, folder)) is ignored


def tree(top: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (top / name).parent.mkdir(parents=True, exist_ok=True)
        (top / name).write_text(text)


# gitignore(5)'s example of nested files: `.git/info/exclude` ignores objects and archives anywhere,
# Documentation/.gitignore ignores generated html but foo.html, which is maintained by hand.
NESTED = {
    ".git/info/exclude": "# ignore objects and archives, anywhere in the tree.\n*.[oa]\n",
    "Documentation/.gitignore": "# ignore generated html files,\n*.html\n# except foo.html\n!foo.html\n",
    "Documentation/foo.html": "",
    "Documentation/gitignore.html": "",
    "file.o": "",
    "lib.a": "",
    "src/internal.o": "",
    "src/main.py": "",
    # and "exclude everything except directory foo/bar": /* !/foo /foo/* !/foo/bar
    "sub/.gitignore": "/*\n!/foo\n/foo/*\n!/foo/bar\n",
    "sub/foo/bar/kept.py": "",
    "sub/foo/other.py": "",
    "sub/top.py": "",
    # a deeper file overrides a shallower one
    ".gitignore": "*.log\nbuild/\n",
    "logs/.gitignore": "!keep.log\n",
    "logs/keep.log": "",
    "logs/drop.log": "",
    "build/x.py": "",
    "pkg/build": "",  # a file named like an ignored folder
    # ignore everything but folders and Python files: a folder is walked (pathspec 1.1's GitIgnoreSpec says ignored)
    "only-py/.gitignore": "*\n!*/\n!*.py\n",
    "only-py/sub/kept.py": "",
    "only-py/sub/notes.txt": "",
}
EXPECTED = {
    "Documentation/foo.html": False,
    "Documentation/gitignore.html": True,
    "file.o": True,
    "lib.a": True,
    "src/internal.o": True,
    "src/main.py": False,
    "sub/foo/bar/kept.py": False,
    "sub/foo/other.py": True,
    "sub/top.py": True,
    "logs/keep.log": False,
    "logs/drop.log": True,
    "build/x.py": True,
    "pkg/build": False,
    "only-py/sub/kept.py": False,
    "only-py/sub/notes.txt": True,
}


def ignored_here(ignores: GitIgnores, top: Path, path: str) -> bool:
    """As a walk asks: the path or a folder on its way is ignored."""
    parts = Path(path).parts
    return any(ignores.ignored(top.joinpath(*parts[: i + 1]), i + 1 < len(parts)) for i in range(len(parts)))


def test_nested_files_and_the_exclude_file(tmp_path: Path) -> None:
    tree(tmp_path, NESTED)
    ignores = GitIgnores(tmp_path)
    assert {path: ignored_here(ignores, tmp_path, path) for path in EXPECTED} == EXPECTED


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_git_agrees(tmp_path: Path) -> None:
    tree(tmp_path, {k: v for k, v in NESTED.items() if not k.startswith(".git/")})
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    tree(tmp_path, {".git/info/exclude": NESTED[".git/info/exclude"]})
    listed = subprocess.run(
        ["git", "check-ignore", "--stdin"], cwd=tmp_path, input="\n".join(EXPECTED), capture_output=True, text=True
    ).stdout.split()
    assert {path: path in listed for path in EXPECTED} == EXPECTED


BRACKETS = ["[a-c].txt", "x[z-ab]", "[!a-y]z", "[--0]q", "[]a]r", "s[a-]"]
BRACKETED = ["b.txt", "d.txt", "xa", "xb", "xz", "zz", "az", "-q", ".q", "0q", "]r", "ar", "s-", "sa", "sb"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_bracket_expressions_match_as_in_git_a_reversed_range_included(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".gitignore").write_text("\n".join(BRACKETS) + "\n")
    listed = subprocess.run(
        ["git", "check-ignore", "--stdin"], cwd=tmp_path, input="\n".join(BRACKETED), capture_output=True, text=True
    ).stdout.split()
    ours = [path for path in BRACKETED if decision(parse("\n".join(BRACKETS)), path, False)]
    assert ours == listed and "xz" in ours and "xa" not in ours


def test_an_exclude_s_bracket_range_is_a_range_as_in_ruff() -> None:
    excludes = Excludes.of(["[a-c].py"], Path("/p"))
    assert excludes.excluded("/p/b.py", "b.py") and not excludes.excluded("/p/-.py", "-.py")
