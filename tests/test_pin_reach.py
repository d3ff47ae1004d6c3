"""What a pinned call copies the first time it reaches a part is declared on the part
(`StatePart.reached`, `before_json`, `changed`), the four built-in stores' too: ctx/before.py
keeps one copy per part, and neither it nor the case (_pins.py) nor its changes
(ctx/statejson.py) name a capability or a store. Byte-for-byte sameness of the cases is
tests/test_pins*.py's and tests/test_pin_diffs.py's."""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import workbench
from workbench.cli import main
from workbench.ctx import state as state_model
from workbench.ctx.parts import StateContext, StatePart
from workbench.pins.replay import replay_case

if TYPE_CHECKING:
    from workbench.ctx.parts import Reach

ROOT = Path(__file__).resolve().parent.parent / "workbench"
NAMES = {"files", "kv", "account", "data", "documents", "sql"}
# the methods a name may be handed to as a key (a dict's or a set's)
KEYED = {"get", "setdefault", "pop", "startswith", "add", "discard", "remove"}


def _bare(text: str) -> str:
    """'files.' -> 'files', 'data:' -> 'data', 'storage.account.' -> 'account'."""
    return text.rstrip(".:").rpartition(".")[2]


def _named_stores(source: str) -> list[str]:
    """Each store or capability name the source holds as a string literal compared with,
    used as a key (a subscript, a dict's key, a set member, a get/startswith argument)."""
    found: list[str] = []

    def note(node: ast.AST | None) -> None:
        if node is None:
            return
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and _bare(sub.value) in NAMES:
                found.append(f"line {sub.lineno}: {sub.value!r}")

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            note(node)
        elif isinstance(node, ast.Subscript):
            note(node.slice)
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                note(key)
        elif isinstance(node, ast.Set):
            note(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in KEYED:
            for arg in node.args[:1]:
                note(arg)
    return found


def test_before_pins_and_statejson_name_no_capability_or_store() -> None:
    for name in ("ctx/before.py", "pins/case.py", "ctx/statejson.py"):
        assert _named_stores((ROOT / name).read_text(encoding="utf-8")) == [], name


def test_the_name_check_sees_a_store_named_in_a_comparison_or_a_key() -> None:
    """The check above finds what it looks for (today's names, in each form it reads)."""
    source = (
        'if impl in ("kv", "account"): pass\n'
        'x = {"files": 1}\n'
        'y = named["data"]\n'
        'z = method.startswith("storage.sql")\n'
        'ok = bad("sql", "is not a list")\n'  # a field named in a message: not a key
    )
    assert [f.split(": ")[1] for f in _named_stores(source)] == [
        "'kv'",
        "'account'",
        "'files'",
        "'data'",
        "'storage.sql'",
    ]


def test_each_store_part_declares_what_a_pin_copies_of_it() -> None:
    from workbench.ctx.before import held_by
    from workbench.ctx.state_store import DOCUMENTS, FILES, KV, SQL
    from workbench.platforms import profile

    for part in (FILES, KV, DOCUMENTS, SQL):
        assert part.reached is not None and part.before_json is not None and part.changed is not None
    # which capability reaches a part comes from the specs: kv is the kv capability's and the
    # account's (Ekanos keeps its records there)
    noto = {impl: [p.name for p in parts] for impl, parts in held_by(profile("notochord")).items()}
    assert noto == {"files": ["files"], "data": ["documents"], "kv": ["kv"], "sql": ["sql"]}
    assert {impl: [p.name for p in parts] for impl, parts in held_by(profile("ekanos")).items()} == {
        "account": ["kv"]
    }
    assert held_by(profile("agent")) == {}  # the outbox's answers are served, not copied


# -- a part beyond the stores with its own hooks: a greetings counter on the kv capability -------
def _counter(seen: dict[str, Any]) -> StatePart:
    """The kv keys a kv call names that start with 'greet', each copied at the first call
    naming it; a case's `before` holds those the trace named; its changes say "moved"."""

    def dump(cx: StateContext) -> dict[str, str]:
        return {k: v for k, v in cx.providers.store.kv_items() if k.startswith("greet")}

    def put(cx: StateContext, value: Any, bad: Any) -> None:
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise bad("counter", "is not {key: text}")
        for key, text in value.items():
            cx.providers.store.kv_set(key, text)

    def reached(cx: StateContext, method: str, args: tuple[Any, ...], reach: Reach) -> None:
        seen["reached"] = seen.get("reached", 0) + 1
        key = args[0] if args and isinstance(args[0], str) else ""
        if key.startswith("greet") and reach.first(key):
            seen["copied"] = seen.get("copied", 0) + 1
            reach.add(key, cx.providers.store.kv_get(key))

    def before_json(copy: dict[str, Any], named: Mapping[str, set[str]], changed: list[Any]) -> Any:
        seen["named"] = {impl: sorted(found) for impl, found in named.items()}
        return {k: v for k, v in copy.items() if v is not None}

    def changed(copy: dict[str, Any], cx: StateContext) -> list[dict[str, Any]]:
        now = dump(cx)
        return [
            {"kind": "counter", "where": "greetings", "key": k, "change": "moved", "after": now.get(k)}
            for k in copy
            if now.get(k) != copy[k]
        ]

    return StatePart("counter", dump, put, reached=reached, before_json=before_json, changed=changed)


def test_a_parts_own_reached_before_json_and_changed_make_its_pin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, Any] = {}
    real = state_model.parts_of

    def parts_of(profile: Any) -> list[Any]:
        found = real(profile)
        if profile.name != "notochord":
            return found
        from workbench.ctx.registry import capability

        return [*found, (_counter(seen), capability("kv"))]

    monkeypatch.setattr(state_model, "parts_of", parts_of)
    monkeypatch.setenv("GEM_WORKBENCH_HOME", str(tmp_path / "home"))
    assert main(["new", "greeter", "--platform", "notochord", "--lang", "py", "--dir", str(tmp_path)]) == 0
    with workbench.open(tmp_path / "greeter", seed=1, clock="2026-01-01T00:00:00Z") as bench:
        bench.call("hello", {"name": "Ada"})
        seen.clear()
        res = bench.call("hello", {"name": "Bob"})
        path = res.pin("second")
    assert seen["reached"] >= 2 and seen["copied"] == 1  # a get and a set of one key: copied once
    assert "greetings" in seen["named"]["kv"]  # the strings the call's kv calls named
    case = json.loads(path.read_text())
    assert case["before"]["counter"] == {"greetings": "1"}  # before_json's, not the whole copy
    assert {"kind": "counter", "where": "greetings", "key": "greetings", "change": "moved", "after": "2"} in (
        case["changes"]
    )
    assert replay_case(path).ok  # the replay puts the part's `before` back and finds the same change


def test_a_store_is_copied_once_per_call_however_often_the_call_reaches_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy grows only by what is new: a call of three kv calls charges kv once."""
    from workbench.ctx.before import Before

    charged: list[str] = []
    real = Before.charge

    def charge(self: Before, size: int, what: str) -> bool:
        charged.append(what)
        return real(self, size, what)

    monkeypatch.setattr(Before, "charge", charge)
    monkeypatch.setenv("GEM_WORKBENCH_HOME", str(tmp_path / "home"))
    assert main(["new", "greeter", "--platform", "notochord", "--lang", "py", "--dir", str(tmp_path)]) == 0
    with workbench.open(tmp_path / "greeter", seed=1) as bench:
        res = bench.call("hello", {"name": "Ada"})
        kv_calls = [r for r in res.trace_rows if str(r.get("method", "")).startswith("storage.kv.")]
    assert len(kv_calls) >= 2 and charged.count("kv") == 1


MIX = """def handle(input, ctx):
    n = ctx.data.collection("notes").count(None)
    ctx.storage.sql.execute("INSERT INTO closed(note_id) VALUES (?)", ["x"])
    ctx.storage.kv.set("views", ctx.storage.kv.get("views") + "0")
    text = ctx.files.read("workspace:reports/notes.md")
    ctx.files.write("workspace:reports/notes.md", text + "more")
    return {"n": n}
"""


def test_a_case_lists_the_stores_as_it_always_did_whatever_order_the_call_reached_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pin_order`: files, kv, documents, sql, whatever the call touched first (a case pinned
    again is the same text)."""
    import shutil

    monkeypatch.setenv("GEM_WORKBENCH_HOME", str(tmp_path / "home"))
    gem = tmp_path / "notes"
    shutil.copytree(ROOT.parent / "notebooks" / "gems" / "notes", gem, ignore=shutil.ignore_patterns("calls"))
    manifest = json.loads((gem / "manifest.json").read_text())
    manifest["tools"].append(
        {
            "name": "mix",
            "file": "tools/mix.py",
            "description": "Every store, data first.",
            "sideEffect": "write",
        }
    )
    (gem / "manifest.json").write_text(json.dumps(manifest))
    (gem / "tools" / "mix.py").write_text(MIX)
    with workbench.open(gem, seed=1, clock="2026-01-01T00:00:00Z") as bench:
        bench.call("add_note", {"title": "a"})
        bench.call("write_report", {})
        bench.call("count_views", {})
        case = json.loads(bench.call("mix", {}).pin("mix").read_text())
    assert list(case["before"]) == ["files", "kv", "documents", "sql"]
    assert [c["kind"] for c in case["changes"]] == ["file", "kv", "sql"]
