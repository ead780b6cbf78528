"""What git ignores, by git's rules (gitignore(5)): the `.gitignore` of every folder and `.git/info/exclude`
(not the global `core.excludesFile`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pattern:
    """One line of a gitignore file."""

    regex: re.Pattern[str]  # matched against the path relative to the file's folder
    negated: bool  # `!pattern`: re-include
    folders_only: bool  # `pattern/`


def _class(pattern: str, start: int) -> tuple[str, int] | None:
    """A bracket expression at `start` as a regex class, and where it ends; None if it does not close."""
    end = start + 1
    if end < len(pattern) and pattern[end] in "!^":
        end += 1
    if end < len(pattern) and pattern[end] == "]":
        end += 1
    end = pattern.find("]", end)
    if end < 0:
        return None
    body = pattern[start + 1 : end]
    negate = body[:1] in ("!", "^")
    body = body[1:] if negate else body
    chars, i = [], 0  # each character stands for itself, but a range `a-z` (a reversed one is its first, as in git)
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            low, high = re.escape(body[i]), re.escape(body[i + 2])
            chars.append(f"{low}-{high}" if body[i] <= body[i + 2] else low)
            i += 3
        else:
            chars.append(re.escape(body[i]))
            i += 1
    return f"[{'^' if negate else ''}{''.join(chars)}]", end + 1


def translate(pattern: str, slash: bool = False) -> str:
    """A glob as a regex for a whole path: gitignore's (without its `!`, leading or trailing slash), or with `slash`
    ruff's (globset without `literal_separator`: `*` and `?` match `/` too, and `{a,b}` is either)."""
    star, one = (".*", ".") if slash else ("[^/]*", "[^/]")
    out, i = [], 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**", i) and (i == 0 or pattern[i - 1] == "/"):
            rest = pattern[i + 2 :]
            if rest == "":
                out.append(".*")  # `foo/**`: everything inside foo
                break
            if rest.startswith("/"):
                out.append("(?:.*/)?")  # `**/`: zero or more folders
                i += 3
                continue
        if char == "*":
            while i < len(pattern) and pattern[i] == "*":
                i += 1
            out.append(star)
            continue
        if char == "?":
            out.append(one)
        elif char == "[" and (found := _class(pattern, i)) is not None:
            out.append(found[0])
            i = found[1]
            continue
        elif slash and char == "{" and (end := pattern.find("}", i)) > 0:
            out.append("(?:" + "|".join(map(re.escape, pattern[i + 1 : end].split(","))) + ")")
            i = end
        elif char == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def parse_line(line: str) -> Pattern | None:
    """One line of a gitignore file as a pattern; None for a blank line or a comment."""
    line = line.rstrip("\r\n")
    while line.endswith(" ") and not line.endswith("\\ "):
        line = line[:-1]
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated or line.startswith("\\!") or line.startswith("\\#"):
        line = line[1:]
    folders_only = line.endswith("/") and not line.endswith("\\/")
    line = line.rstrip("/") if folders_only else line
    if not line:
        return None
    anchored = "/" in line
    regex = translate(line.lstrip("/") if anchored else line)
    return Pattern(re.compile(regex if anchored else f"(?:.*/)?{regex}", re.DOTALL), negated, folders_only)


def parse(text: str) -> tuple[Pattern, ...]:
    return tuple(p for p in map(parse_line, text.splitlines()) if p is not None)


def decision(patterns: tuple[Pattern, ...], relative: str, is_folder: bool) -> bool | None:
    """Whether the last matching pattern ignores the path (True) or re-includes it (False); None if none matches."""
    for pattern in reversed(patterns):
        if (is_folder or not pattern.folders_only) and pattern.regex.fullmatch(relative):
            return not pattern.negated
    return None


class GitIgnores:
    """The ignore files of one git work tree, read as its folders are visited (each once)."""

    def __init__(self, top: Path) -> None:
        self.top = str(top)
        self.files: dict[str, tuple[Pattern, ...]] = {}
        self.exclude = self._load(top / ".git" / "info" / "exclude")

    @staticmethod
    def _load(file: Path) -> tuple[Pattern, ...]:
        try:
            return parse(file.read_text(encoding="utf-8", errors="replace"))
        except OSError:  # none (the common case), or not a file: nothing to apply
            return ()

    def _patterns(self, folder: str) -> tuple[Pattern, ...]:
        if folder not in self.files:
            self.files[folder] = self._load(Path(folder) / ".gitignore")
        return self.files[folder]

    def ignored(self, path: str | Path, is_folder: bool) -> bool:
        """Whether git ignores `path` (absolute, under the work tree, its parent folders not ignored)."""
        relative = str(path)[len(self.top) :].lstrip("/")
        parts = relative.split("/")
        for depth in range(len(parts) - 1, -1, -1):  # the deepest .gitignore first
            folder = "/".join([self.top, *parts[:depth]])
            found = decision(self._patterns(folder), "/".join(parts[depth:]), is_folder)
            if found is not None:
                return found
        return bool(decision(self.exclude, relative, is_folder))
