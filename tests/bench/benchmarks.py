"""The issue-2 benchmarks: each returns a dict of figures, with baselines measured in the same run.

Times are medians (time.perf_counter_ns) after warm-up. Nothing here asserts a time: `run.py`
compares the figures with the targets and prints OK / MISS.
"""

from __future__ import annotations

import importlib.util
import json
import secrets
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from benchlib import QUICK, Figures, Sizes, no_gc, paired_median_ns, per_call_ns, time_ns, write_gem

import workbench

NOOP = """
def handle(input, ctx):
    return {"ok": True}
"""

STATUSES = ("open", "done", "x", "archived", "waiting")
# the tool and the raw-SQLite baseline build the very same documents
INSERT = f"""
STATUSES = {STATUSES!r}

def handle(input, ctx):
    notes = ctx.data.collection("notes")
    for i in range(input["n"]):
        notes.insert({{"title": f"note {{i}}", "status": STATUSES[i % 5], "priority": i % 5 + 1}})
    return {{"n": input["n"]}}
"""

FIND = """
import time

def handle(input, ctx):
    notes = ctx.data.collection("notes")
    query = {"where": {"status": "x"}, "limit": 10}
    ns = []
    for _ in range(input["times"]):
        t0 = time.perf_counter_ns()
        notes.find(query)
        ns.append(time.perf_counter_ns() - t0)
    return {"ns": ns}
"""

INDEXES = {"notes": ["status", "priority"]}
RAW_DDL = """
CREATE TABLE c_notes (rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, doc TEXT NOT NULL);
CREATE INDEX ix_notes_status ON c_notes(json_extract(doc, '$.status'));
CREATE INDEX ix_notes_priority ON c_notes(json_extract(doc, '$.priority'));
"""
RAW_FIND = "SELECT id, doc FROM c_notes WHERE json_extract(doc, '$.status') = ? ORDER BY rid LIMIT ? OFFSET ?"
HEAVY_MODULES = ("pandas", "jsonschema", "ipywidgets")


@contextmanager
def _gem_bench(gem: Path, providers: str = "mock", state: Path | None = None) -> Iterator[workbench.Bench]:
    """A bench on the gem folder `gem`; real providers keep their state in `state`."""
    bench = workbench.open(
        gem,
        providers=providers,
        headless=True,
        state_dir=state,
        workspace=state / "workspace" if state else None,
    )
    try:
        yield bench
    finally:
        bench.close()


def _call(bench: workbench.Bench, tool: str, input: dict) -> workbench.CallResult:
    res = bench.call(tool, input)
    if not res.ok:
        raise RuntimeError(f"benchmark tool {tool!r} failed: {res.error}")
    return res


def bench_call_overhead(sizes: Sizes = QUICK) -> Figures:
    """In-process Python tool call: bench.call("noop", {}) vs calling its handle() directly."""
    with tempfile.TemporaryDirectory() as d:
        gem = write_gem(Path(d), {"noop": NOOP})
        spec = importlib.util.spec_from_file_location("bench_noop", gem / "tools" / "noop.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        with _gem_bench(gem) as bench:
            call, direct = per_call_ns(
                lambda: bench.call("noop", {}), lambda: module.handle({}, None), sizes.calls, sizes.batches
            )
    return {
        "call_us": call / 1e3,
        "direct_us": direct / 1e3,
        "added_us": (call - direct) / 1e3,
        "ratio": call / direct,
    }


def _raw_insert(conn: sqlite3.Connection, n: int) -> None:
    """The baseline: build the same n docs, serialise them, one executemany in one transaction."""
    rows = [
        (
            secrets.token_hex(8),
            json.dumps(
                {"title": f"note {i}", "status": STATUSES[i % 5], "priority": i % 5 + 1},
                ensure_ascii=False,
                separators=(",", ":"),
            ),
        )
        for i in range(n)
    ]
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO c_notes(id, doc) VALUES (?, ?)", rows)
    conn.execute("COMMIT")


def _raw_db(path: Path | None) -> sqlite3.Connection:
    """A raw SQLite database with the collection's table; a file one set up like real storage."""
    conn = sqlite3.connect(path or ":memory:", isolation_level=None)
    if path is not None:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
    conn.executescript(RAW_DDL)
    return conn


def bench_insert(sizes: Sizes = QUICK, providers: str = "mock") -> Figures:
    """One tool call inserting `sizes.docs` docs vs raw executemany of the same docs.

    mock is compared with an in-memory database, real with a file database (WAL,
    synchronous=FULL, like real storage). Each repetition starts from an empty collection.
    """
    n = sizes.docs
    tool_ns: list[int] = []
    raw_ns: list[int] = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        gem = write_gem(tmp / "gem", {"insert": INSERT}, INDEXES)
        for rep in range(-1, sizes.bulk_reps):  # rep -1 warms up, untimed
            count = min(n, 1000) if rep < 0 else n
            state = tmp / f"state{rep}" if providers == "real" else None
            with _gem_bench(gem, providers, state) as bench:
                t = time_ns(lambda: _call(bench, "insert", {"n": count}))
            conn = _raw_db(tmp / f"raw{rep}.sqlite" if providers == "real" else None)
            try:
                r = time_ns(lambda: _raw_insert(conn, count))
            finally:
                conn.close()
            if rep >= 0:
                tool_ns.append(t)
                raw_ns.append(r)
    tool, raw = statistics.median(tool_ns), statistics.median(raw_ns)
    return {
        "docs": n,
        "tool_ms": tool / 1e6,
        "raw_ms": raw / 1e6,
        "ratio": tool / raw,
        "tool_us_per_doc": tool / n / 1e3,
    }


def bench_find(sizes: Sizes = QUICK) -> Figures:
    """Indexed find (where status = "x", limit 10) on `sizes.docs` docs vs the same raw query.

    Figures: the median time of one find as the tool sees it, the median of the trace's
    duration_us for it (the ctx layer alone), and the raw query plus JSON decoding on the
    same connection.
    """
    with (
        tempfile.TemporaryDirectory() as d,
        _gem_bench(write_gem(Path(d), {"insert": INSERT, "find": FIND}, INDEXES)) as bench,
    ):
        _call(bench, "insert", {"n": sizes.docs})
        _call(bench, "find", {"times": 20})  # warm-up
        with no_gc():
            res = _call(bench, "find", {"times": sizes.finds})
        tool = statistics.median(res.value["ns"])
        traced = statistics.median(r["duration_us"] for r in res.trace_rows if r["method"] == "data.find")
        conn = bench.providers.data_db.conn

        def raw() -> list[dict]:
            rows = conn.execute(RAW_FIND, ("x", 11, 0)).fetchall()
            return [{"id": i, **json.loads(doc)} for i, doc in rows[:10]]

        for _ in range(20):
            raw()
        with no_gc():
            raw_ns = statistics.median(time_ns(raw) for _ in range(sizes.finds))
    return {
        "docs": sizes.docs,
        "tool_ms": tool / 1e6,
        "trace_ms": traced / 1e3,
        "raw_ms": raw_ns / 1e6,
        "ratio": tool / raw_ns,
    }


def bench_dataframe(sizes: Sizes = QUICK) -> Figures:
    """bench.data("notes") vs pandas.read_sql of the same table on the same connection."""
    import pandas as pd

    with (
        tempfile.TemporaryDirectory() as d,
        _gem_bench(write_gem(Path(d), {"insert": INSERT}, INDEXES)) as bench,
    ):
        _call(bench, "insert", {"n": sizes.docs})
        conn = bench.providers.data_db.conn
        frame, raw = paired_median_ns(
            lambda: bench.data("notes"),
            lambda: pd.read_sql("select id, doc from c_notes", conn),
            sizes.frame_reps,
        )
    return {"docs": sizes.docs, "data_ms": frame / 1e6, "read_sql_ms": raw / 1e6, "ratio": frame / raw}


def _python(code: str) -> Callable[[], object]:
    """Start a fresh interpreter running `code` and wait for it."""
    return lambda: subprocess.run([sys.executable, "-c", code], check=True)


def bench_import(sizes: Sizes = QUICK) -> Figures:
    """`import workbench` in a fresh interpreter vs `python -c pass`, and what it dragged in."""
    imported, bare = paired_median_ns(_python("import workbench"), _python("pass"), sizes.imports)
    probe = f"import sys, workbench; print(' '.join(m for m in {HEAVY_MODULES!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True)
    return {
        "import_ms": imported / 1e6,
        "python_ms": bare / 1e6,
        "added_ms": (imported - bare) / 1e6,
        "ratio": imported / bare,
        "heavy_modules": out.stdout.split(),
    }


def bench_startup(sizes: Sizes = QUICK) -> Figures:
    """Issue 13: `gem-workbench check` on the notes gem and the first `workbench.open` in a
    fresh process, each against `python -c pass` of the same run (absolute target 0.5 s)."""
    notes = str(Path(__file__).resolve().parents[2] / "notebooks" / "gems" / "notes")
    check = [sys.executable, "-m", "workbench.cli", "check", notes]
    with tempfile.TemporaryDirectory() as d:
        opened = f"import workbench; workbench.open({notes!r}, state_dir={d!r}).close()"
        check_ns, bare = paired_median_ns(
            lambda: subprocess.run(check, check=True, capture_output=True), _python("pass"), sizes.imports
        )
        open_ns, bare2 = paired_median_ns(_python(opened), _python("pass"), sizes.imports)
    return {
        "check_ms": check_ns / 1e6,
        "open_ms": open_ns / 1e6,
        "python_ms": min(bare, bare2) / 1e6,
        "check_ratio": check_ns / bare,
        "open_ratio": open_ns / bare2,
    }
