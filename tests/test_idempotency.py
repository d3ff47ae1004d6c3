"""N7: ctx.idempotencyKey, and crash-then-rerun with the same key (Python and JS tools)."""

from __future__ import annotations

import pytest
from _deno import deno_home  # noqa: F401  (fixture)

import workbench

SCHEMA_SQL = "CREATE TABLE orders (id INTEGER PRIMARY KEY, title TEXT, key TEXT);\n"

PY_KEY = "def handle(input, ctx):\n    return ctx.idempotencyKey\n"
JS_KEY = "export default async (input, ctx) => ctx.idempotencyKey\n"

# inserts a row on every run: a rerun after a crash inserts it twice
PY_NAIVE = """
def handle(input, ctx):
    ctx.storage.kv.get("settings")
    ctx.storage.sql.execute("INSERT INTO orders (title, key) VALUES (?, ?)",
                            [input["title"], ctx.idempotencyKey])
    ctx.storage.kv.set("last", input["title"])
    return "ok"
"""
JS_NAIVE = """
export default async (input, ctx) => {
  await ctx.storage.kv.get("settings");
  await ctx.storage.sql.execute("INSERT INTO orders (title, key) VALUES (?, ?)",
                                [input.title, ctx.idempotencyKey]);
  await ctx.storage.kv.set("last", input.title);
  return "ok";
};
"""
# the order is keyed on ctx.idempotencyKey in kv, marked done after its effects: a rerun
# finds it and does not add another (marking it first would lose "last" at crash point 2)
PY_IDEMPOTENT = """
def handle(input, ctx):
    k = "order:" + ctx.idempotencyKey
    if ctx.storage.kv.get(k) is not None:
        return "already done"
    ctx.storage.kv.set("last", input["title"])   # an overwrite: the same on a rerun
    ctx.storage.kv.set(k, input["title"])         # marked done last
    return "ok"
"""
JS_IDEMPOTENT = """
export default async (input, ctx) => {
  const k = "order:" + ctx.idempotencyKey;
  if (await ctx.storage.kv.get(k) !== null) return "already done";
  await ctx.storage.kv.set("last", input.title);
  await ctx.storage.kv.set(k, input.title);
  return "ok";
};
"""
# swallows every Exception: the simulated crash must still get through
PY_CATCHER = """
def handle(input, ctx):
    try:
        ctx.storage.sql.execute("INSERT INTO orders (title) VALUES ('x')")
        ctx.storage.kv.set("after", "1")
    except Exception:
        return "caught"
    return "ok"
"""

LANGS = {"py": (PY_KEY, PY_NAIVE, PY_IDEMPOTENT), "js": (JS_KEY, JS_NAIVE, JS_IDEMPOTENT)}


def _gem(gem, ext):
    key, naive, idem = LANGS[ext]
    schema = {"type": "object", "properties": {"title": {"type": "string"}}}
    gem.tool("key", key, ext=ext).tool("naive", naive, ext=ext, schema=schema)
    return gem.tool("idem", idem, ext=ext, schema=schema).schema_sql(SCHEMA_SQL)


def _params():
    return [pytest.param("py", id="python"), pytest.param("js", id="js", marks=pytest.mark.deno)]


@pytest.fixture(params=_params())
def bench(request, gem, opened):  # noqa: F811
    return opened(_gem(gem, request.param))


def test_N7_every_call_gets_a_fresh_key(bench):
    a, b = bench.call("key"), bench.call("key")
    assert a.ok and b.ok
    assert isinstance(a.value, str) and len(a.value) >= 16
    assert a.value == a.idempotency_key and b.value == b.idempotency_key
    assert a.value != b.value


def test_N7_crash_rerun_keeps_the_key_and_shows_the_duplicate(bench):
    res = bench.call("naive", {"title": "milk"}, crash=2)  # after the INSERT, before kv.set
    rep = res.crash
    assert rep is not None and rep.crashed is not None and rep.point == 2
    assert rep.crashed.error.details["crashed_after"] == 2
    assert rep.crashed.idempotency_key == res.idempotency_key
    assert res.ok and res.value == "ok"
    assert [r.idempotency_key for r in res.runs] == [res.idempotency_key] * 2
    assert len(rep.crashed.trace_rows) == 2
    assert (rep.crashed_run_diff["where"] == "orders").sum() == 1
    assert (rep.rerun_diff["where"] == "orders").sum() == 1
    assert any(d.startswith("sql orders") for d in rep.duplicates), rep.duplicates
    assert len(bench.sql("SELECT * FROM orders")) == 2  # the order went in twice


def test_N7_crash_beyond_the_last_ctx_call_does_not_crash(bench):
    res = bench.call("naive", {"title": "milk"}, crash=99)
    assert res.ok and res.crash is not None and res.crash.crashed is None
    assert res.runs == [res]


def test_N7_crash_matrix_flags_the_non_idempotent_tool(bench):
    before = bench.sql("SELECT count(*) AS n FROM orders")["n"][0]
    m = bench.crash_matrix("naive", {"title": "milk"})
    assert m["crash_after"].tolist() == [0, 1, 2, 3]
    assert m["same_key"].all() and m["rerun_ok"].all()
    # crashing after the INSERT (2) or after everything (3) duplicates the order
    assert m.set_index("crash_after")["duplicated"].str.contains("sql orders").to_dict() == {
        0: False,
        1: False,
        2: True,
        3: True,
    }
    assert not m["clean"].all()
    assert bench.sql("SELECT count(*) AS n FROM orders")["n"][0] == before  # state restored


def test_N7_idempotent_tool_is_clean_at_every_crash_point(bench):
    m = bench.crash_matrix("idem", {"title": "milk"})
    assert len(m) == 4  # kv.get, kv.set, kv.set: points 0..3
    assert m["crashed"].tolist() == [True, True, True, True]
    assert m["clean"].all(), m.to_dict("records")
    assert (m["duplicated"] == "").all()
    assert bench.kv().empty


def test_N7_random_crash_point(bench):
    bench.call("idem", {"title": "a"}).raise_for_error()
    res = bench.call("idem", {"title": "b"}, crash="random")
    assert res.ok and res.crash is not None and 0 <= res.crash.point <= 3


def test_N7_crash_argument_is_checked(bench):
    with pytest.raises(workbench.UsageError):
        bench.call("idem", {"title": "a"}, crash=-1)
    with pytest.raises(workbench.UsageError):
        bench.call("idem", {"title": "a"}, crash="sometimes")


def test_N7_python_crash_is_not_an_exception(gem, opened):  # noqa: F811
    b = opened(gem.tool("catch", PY_CATCHER).schema_sql(SCHEMA_SQL))
    res = b.call("catch", crash=1)
    assert res.crash.crashed is not None  # `except Exception` did not swallow the crash
    assert res.crash.crashed.error.details["crashed_after"] == 1
    assert res.value == "ok"
    assert any("orders" in d for d in res.crash.duplicates)


def test_N7_result_text_names_the_duplicate(gem, opened):  # noqa: F811
    from workbench.jupyter.display import result_text

    b = opened(_gem(gem, "py"))
    text = result_text(b.call("naive", {"title": "milk"}, crash=2))
    assert "crash after ctx call 2" in text and "duplicated: sql orders" in text


def test_N7_calls_frame_shows_keys_and_crashes(gem, open_bench) -> None:
    gem.tool("w", "def handle(input, ctx):\n    ctx.storage.kv.set('k', ctx.idempotencyKey)\n    return 1\n")
    b = open_bench(gem)
    plain, crashed = b.call("w"), b.call("w", crash=1)
    df = b.calls()
    assert df["idempotency_key"].tolist()[0] == plain.idempotency_key
    assert df["idempotency_key"].tolist()[-1] == crashed.idempotency_key != plain.idempotency_key
    assert df["crashed"].tolist()[0] is False and df["crashed"].tolist()[-1] is True
