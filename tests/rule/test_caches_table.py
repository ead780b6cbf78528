"""The built-in table of once-caches (caches/caches.toml) is read whole: each row says what its entry says, every key;
a table entry may say key, label and source (and must), never `replace`; a table that cannot be read, or a row of it
that cannot be one, names the file and what is wrong. `_table` is called here: `CACHES` was read at import time."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from warnonce_guard.caches import model
from warnonce_guard.caches.model import BadCacheEntry, Cache, Signature, row

TABLE_ENTRY = {
    "key": "mine",
    "label": "my plugin's cache",
    "home": "my_plugin.log",
    "name": "my_plugin.log.remember_once",
    "kind": "function",
    "signature": "(logger, msg)",
    "held": ["logger"],
    "source": "my-plugin 1.0 my_plugin/log.py:1-9",
}
KNOWN = (
    "name, kind, signature, maxsize, held, uncached, tupled, renders-first, loggers, methods, also, packages, places, "
    "key, label, home, keys-on, source, caller-stacklevel"
)


def test_a_table_entry_names_its_key_label_and_source() -> None:
    assert row(TABLE_ENTRY, "caches.toml", table=True) == Cache(
        "mine",
        "my plugin's cache",
        "my_plugin.log",
        "function",
        ("my_plugin.log.remember_once",),
        Signature("(logger, msg)", ("logger", "msg"), 0, None, (), None),
        "(logger, msg)",
        None,
        "my-plugin 1.0 my_plugin/log.py:1-9",
        percent=False,
        held=frozenset({"logger"}),
        runtime=("my_plugin.log.remember_once",),
        name="my_plugin.log.remember_once",
    )


@pytest.mark.parametrize(
    ("changed", "says"),
    [
        ({"replace": True}, f"caches.toml: unknown key 'replace' in a cache entry (known: {KNOWN})"),
        ({"source": None}, "caches.toml: a cache entry needs source (name, kind, signature, key, label, source)"),
        ({"key": ""}, "caches.toml cache 'my_plugin.log.remember_once': key must be a non-empty string, not ''"),
        ({"label": 3}, "caches.toml cache 'my_plugin.log.remember_once': label must be a non-empty string, not 3"),
        (
            {"source": " "},
            "caches.toml cache 'my_plugin.log.remember_once': source must be a non-empty string, not ' '",
        ),
    ],
)
def test_a_wrong_table_entry_is_refused_naming_the_table_and_the_key(changed: dict[str, object], says: str) -> None:
    entry = {key: value for key, value in {**TABLE_ENTRY, **changed}.items() if value is not None}
    with pytest.raises(BadCacheEntry) as raised:
        row(entry, "caches.toml", table=True)
    assert str(raised.value) == says


def test_each_row_of_the_table_is_its_entry_in_caches_toml() -> None:
    assert model.TABLE.read_bytes().isascii()  # read alike whatever the locale's encoding
    entries = tomllib.loads(model.TABLE.read_text(encoding="utf-8"))["cache"]
    rows = model._table()
    assert [r.key for r in rows] == [e["key"] for e in entries] and len(rows) >= 15
    for cache, entry in zip(rows, entries, strict=True):
        owner, _, last = entry["name"].rpartition(".")
        methods = tuple(entry.get("methods", [last] if entry["kind"] == "logger" else []))
        said = (
            *(entry[k] for k in ("key", "label", "home", "name", "kind", "signature", "source")),
            entry.get("keys-on", entry["signature"]),
            entry.get("maxsize"),
            entry.get("caller-stacklevel"),
            entry.get("renders-first", False),
            *(frozenset(entry.get(k, [])) for k in ("held", "uncached", "tupled")),
            methods,
            tuple(entry.get("packages", [])),
            tuple(entry["places"]),
            (),
        )
        read = (
            *(cache.key, cache.label, cache.home, cache.name, cache.kind, cache.signature.text, cache.source),
            cache.keys_on,
            cache.maxsize,
            cache.caller_stacklevel,
            cache.renders_first,
            *(cache.held, cache.uncached, cache.tupled),
            cache.methods,
            cache.packages,
            cache.runtime,
            cache.replaces,
        )
        assert read == said, entry["key"]
        loggers = (
            (*entry.get("loggers", []), owner) if entry["kind"] == "logger" else (entry["name"], *entry.get("also", []))
        )
        assert cache.names == tuple(dict.fromkeys(loggers)), entry["key"]


def test_the_table_reads_vllms_row_as_the_audit_needs_it() -> None:
    vllm = next(c for c in model._table() if c.key == "vllm")
    assert (vllm.message, vllm.percent, vllm.bounded, vllm.describe()) == (
        "msg",
        True,
        True,
        "vLLM's logger *_once lru_cache (vllm.logger, 128 entries)",
    )
    assert vllm.signature.default("scope") == "local" and vllm.signature.varargs == "args"


@pytest.mark.parametrize(
    ("text", "problem"),
    [(None, "No such file or directory"), ("[[cache]\n", "Expected ']]' at the end of an array declaration")],
)
def test_a_table_that_cannot_be_read_is_a_broken_installation_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str | None, problem: str
) -> None:
    table = tmp_path / "caches.toml"
    if text is not None:
        table.write_text(text, encoding="utf-8")
    monkeypatch.setattr(model, "TABLE", table)
    with pytest.raises(RuntimeError) as raised:
        model._table()
    assert str(raised.value).startswith(f"{table}: the table of caches cannot be read (") and problem in str(
        raised.value
    )


def test_a_row_of_the_table_that_cannot_be_one_names_the_table_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = tmp_path / "caches.toml"
    table.write_text(
        '[[cache]]\nkey = "k"\nlabel = "l"\nhome = "h"\nname = "a.b_once"\nkind = "function"\nsignature = "(m)"\n'
        'source = "s"\nmaxsize = 0\n',
        encoding="utf-8",
    )
    monkeypatch.setattr(model, "TABLE", table)
    with pytest.raises(BadCacheEntry) as raised:
        model._table()
    assert str(raised.value) == (
        "caches.toml cache 'a.b_once': maxsize must be a positive integer (leave it out: unbounded), not 0"
    )
