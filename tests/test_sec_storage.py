"""Adversarial tools against ctx.storage: SEC1 (only the gem's own database), SEC5 (time and
size bounds on every SQL call), D4 (PRAGMA writes), E_BUSY/E_STATE (never E_INTERNAL).

Each attack runs as a Python tool and as a JS tool in the real Deno sandbox, on mock and real
providers.
"""

from __future__ import annotations

import _sqlite3
import ctypes
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import GemBuilder

import workbench
from workbench.ctx import _watchdog
from workbench.ctx.limits import Limits

PY_SQL = """
from workbench import WorkbenchError

def handle(input, ctx):
    out = []
    for method, sql, params in input["ops"]:
        try:
            out.append({"ok": getattr(ctx.storage.sql, method)(sql, params)})
        except WorkbenchError as e:
            out.append({"error": e.code, "message": e.message})
    return out
"""

JS_SQL = """
export default async function (input, ctx) {
  const out = [];
  for (const [method, sql, params] of input.ops) {
    try {
      out.push({ ok: await ctx.storage.sql[method](sql, params) });
    } catch (e) {
      out.push({ error: e.code, message: e.message });
    }
  }
  return out;
}
"""

LANGS = {"py": PY_SQL, "js": JS_SQL}


@pytest.fixture
def sql_bench(gem: GemBuilder, open_bench: Callable[..., workbench.Bench], lang: str):
    """sql_bench(**open options) -> run(*ops) -> [{ok}|{error, message}] from one call."""
    gem.schema_sql("CREATE TABLE t(x);")
    gem.tool("sql", LANGS[lang], ext=lang)
    gem.tool("peek", LANGS[lang], ext=lang, side_effect="read")

    def make(**kw: Any) -> Callable[..., list[dict[str, Any]]]:
        bench = open_bench(gem, **kw)

        def run(*ops: tuple[str, str, list[Any]], tool: str = "sql") -> list[dict[str, Any]]:
            res = bench.call(tool, {"ops": [list(o) for o in ops]})
            assert res.ok, res.error
            run.last = res  # type: ignore[attr-defined]
            return res.value

        run.bench = bench  # type: ignore[attr-defined]
        return run

    return make


def test_SEC1_attach_another_database_is_denied(sql_bench, tmp_path: Path) -> None:
    run = sql_bench()
    victim = tmp_path / "other-gem.sqlite"
    sqlite3.connect(victim).executescript("CREATE TABLE secrets(v); INSERT INTO secrets VALUES ('s3cret');")
    new = tmp_path / "anywhere" / "new.db"
    state_data = tmp_path / "state" / "data.sqlite"  # the bench's own history and kv (real)
    out = run(
        ("execute", "ATTACH DATABASE ? AS p", [str(victim)]),
        ("query", "SELECT v FROM p.secrets", []),
        ("execute", f"ATTACH '{new}' AS n", []),
        ("execute", "ATTACH DATABASE ? AS s", [str(state_data)]),
        ("execute", "ATTACH 'file::memory:?cache=shared' AS m", []),
        ("execute", "DETACH DATABASE main", []),
    )
    assert [o.get("error") for o in out] == [
        "E_PERM_DENIED",
        "E_SQL",
        "E_PERM_DENIED",
        "E_PERM_DENIED",
        "E_PERM_DENIED",
        "E_PERM_DENIED",
    ]
    assert "SEC1" in out[0]["message"]
    assert not new.parent.exists()


def test_SEC1_vacuum_into_a_file_is_denied(sql_bench, tmp_path: Path) -> None:
    run = sql_bench()
    target = tmp_path / "copy.db"
    out = run(("execute", f"VACUUM INTO '{target}'", []), ("execute", "VACUUM", []))
    assert [o["error"] for o in out] == ["E_PERM_DENIED", "E_PERM_DENIED"]
    assert not target.exists()


def test_SEC1_trigger_cannot_reach_the_benchs_history(sql_bench, tmp_path: Path, kind: str) -> None:
    """The attack chain of the issue: plant a trigger in the bench's own database."""
    run = sql_bench()
    out = run(
        ("execute", "ATTACH ? AS wb", [str(tmp_path / "state" / "data.sqlite")]),
        (
            "execute",
            "CREATE TRIGGER wb.wipe AFTER INSERT ON wb._wb_history BEGIN DELETE FROM wb._wb_history; END",
            [],
        ),
        (
            "execute",
            "CREATE TEMP TRIGGER wipe AFTER INSERT ON main._wb_history BEGIN DELETE FROM _wb_history; END",
            [],
        ),
    )
    assert [o.get("error") for o in out] == ["E_PERM_DENIED", "E_SQL", "E_SQL"]
    if kind == "real":
        db = sqlite3.connect(tmp_path / "state" / "data.sqlite")
        assert db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'").fetchone() == (0,)


@pytest.mark.parametrize(
    "pragma",
    [
        "PRAGMA writable_schema = 1",
        "PRAGMA database_list",
        "PRAGMA journal_mode = DELETE",
        "PRAGMA foreign_keys = OFF",
        "PRAGMA temp_store_directory = '/tmp'",
        "PRAGMA mmap_size = 1",
        "PRAGMA main.application_id = 7",
        "PRAGMA cache_size = -2000000",
        "PRAGMA trusted_schema = 1",
        "SELECT * FROM pragma_database_list",
    ],
)
def test_SEC1_pragmas_outside_the_read_only_allowlist_are_denied(sql_bench, pragma: str) -> None:
    run = sql_bench()
    out = run(("query", pragma, []))
    assert out[0].get("error") == "E_PERM_DENIED", out
    assert "PRAGMA" in out[0]["message"]


def test_SEC1_read_only_pragmas_work(sql_bench) -> None:
    run = sql_bench()
    out = run(
        ("query", "PRAGMA table_info(t)", []),
        ("query", "SELECT name FROM pragma_table_info('t')", []),
        ("query", "PRAGMA user_version", []),
        ("query", "PRAGMA integrity_check", []),
    )
    assert [o.get("error") for o in out] == [None] * 4, out
    assert out[0]["ok"][0]["name"] == "x" and out[1]["ok"] == [{"name": "x"}]
    assert out[2]["ok"] == [{"user_version": 1}] and out[3]["ok"] == [{"integrity_check": "ok"}]


def test_SEC1_extension_loading_is_denied(sql_bench) -> None:
    run = sql_bench()
    out = run(
        ("query", "SELECT load_extension('/usr/lib/x86_64-linux-gnu/libm.so.6')", []),
        ("query", "SELECT fts3_tokenizer('simple')", []),
    )
    assert out[0]["error"] == "E_PERM_DENIED"
    assert out[1]["error"] in ("E_PERM_DENIED", "E_SQL")


def test_SEC1_schema_sql_is_confined_too(gem: GemBuilder, open_bench, tmp_path: Path) -> None:
    target = tmp_path / "planted.db"
    gem.schema_sql(f"ATTACH '{target}' AS p; CREATE TABLE p.t(x);")
    gem.tool("t", "def handle(i, ctx): return 1")
    with pytest.raises(workbench.GemLoadError) as exc:
        open_bench(gem)
    assert "SEC1" in exc.value.message and exc.value.details["file"] == "db/schema.sql"
    assert not target.exists()


def test_D4_user_version_write_by_a_read_tool_is_reported(sql_bench) -> None:
    run = sql_bench()
    assert run(("execute", "PRAGMA user_version = 5", []), tool="peek")[0].get("error") is None
    assert any("D4" in v for v in run.last.violations)  # type: ignore[attr-defined]
    assert run(("query", "PRAGMA user_version", []), tool="peek")[0]["ok"] == [{"user_version": 5}]
    assert not run.last.violations  # type: ignore[attr-defined]  # reading is not a write
    strict = sql_bench(strict=True)
    res = strict.bench.call("peek", {"ops": [["execute", "PRAGMA user_version = 6", []]]})
    assert res.value[0]["error"] == "E_SIDE_EFFECT"


def sql_outcome(res: workbench.CallResult) -> str | None:
    """The ctx.storage.sql call's own outcome (its error code; None when it returned rows), from
    the call's trace. A JS call whose time ran out is also stopped as a whole (E_TIMEOUT), whether
    or not its statement had stopped: only the ctx call's own code says that it had."""
    (row,) = [r for r in res.trace_rows if r["method"].startswith("storage.sql.")]
    return row["error"]


def test_SEC5_runaway_query_stops_at_the_call_timeout(sql_bench, lang: str) -> None:
    run = sql_bench(timeout=2)
    forever = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT max(i) FROM r"
    run(("query", "SELECT 1 AS one", []))  # the sandbox starts first: the 2 s are the query's
    res = run.bench.call("sql", {"ops": [["query", forever, []]]})
    # The statement never ends on its own: that the call returned at all, with the storage
    # call's own E_TIMEOUT, is the proof that it was interrupted at the deadline (the watchdog's
    # interrupt, nothing else, gives a statement E_TIMEOUT). Before, it ran on after the call's
    # timeout (the case: 40 s past a 3 s timeout).
    outcome = res.value[0]["error"] if res.ok else res.error.code
    assert outcome == "E_TIMEOUT", res
    assert sql_outcome(res) == "E_TIMEOUT", res.trace_rows
    # the bench is still usable afterwards
    assert run(("query", "SELECT 1 AS one", []))[0]["ok"] == [{"one": 1}]


def test_SEC5_no_ctx_call_starts_after_the_deadline(gem: GemBuilder, open_bench) -> None:
    gem.tool(
        "late",
        """
        import time
        from workbench import WorkbenchError

        def handle(input, ctx):
            time.sleep(1.2)
            try:
                ctx.storage.kv.set("k", "v")
            except WorkbenchError as e:
                return e.code
            return "wrote"
        """,
    )
    bench = open_bench(gem, timeout=1)
    res = bench.call("late")
    # the ctx call was refused; what the tool returned after its timeout is discarded
    assert res.error is not None and res.error.code == "E_TIMEOUT" and res.value is None
    assert res.trace["error"].tolist() == ["E_TIMEOUT"]
    assert bench.kv().empty


def test_SEC5_huge_result_is_capped(sql_bench) -> None:
    run = sql_bench(limits=Limits(sql_result_bytes=200_000))
    rows = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r LIMIT 100000) "
    out = run(
        ("query", rows + "SELECT i, hex(zeroblob(50)) AS pad FROM r", []),
        ("query", rows + "SELECT i FROM r WHERE i <= 1000", []),
    )
    assert out[0]["error"] == "E_TOO_LARGE" and "200,000" in out[0]["message"]
    assert len(out[1]["ok"]) == 1000


def test_SEC5_giant_string_is_bounded(sql_bench) -> None:
    run = sql_bench(limits=Limits(sql_value_bytes=1_000_000, sql_statement_bytes=10_000))
    out = run(
        ("query", "SELECT length(zeroblob(2000000)) AS n", []),
        ("query", "SELECT " + " + ".join(["1"] * 5000) + " AS n", []),
        ("query", "SELECT length(zeroblob(900000)) AS n", []),
    )
    assert [o.get("error") for o in out] == ["E_TOO_LARGE", "E_TOO_LARGE", None], out
    assert out[2]["ok"] == [{"n": 900000}]


def test_SEC7_corrupt_state_database_is_a_coded_error(gem: GemBuilder, tmp_path: Path) -> None:
    gem.tool("t", "def handle(i, ctx): return 1")
    state = tmp_path / "state"
    workbench.open(gem.write(), providers="real", state_dir=state).close()
    (state / "sql.sqlite").write_bytes(b"this is not a database" * 100)
    for name in ("sql.sqlite-wal", "sql.sqlite-shm"):
        (state / name).unlink(missing_ok=True)
    with pytest.raises(workbench.WorkbenchError) as exc:
        workbench.open(gem.root, providers="real", state_dir=state)
    assert exc.value.code == "E_STATE" and str(state) in exc.value.message


def test_SEC7_locked_state_folder_is_E_BUSY_not_E_INTERNAL(gem: GemBuilder, tmp_path: Path) -> None:
    gem.tool("t", "def handle(i, ctx):\n    ctx.storage.kv.set('k', 'v')\n    return 1")
    state = tmp_path / "state"
    with workbench.open(gem.write(), providers="real", state_dir=state, timeout=0.5) as bench:
        other = sqlite3.connect(state / "data.sqlite", isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")  # another process's call holds the write lock
            res = bench.call("t")
            assert res.error is not None and res.error.code == "E_BUSY", res
        finally:
            other.close()
        assert bench.call("t").ok  # once the other call is done, this one goes through


def test_a_call_takes_the_storage_lock_at_its_first_ctx_call(gem: GemBuilder, tmp_path: Path) -> None:
    """A tool that makes no ctx call takes no lock (the ctx layer is the only way to storage);
    one whose ctx call cannot get it fails with E_BUSY, its later ctx calls too, caught or not."""
    gem.tool("pure", "def handle(i, ctx): return 2")
    gem.tool(
        "caught",
        "def handle(i, ctx):\n"
        "    for k in ('a', 'b'):\n"
        "        try:\n"
        "            ctx.storage.kv.set(k, 'v')\n"
        "        except Exception:\n"
        "            pass\n"
        "    return 1",
    )
    state = tmp_path / "state"
    with workbench.open(gem.write(), providers="real", state_dir=state, timeout=0.3) as bench:
        other = sqlite3.connect(state / "data.sqlite", isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            assert bench.call("pure").value == 2
            res = bench.call("caught")
            assert res.error is not None and res.error.code == "E_BUSY" and res.value is None
        finally:
            other.close()
        assert bench.call("caught").ok and bench.kv()["key"].tolist() == ["a", "b"]


THREADS = """
import threading

def handle(i, ctx):
    errors = []
    def put(k):
        try:
            ctx.storage.kv.set(k, "v")
        except Exception as e:
            errors.append(repr(e))
    ts = [threading.Thread(target=put, args=(f"k{n}",)) for n in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors
"""


def test_threads_of_a_tool_open_one_storage_transaction(gem: GemBuilder, open_bench) -> None:
    gem.tool("threads", THREADS)
    bench = open_bench(gem)
    for _ in range(5):
        res = bench.call("threads")
        assert res.ok and res.value == [], res
    assert sorted(bench.kv()["key"]) == [f"k{n}" for n in range(8)]


KV_JS = """
export default async function (input, ctx) {
  const lone = "a\\ud800b";
  await ctx.storage.kv.set("k" + lone, lone);
  const col = ctx.data.collection("docs");
  const { id } = await col.insert({ title: lone });
  const found = await col.find({ where: { title: lone } });
  return { kv: await ctx.storage.kv.get("k" + lone), doc: (await col.get(id)).title,
           found: found.items.length,
           sql: (await ctx.storage.sql.query("SELECT ? AS v", [lone]))[0].v };
}
"""

KV_PY = """
def handle(input, ctx):
    lone = "a\\ud800b"
    ctx.storage.kv.set("k" + lone, lone)
    col = ctx.data.collection("docs")
    id = col.insert({"title": lone})["id"]
    found = col.find({"where": {"title": lone}})
    return {"kv": ctx.storage.kv.get("k" + lone), "doc": col.get(id)["title"],
            "found": len(found["items"]),
            "sql": ctx.storage.sql.query("SELECT ? AS v", [lone])[0]["v"]}
"""


@pytest.mark.parametrize("lang", ["py", "js"])
def test_SEC7_lone_surrogates_are_stored_like_the_platform_stores_them(
    gem: GemBuilder, open_bench, lang: str
) -> None:
    gem.collections(docs=["title"]).tool("t", KV_JS if lang == "js" else KV_PY, ext=lang)
    bench = open_bench(gem)
    res = bench.call("t")
    assert res.ok, res.error
    # like TextEncoder: a lone surrogate becomes U+FFFD; what was written is what is read
    assert res.value == {"kv": "a\ufffdb", "doc": "a\ufffdb", "found": 1, "sql": "a\ufffdb"}
    assert bench.kv()["value"].tolist() == ["a\ufffdb"]


@pytest.mark.parametrize("lang", ["py", "js"])
def test_SEC5_storage_values_are_bounded(gem: GemBuilder, open_bench, lang: str) -> None:
    src = {
        "js": """
        export default async function (input, ctx) {
          const big = "x".repeat(input.n), out = [];
          for (const f of [() => ctx.storage.kv.set("k", big),
                           () => ctx.data.collection("docs").insert({ big })]) {
            try { await f(); out.push("ok"); } catch (e) { out.push(e.code); }
          }
          return out;
        }""",
        "py": """
        from workbench import WorkbenchError

        def handle(input, ctx):
            big, out = "x" * input["n"], []
            for f in (lambda: ctx.storage.kv.set("k", big),
                      lambda: ctx.data.collection("docs").insert({"big": big})):
                try:
                    f()
                    out.append("ok")
                except WorkbenchError as e:
                    out.append(e.code)
            return out
        """,
    }[lang]
    gem.collections(docs=[]).tool("t", src, ext=lang)
    bench = open_bench(gem, limits=Limits(sql_value_bytes=100_000))
    assert bench.call("t", {"n": 200_000}).value == ["E_TOO_LARGE", "E_TOO_LARGE"]
    assert bench.call("t", {"n": 1_000}).value == ["ok", "ok"]
    assert len(bench.data("docs")) == 1


# -- found by red-teaming the first fixes --------------------------------------------------
def test_SEC5_expensive_sql_functions_stop_at_the_deadline(sql_bench) -> None:
    """A few costly VM instructions (30 MB randomblobs) run far past a progress handler's
    reach; the watchdog interrupts them at the deadline. The built-in instr() is quadratic and
    uninterruptible inside one call: the workbench's instr() is linear and gives the same answers."""
    run = sql_bench(timeout=2)
    blobs = (
        "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 400) "
        "SELECT sum(length(randomblob(30000000))) AS n FROM c"
    )
    run(("query", "SELECT 1 AS one", []))  # the sandbox starts first: the 2 s are the query's
    res = run.bench.call("sql", {"ops": [["query", blobs, []]]})
    assert (res.value[0]["error"] if res.ok else res.error.code) == "E_TIMEOUT", res
    # the statement's own E_TIMEOUT: only the watchdog's interrupt gives it; uninterrupted, the
    # 400 blobs are summed to the end (28 s on a 5 s timeout before) and the query returns n
    assert sql_outcome(res) == "E_TIMEOUT", res.trace_rows
    slow = (
        "SELECT instr(h, n) AS r, instr(h, 'ab') AS s, instr(x'0061', x'61') AS t, "
        "instr(1.5, '.') AS u FROM (SELECT replace(zeroblob(?), x'00', 'a') AS h, "
        "replace(zeroblob(? / 2), x'00', 'a') || 'b' AS n)"
    )
    # rows within the call's 2 s timeout: the built-in instr() took 39 s here, and past the
    # deadline its statement is interrupted (E_TIMEOUT), so only a linear instr() gives them
    out = run(("query", slow, [1_600_000, 1_600_000]))
    assert out[0]["ok"] == [{"r": 0, "s": 0, "t": 2, "u": 2}], out


FILL = """
def handle(input, ctx):
    col, doc = ctx.data.collection("docs"), {f"k{j}": j for j in range(input["keys"])}
    for i in range(input["docs"]):
        col.insert(doc)
    ctx.storage.kv.set("filled", "yes")
    return True
"""

# 900 conditions on fields no document has: each is a scan of the document's keys, so the cost
# grows as documents x keys x conditions; each condition's call site also keeps its own parse of
# the current document, so the memory grows as keys x conditions
COUNT = {
    "py": """
    from workbench import WorkbenchError

    def handle(input, ctx):
        out = []
        for step in ("before", "count", "after"):
            try:
                if step == "count":
                    where = {f"z{i}": {"ne": 1} for i in range(900)}
                    out.append(ctx.data.collection("docs").count(where))
                else:
                    out.append(ctx.storage.kv.set(step, "yes"))
            except WorkbenchError as e:
                out.append(e.code)
        return out
    """,
    "js": """
    export default async function (input, ctx) {
      const out = [];
      for (const step of ["before", "count", "after"]) {
        try {
          if (step === "count") {
            const where = {};
            for (let i = 0; i < 900; i++) where["z" + i] = { ne: 1 };
            out.push(await ctx.data.collection("docs").count(where));
          } else out.push(await ctx.storage.kv.set(step, "yes"));
        } catch (e) { out.push(e.code); }
      }
      return out;
    }""",
}


def _count_gem(gem: GemBuilder, lang: str) -> GemBuilder:
    peek = "def handle(input, ctx):\n    return sorted(ctx.storage.kv.list())\n"
    return (
        gem.collections(docs=[])
        .tool("fill", FILL)
        .tool("count", COUNT[lang], ext=lang)
        .tool("peek", peek, side_effect="read")
    )


def test_SEC5_an_interrupt_between_statements_is_not_lost() -> None:
    """SQLite forgets an interrupt that lands while no statement runs, and a call may be
    between two statements at its deadline: the watchdog repeats it until disarmed."""
    db = sqlite3.connect(":memory:")
    fired = threading.Event()

    def interrupt() -> None:
        db.interrupt()
        fired.set()

    token = _watchdog.arm(time.monotonic(), interrupt)
    try:
        assert fired.wait(30)  # the first interrupt came and went: no statement was running
        long = "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3e7) "
        with pytest.raises(sqlite3.OperationalError, match="interrupted"):  # ~10 s if not
            db.execute(long + "SELECT count(*) FROM c").fetchone()
    finally:
        _watchdog.disarm(token)
    assert db.execute("SELECT 1").fetchone() == (1,)  # disarmed: the next statement runs


def _count_trace(bench: workbench.Bench) -> tuple[workbench.CallResult, list[tuple[str, Any]]]:
    res = bench.call("count")
    return res, [(r["method"], r["error"]) for r in res.trace_rows]


@pytest.mark.parametrize("lang", ["py", "js"])
def test_SEC5_data_queries_stop_at_the_deadline(gem: GemBuilder, open_bench, lang: str) -> None:
    bench = open_bench(_count_gem(gem, lang), timeout=1)
    for _ in range(20):  # each call has its own second (one takes ~0.1 s)
        assert bench.call("fill", {"docs": 100, "keys": 1000}).ok
    # unbounded, this count takes ~13 s of CPU here: only the deadline's interrupt (the watchdog)
    # makes SQLite fail it with "interrupted", which the ctx layer reports as E_TIMEOUT
    res, trace = _count_trace(bench)
    assert trace[:2] == [("storage.kv.set", None), ("data.count", "E_TIMEOUT")], res.trace
    if lang == "py":  # a Python tool is not stopped: the ctx calls it makes later fail, and
        # what it returns after its deadline is discarded
        assert res.error.code == "E_TIMEOUT" and trace[2] == ("storage.kv.set", "E_TIMEOUT"), res
    else:  # the sandbox is killed at the deadline
        assert res.error.code == "E_TIMEOUT" and len(trace) == 2, res
    # an interrupted read leaves the transaction open: the write before it is kept, as any
    # write of a failed call is
    assert bench.call("peek").value == ["before", "filled"]


@pytest.fixture
def sqlite_heap_restored() -> Iterator[None]:
    """SQLite's heap limits as they were before the test, after it. They are process-wide, and
    PRAGMA hard_heap_limit only ever lowers the hard one (a higher value is ignored): a test
    that lowered it to 64 MiB left every later bench of the process (an xdist worker's too)
    64 MiB, whatever its limits say. So they are set back through SQLite's C API, in the
    library the sqlite3 module runs on (its own symbols, or those of the libsqlite3 it links)."""
    lib = ctypes.CDLL(_sqlite3.__file__)
    hard, soft = lib.sqlite3_hard_heap_limit64, lib.sqlite3_soft_heap_limit64
    for f in (hard, soft):
        f.restype, f.argtypes = ctypes.c_int64, [ctypes.c_int64]
    before = hard(-1), soft(-1)  # (-1: only read)
    yield
    hard(before[0])
    soft(before[1])  # after the hard one: a hard limit below the soft one lowers it
    assert (hard(-1), soft(-1)) == before


@pytest.mark.usefixtures("sqlite_heap_restored")
@pytest.mark.parametrize("lang", ["py", "js"])
def test_SEC5_data_query_out_of_memory_ends_the_call(gem: GemBuilder, open_bench, lang: str) -> None:
    # 64 MB: unbounded, the count holds ~1 GB
    bench = open_bench(_count_gem(gem, lang), limits=Limits(sqlite_heap_bytes=64 * 1024 * 1024))
    assert bench.call("fill", {"docs": 2, "keys": 20_000}).ok
    res, trace = _count_trace(bench)
    # SQLite ended the transaction: the first write is lost, so the call fails, and the last
    # write never runs (it would commit on its own, outside the call's transaction)
    assert trace == [("storage.kv.set", None), ("data.count", "E_TOO_LARGE")], res.trace
    assert res.error.code == "E_TOO_LARGE" and "67,108,864 bytes" in res.error.message, res
    assert "rolled back" in res.error.message
    assert bench.call("peek").value == ["filled"]


def test_SEC5_result_caps_count_row_by_row(sql_bench) -> None:
    run = sql_bench(limits=Limits(sql_result_bytes=1_000_000))
    wide = "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 60) "
    out = run(("query", wide + "SELECT zeroblob(3000000) AS b FROM c", []))
    assert out[0]["error"] == "E_TOO_LARGE"


@pytest.mark.usefixtures("sqlite_heap_restored")
def test_SEC5_one_row_cannot_make_sqlite_hold_gigabytes(sql_bench) -> None:
    run = sql_bench(limits=Limits(sqlite_heap_bytes=256 * 1024 * 1024))
    cols = ", ".join(f"randomblob(30000000) AS c{i}" for i in range(40))  # 1.2 GB in one row
    out = run(("query", f"SELECT {cols}", []))
    assert out[0]["error"] == "E_TOO_LARGE" and "268,435,456" in out[0]["message"], out
    assert run(("query", "SELECT length(randomblob(1000)) AS n", []))[0]["ok"] == [{"n": 1000}]


@pytest.mark.parametrize("lang", ["py", "js"])
def test_SEC5_kv_list_and_find_results_are_capped(gem: GemBuilder, open_bench, lang: str) -> None:
    src = {
        "py": """
        from workbench import WorkbenchError

        def handle(input, ctx):
            col, out = ctx.data.collection("docs"), []
            for i in range(100):
                ctx.storage.kv.set(f"key{i:03}" + "x" * 200, "v")
                col.insert({"pad": "y" * 200})
            for f in (lambda: ctx.storage.kv.list(), lambda: col.find({"limit": 1000}),
                      lambda: len(ctx.storage.kv.list("key001")), lambda: len(col.find({"limit": 5})["items"])):
                try:
                    out.append(f())
                except WorkbenchError as e:
                    out.append(e.code)
            return out
        """,
        "js": """
        export default async function (input, ctx) {
          const col = ctx.data.collection("docs"), out = [];
          for (let i = 0; i < 100; i++) {
            await ctx.storage.kv.set("key" + String(i).padStart(3, "0") + "x".repeat(200), "v");
            await col.insert({ pad: "y".repeat(200) });
          }
          for (const f of [() => ctx.storage.kv.list(), () => col.find({ limit: 1000 }),
                           async () => (await ctx.storage.kv.list("key001")).length,
                           async () => (await col.find({ limit: 5 })).items.length]) {
            try { out.push(await f()); } catch (e) { out.push(e.code); }
          }
          return out;
        }""",
    }[lang]
    gem.collections(docs=[]).tool("t", src, ext=lang)
    bench = open_bench(gem, limits=Limits(sql_result_bytes=10_000))
    assert bench.call("t").value == ["E_TOO_LARGE", "E_TOO_LARGE", 1, 5]


def test_SEC5_storage_size_is_bounded(sql_bench) -> None:
    run = sql_bench(limits=Limits(storage_bytes=1024 * 1024))
    out = run(
        ("execute", "INSERT INTO t VALUES (randomblob(400000))", []),
        (
            "execute",
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c "
            "WHERE i < 3) INSERT INTO t SELECT randomblob(400000) FROM c",
            [],
        ),
        ("query", "SELECT count(*) AS n FROM t", []),
    )
    assert out[0]["ok"]["changes"] == 1
    assert out[1]["error"] == "E_TOO_LARGE" and "1,048,576" in out[1]["message"]
    assert out[2]["ok"] == [{"n": 1}]


@pytest.mark.parametrize("lang", ["py", "js"])
def test_SEC7_odd_storage_arguments_are_coded_not_internal(gem: GemBuilder, open_bench, lang: str) -> None:
    src = {
        "js": """
        export default async function (input, ctx) {
          const out = [];
          for (const f of [() => ctx.data.collection("docs").count({ a: 12345678901234567890 }),
                           () => ctx.storage.sql.query("SELECT ? AS v", [1e20]),
                           () => ctx.data.collection(["docs"]).find(),
                           () => ctx.data.collection({ a: 1 }).count(),
                           () => ctx.data.collection("docs").find({ cursor: "o:" + "9".repeat(30) })]) {
            try { await f(); out.push("ok"); } catch (e) { out.push(e.code); }
          }
          return out;
        }""",
        "py": """
        from workbench import WorkbenchError

        def handle(input, ctx):
            out = []
            for f in (lambda: ctx.data.collection("docs").count({"a": 12345678901234567890}),
                      lambda: ctx.storage.sql.query("SELECT ? AS v", [10**20]),
                      lambda: ctx.data.collection(["docs"]).find(),
                      lambda: ctx.data.collection({"a": 1}).count(),
                      lambda: ctx.data.collection("docs").find({"cursor": "o:" + "9" * 30})):
                try:
                    f()
                    out.append("ok")
                except WorkbenchError as e:
                    out.append(e.code)
            return out
        """,
    }[lang]
    gem.collections(docs=["a"]).tool("t", src, ext=lang)
    out = open_bench(gem).call("t").value
    # a JS number is a double: 12345678901234567890 and 1e20 bind as REAL, as on the platform;
    # a Python int over 64 bits has no SQLite type
    assert out[2:] == ["E_INVALID_ARGUMENT"] * 3, out
    assert out[:2] == (["ok", "ok"] if lang == "js" else ["E_INVALID_ARGUMENT"] * 2), out


def test_D4_temp_tables_do_not_outlive_the_call(sql_bench) -> None:
    """A read tool's TEMP table named like a main table would swallow a later call's writes."""
    run = sql_bench(strict=True)
    assert run(("execute", "CREATE TEMP TABLE t(x)", []), tool="peek")[0].get("error") is None
    out = run(("execute", "INSERT INTO t VALUES (1)", []), ("query", "SELECT count(*) AS n FROM main.t", []))
    assert out[1]["ok"] == [{"n": 1}]
    assert run.bench.sql("SELECT count(*) AS n FROM t")["n"].tolist() == [1]
    assert run.bench.sql("SELECT count(*) AS n FROM temp.sqlite_master")["n"].tolist() == [0]


def test_SEC7_temp_tables_bound_by_foreign_keys_are_dropped_at_the_end_of_the_call(sql_bench) -> None:
    """TEMP tables whose rows reference each other (a FOREIGN KEY, immediate or deferred):
    dropping the parent first failed with "FOREIGN KEY constraint failed", an IntegrityError
    out of bench.call. They are dropped with foreign keys off for the drop, and on again after."""
    run = sql_bench()
    run(
        ("execute", "CREATE TEMP TABLE p(id INTEGER PRIMARY KEY)", []),
        ("execute", "CREATE TEMP TABLE c(pid INTEGER REFERENCES p(id))", []),
        ("execute", "CREATE TEMP TABLE d(pid REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)", []),
        ("execute", "INSERT INTO p VALUES (1)", []),
        ("execute", "INSERT INTO c VALUES (1)", []),
        ("execute", "INSERT INTO d VALUES (1)", []),
    )
    assert run.last.violations == []
    assert run.bench.sql("SELECT count(*) AS n FROM temp.sqlite_master")["n"].tolist() == [0]
    out = run(
        ("execute", "CREATE TABLE IF NOT EXISTS pk(id INTEGER PRIMARY KEY)", []),
        ("execute", "CREATE TABLE IF NOT EXISTS fk(pid INTEGER REFERENCES pk(id))", []),
        ("execute", "INSERT INTO fk VALUES (7)", []),  # foreign keys are still enforced
    )
    assert out[2].get("error") == "E_SQL" and "FOREIGN KEY" in out[2]["message"], out


def test_D3_a_tool_resetting_user_version_does_not_reapply_the_schema(
    gem: GemBuilder, tmp_path: Path
) -> None:
    gem.schema_sql("CREATE TABLE closed(note_id); INSERT INTO closed VALUES ('seed');")
    gem.tool("t", LANGS["js"], ext="js")
    state = tmp_path / "state"
    with workbench.open(gem.write(), providers="real", state_dir=state) as bench:
        assert bench.call("t", {"ops": [["execute", "PRAGMA user_version = 0", []]]}).ok
    with workbench.open(gem.root, providers="real", state_dir=state) as bench:
        assert bench.sql("SELECT note_id FROM closed")["note_id"].tolist() == ["seed"]


def test_SEC7_gem_chosen_table_names_do_not_break_diff_or_crash_reports(sql_bench) -> None:
    run = sql_bench()
    snap = run.bench.snapshot()
    run(
        ("execute", 'CREATE TABLE "a""b"(x)', []),
        ("execute", 'INSERT INTO "a""b" VALUES (1)', []),
        ("execute", "CREATE TABLE sneaky(rowid, v)", []),
        *[("execute", "INSERT INTO sneaky VALUES ('k', 'charge card')", [])] * 3,
    )
    diff = run.bench.diff(snap)
    assert diff["where"].tolist().count('a"b') == 1
    sneaky = diff[diff["where"] == "sneaky"]
    assert sneaky["change"].tolist() == ["inserted"] * 3  # not 1 "updated" row
    res = run.bench.call(
        "sql", {"ops": [["execute", "INSERT INTO sneaky VALUES ('k', 'charge card')", []]]}, crash=1
    )
    assert res.ok and res.crash is not None and res.crash.duplicates


def test_D3_a_gem_copying_another_gems_id_gets_none_of_its_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEM_WORKBENCH_HOME", str(tmp_path / "home"))
    victim, thief = GemBuilder(tmp_path / "victim"), GemBuilder(tmp_path / "thief")
    for g in (victim, thief):
        g.manifest["id"] = "acme.notes"
        g.tool(
            "kv",
            "def handle(i, ctx):\n    if 'v' in i: ctx.storage.kv.set('api_token', i['v'])\n"
            "    return ctx.storage.kv.get('api_token')",
        )
    with workbench.open(victim.write(), providers="real") as b:
        assert b.call("kv", {"v": "VICTIM-SECRET"}).value == "VICTIM-SECRET"
    with workbench.open(thief.write(), providers="real") as b:
        assert b.call("kv").value is None
    with workbench.open(victim.root, providers="real") as b:  # the victim's own state stays
        assert b.call("kv").value == "VICTIM-SECRET"


@pytest.mark.usefixtures("sqlite_heap_restored")
def test_SEC5_the_bench_opened_last_sets_the_heap_limit(gem: GemBuilder, open_bench) -> None:
    """The limit is process-wide, and the PRAGMA can only lower it: a bench opened with a
    small one left every later bench of the process (a notebook's) under it."""
    gem.tool("noop", "def handle(input, ctx):\n    return 1\n")

    def limit() -> int:
        return sqlite3.connect(":memory:").execute("PRAGMA hard_heap_limit").fetchone()[0]

    open_bench(gem, limits=Limits(sqlite_heap_bytes=64 * 1024 * 1024))
    assert limit() == 64 * 1024 * 1024
    open_bench(gem)
    assert limit() == Limits().sqlite_heap_bytes


# -- D3: a state folder belongs to one gem -----------------------------------------------------
KEEPER = """
def handle(input, ctx):
    if input.get("put"):
        ctx.storage.kv.set("secret", "A's")
        ctx.storage.sql.execute("CREATE TABLE IF NOT EXISTS s (v)")
        ctx.storage.sql.execute("INSERT INTO s VALUES (?)", ["A row"])
        ctx.files.write("workspace:a.txt", "A's file")
    return {"kv": ctx.storage.kv.get("secret"),
            "files": [e["name"] for e in ctx.files.list("workspace:")]}
"""


def _gem(root: Path, gem_id: str, platform: str | None = None) -> Path:
    g = GemBuilder(root)
    g.manifest["id"] = gem_id
    g.tool("keeper", KEEPER)
    if platform == "agent":
        g.as_agent()
    return g.write()


@pytest.mark.parametrize("other", ["another id", "another platform"])
def test_D3_a_state_folder_opened_for_another_gem_is_E_STATE_naming_both(tmp_path: Path, other: str) -> None:
    state = tmp_path / "state"
    a = _gem(tmp_path / "a", "gem.a")
    with workbench.open(a, providers="real", state_dir=state, workspace=state / "ws") as bench:
        assert bench.call("keeper", {"put": True}).value == {"kv": "A's", "files": ["a.txt"]}
    b = _gem(tmp_path / "b", "gem.b") if other == "another id" else _gem(tmp_path / "b", "gem.a", "agent")
    ws = {"workspace": state / "ws"} if other == "another id" else {}  # agent tools have no ctx.files
    with pytest.raises(workbench.WorkbenchError) as exc:  # before: B's tool read A's kv and files
        workbench.open(b, providers="real", state_dir=state, **ws)
    err = exc.value
    assert err.code == "E_STATE" and str(state) in err.message
    assert "gem 'gem.a' (platform notochord)" in err.message
    assert (
        "gem 'gem.b' (platform notochord)" if other == "another id" else "(platform agent)"
    ) in err.message
    with workbench.open(a, providers="real", state_dir=state, workspace=state / "ws") as bench:
        assert bench.call("keeper").value == {"kv": "A's", "files": ["a.txt"]}  # its owner still may


def test_D3_cli_call_with_another_gems_state_is_a_coded_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    state = tmp_path / "state"
    cmd = [sys.executable, "-m", "workbench.cli", "call"]
    for gem, ok in ((_gem(tmp_path / "a", "gem.a"), True), (_gem(tmp_path / "b", "gem.b"), False)):
        out = subprocess.run(
            [*cmd, str(gem), "keeper", "--input", '{"put": true}', "--state", str(state)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (out.returncode == 0) is ok, out.stderr
    assert out.stderr.startswith("error E_STATE: ") and "Traceback" not in out.stderr
    assert "'gem.a'" in out.stderr and "'gem.b'" in out.stderr
    assert json.loads(out.stderr.split("\n", 1)[1])["error"]["code"] == "E_STATE"


def test_D3_a_state_folder_without_a_record_is_adopted(tmp_path: Path) -> None:
    """A folder from before the record: the first gem opened on it becomes its owner."""
    state = tmp_path / "state"
    a, b = _gem(tmp_path / "a", "gem.a"), _gem(tmp_path / "b", "gem.b")
    with workbench.open(a, providers="real", state_dir=state) as bench:
        bench.call("keeper", {"put": True})
    (state / "gem.json").unlink()  # as every state folder was before
    workbench.open(a, providers="real", state_dir=state).close()
    assert json.loads((state / "gem.json").read_text()) == {"id": "gem.a", "platform": "notochord"}
    with pytest.raises(workbench.WorkbenchError, match="belongs to gem 'gem.a'"):
        workbench.open(b, providers="real", state_dir=state)


@pytest.mark.parametrize("record", [b"{", b"[1]", b'{"id": 1, "platform": "x"}', b"\xff"])
def test_D3_an_unreadable_record_is_E_STATE(tmp_path: Path, record: bytes) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "gem.json").write_bytes(record)
    with pytest.raises(workbench.WorkbenchError) as exc:
        workbench.open(_gem(tmp_path / "a", "gem.a"), providers="real", state_dir=state)
    assert exc.value.code == "E_STATE" and "gem.json" in exc.value.message


# -- D4: an attempt counts, refused or not -----------------------------------------------------
D4_PY = """
from workbench import WorkbenchError

def handle(input, ctx):
    out = []
    for s in input["steps"]:
        obj = ctx.data.collection(s[1]) if s[0] == "data" else getattr(ctx.storage, s[0])
        args = s[3:] if s[0] == "data" else s[2:]
        method = s[2] if s[0] == "data" else s[1]
        try:
            getattr(obj, method)(*args)
            out.append("ok")
        except WorkbenchError as e:
            out.append(e.code)
    return out
"""
D4_JS = """
export default async function (input, ctx) {
  const out = [];
  for (const s of input.steps) {
    const data = s[0] === "data";
    const obj = data ? ctx.data.collection(s[1]) : ctx.storage[s[0]];
    const method = data ? s[2] : s[1];
    try { await obj[method](...s.slice(data ? 3 : 2)); out.push("ok"); } catch (e) { out.push(e.code); }
  }
  return out;
}
"""
BIG = "x" * (1024 + 1)


@pytest.mark.parametrize("strict", [False, True])
def test_D4_a_refused_write_attempt_of_a_read_tool_is_recorded(
    gem: GemBuilder, open_bench: Callable[..., workbench.Bench], lang: str, strict: bool
) -> None:
    """A read tool that tries to write: refused in strict mode (E_SIDE_EFFECT), or failing on
    its own arguments (too large, not a string, not JSON), the attempt is a D4 violation all
    the same. Before: a refused write left res.violations empty, so plan mode's report missed
    the tool that tried."""
    gem.tool("r", D4_JS if lang == "js" else D4_PY, ext=lang, side_effect="read")
    gem.collections(notes=[]).schema_sql("CREATE TABLE t (x);")
    bench = open_bench(gem, strict=strict, limits=Limits(sql_value_bytes=1024))
    cases = {
        "storage.sql": ["sql", "execute", "INSERT INTO t VALUES (1)"],
        "storage.kv.set": ["kv", "set", "k", BIG],  # over the entry limit: E_TOO_LARGE
        "storage.kv.delete": ["kv", "delete", 5],  # not a string: E_INVALID_ARGUMENT
        "data.notes.insert": ["data", "notes", "insert", {"t": BIG}],
        "data.notes.update": ["data", "notes", "update", "no-such-id", {"t": 1}],
        "data.notes.delete": ["data", "notes", "delete", 7],
    }
    for method, step in cases.items():
        res = bench.call("r", {"steps": [step]})
        assert res.ok, res.error
        assert res.value != ["ok"] or method == "storage.sql" and not strict, (method, res.value)
        assert len(res.violations) == 1 and f"({method})" in res.violations[0], (method, res.violations)
        if strict and method in ("storage.sql", "data.notes.update"):  # arguments fine: D4 refuses
            assert res.value == ["E_SIDE_EFFECT"], (method, res.value)
    assert len(bench.kv()) == 0 and len(bench.data("notes")) == 0


@pytest.mark.parametrize("strict", [False, True])
def test_D4_a_write_SQLite_cannot_compile_is_a_violation_of_a_read_tool(sql_bench, strict: bool) -> None:
    """`INSERT INTO no_such_table` never reaches SQLite's authorizer (the table lookup fails
    first), so a read tool's attempt left no D4 violation. A failed statement is read from its
    first words (after comments and WITH): a write of the gem's tables is counted, in strict
    mode too (the call sees SQLite's E_SQL: nothing was written); reads and TEMP writes not."""
    run = sql_bench(strict=strict)
    writes = [
        "INSERT INTO no_such_table VALUES (1)",
        "/* c */ -- line\n  replace into main.no_such_table values (1)",
        "WITH x AS (SELECT 1) UPDATE no_such_table SET a = 1",
        "CREATE TABLE c AS SELECT * FROM no_such_table",
        "DROP TABLE no_such_table",
    ]
    for sql in writes:  # (CREATE TABLE is seen before its SELECT fails: refused in strict mode)
        out = run(("execute", sql, []), tool="peek")
        assert out[0].get("error") in ({"E_SQL", "E_SIDE_EFFECT"} if strict else {"E_SQL"}), (sql, out)
        assert out[0]["error"] == "E_SQL" or sql.startswith("CREATE"), (sql, out)
        assert len(run.last.violations) == 1 and "(storage.sql)" in run.last.violations[0], (
            sql,
            run.last.violations,
        )
    not_writes = [
        "SELECT * FROM no_such_table",
        "WITH w AS (SELECT 1) SELECT * FROM no_such_table",
        "INSERT INTO temp.no_such_table VALUES (1)",
        "CREATE TEMP TABLE s AS SELECT * FROM no_such_table",
        'INSERT INTO "no such" (',
    ]
    for sql in not_writes[:-1]:
        out = run(("query", sql, []), tool="peek")
        assert out[0].get("error") == "E_SQL" and run.last.violations == [], (sql, out, run.last.violations)
    out = run(("execute", not_writes[-1], []), tool="peek")  # a write all the same, cut short
    assert out[0].get("error") == "E_SQL" and len(run.last.violations) == 1
    assert run.bench.sql("SELECT count(*) AS n FROM t")["n"].tolist() == [0]


@pytest.mark.parametrize(
    ("sql", "write"),
    [
        ("INSERT INTO no_such_table VALUES (1)", True),
        ("  -- note\n /* c */ insert into n values (1)", True),
        ("WITH x AS (SELECT 1) INSERT INTO n SELECT * FROM x", True),
        ("WITH a AS NOT MATERIALIZED (SELECT 1), b AS (SELECT 2) DELETE FROM n", True),
        ("WITH RECURSIVE x(n) AS (SELECT 1 UNION SELECT n + 1 FROM x) SELECT * FROM n", False),
        ("REPLACE INTO n VALUES (1)", True),
        ("UPDATE OR IGNORE n SET a = 1", True),
        ("ALTER TABLE n ADD COLUMN y", True),
        ("DROP TABLE IF EXISTS main.n", True),
        ('INSERT INTO "main".n VALUES (1)', True),
        ('UPDATE "temp" SET a = 1', True),  # a table named temp, not the schema
        ("INSERT INTO temp.n VALUES (1)", False),
        ("insert or replace into TEMP . n values (1)", False),
        ('INSERT INTO "temp".n VALUES (1)', False),
        ("CREATE TEMPORARY VIEW v AS SELECT * FROM n", False),
        ("DROP TABLE IF EXISTS temp.n", False),
        ("SELECT * FROM n", False),
        ("EXPLAIN INSERT INTO n VALUES (1)", False),
        ("'insert", False),
        ("/* unterminated insert", False),
        ("", False),
    ],
)
def test_D4_a_failed_statement_is_read_from_its_first_words(sql: str, write: bool) -> None:
    from workbench.ctx._sqlwrite import writes_storage

    assert writes_storage(sql) is write
