"""N9 counts a result the way the platform's JSON.stringify writes it, for Python and JS tools."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from conftest import GemBuilder

import workbench
from workbench._json import js_number

SAMPLES = [
    1.0,
    1.5,
    123.456,
    1e16,
    1e21,
    1.5e21,
    1e-5,
    1.5e-7,
    0.1,
    1e-7,
    1e-6,
    5e-324,
    1.7976931348623157e308,
    -0.0001,
    -2.5e-8,
    0.30000000000000004,
    1e20,
    -0.0,
    100.0,
]


def test_N9_js_number_matches_deno() -> None:
    from deno import find_deno_bin

    out = subprocess.run(
        [find_deno_bin(), "eval", f"console.log(JSON.stringify({json.dumps(SAMPLES)}.map(String)))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert [js_number(x) for x in SAMPLES] == json.loads(out.stdout)


@pytest.mark.parametrize(
    "n, item, ok",
    [(300_000, 1.0, True), (60_000, 1e16, False), (140_000, 1e-5, False), (149_000, 1.5e-7, True)],
)
def test_N9_python_and_js_count_floats_alike(
    gem: GemBuilder, tmp_path, n: int, item: float, ok: bool
) -> None:
    """JS writes 1.0 as "1", 1e16 as "10000000000000000", 1e-5 as "0.00001", 1.5e-7 as "1.5e-7";
    Python's json as "1.0", "1e+16", "1e-05", "1.5e-07": each case is over N9 in one and under
    it in the other."""
    gem.tool("py", f"def handle(i, ctx): return [{item!r}] * {n}")
    gem.tool("js", f"export default () => new Array({n}).fill({item!r})", ext="js")
    with workbench.open(gem.write(), state_dir=tmp_path / "state") as bench:
        results = [bench.call(t) for t in ("py", "js")]
    assert [r.ok for r in results] == [ok, ok], [r.error for r in results]
    if not ok:
        assert results[0].error.details["size"] == results[1].error.details["size"]
    else:
        assert results[0].value == results[1].value


def test_N9_the_limit_is_the_benchs_and_can_be_shrunk_for_a_test(gem: GemBuilder, tmp_path) -> None:
    from workbench.ctx.limits import Limits

    gem.tool("py", "def handle(i, ctx): return 'x' * i['n']")
    gem.tool("js", "export default (i) => 'x'.repeat(i.n)", ext="js")
    with workbench.open(gem.write(), state_dir=tmp_path / "state", limits=Limits(result_chars=100)) as bench:
        for tool in ("py", "js"):
            assert bench.call(tool, {"n": 98}).ok  # 100 characters with the quotes
            err = bench.call(tool, {"n": 99}).error
            assert err is not None and err.code == "E_RESULT_TOO_LARGE"
            assert err.details["limit"] == 100 and err.details["size"] == 101


# -- SEC5: what calls leave in the bench is bounded ------------------------------------------------

MiB = 1024 * 1024
AUDIT_FLOOD = {  # 1 MiB rows (with the quotes), as many as the input says
    "py": "def handle(input, ctx):\n    for _ in range(input['n']):\n        ctx.audit('big', 'x' * (2**20 - 2))\n    return 'done'\n",
    "js": "export async function handle(input, ctx) {\n  for (let i = 0; i < input.n; i++) await ctx.audit('big', 'x'.repeat(2 ** 20 - 2));\n  return 'done';\n}\n",
}


def _agent(gem: GemBuilder, name: str, source: str, ext: str) -> Any:
    gem.manifest.update(platform="agent", agent={"id": "agent-1", "name": "Flood"})
    gem.manifest["tools"].append(
        {"name": name, "file": f"tools/{name}.{ext}", "parameters": {"type": "object"}}
    )
    (gem.root / "tools").mkdir(parents=True, exist_ok=True)
    (gem.root / "tools" / f"{name}.{ext}").write_text(source)
    return gem.write()


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_SEC5_a_tool_writing_1_MiB_audit_rows_leaves_the_bench_bounded(
    lang: str, gem: GemBuilder, opened: Any
) -> None:
    """3 calls of 60 rows of 1 MiB each (180 MiB, which the bench kept whole before) leave less
    than 24 MiB in the bench's process: a call keeps 20 of its rows, the bench 4 MiB of them; the
    rows that went are counted in a note row of each call and in the log's first row."""
    import gc
    import tracemalloc

    from workbench.ctx.limits import Limits

    limits = Limits(audit_rows=20, audit_bench_chars=4 * MiB, results_bench_chars=8 * MiB)
    bench = opened(_agent(gem, "flood", AUDIT_FLOOD[lang], lang), limits=limits)
    assert bench.call("flood", {"n": 1}).ok  # the sandbox started, the modules imported
    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        results = [bench.call("flood", {"n": 60}) for _ in range(3)]
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert [r.value for r in results] == ["done"] * 3, [r.error for r in results]
    assert grown < 24 * MiB, f"the bench kept {grown:,} bytes more"
    log = bench.audit()
    first, last = log.iloc[0], log.iloc[-1]
    assert first["source"] == "workbench" and first["data"]["rows"] == 1 + 3 * 21 - (len(log) - 1)
    assert "Limits.audit_bench_chars" in first["data"]["why"]
    assert last["source"] == "workbench" and last["call_id"] == results[-1].call_id
    assert last["data"]["rows"] == 40 and last["data"]["chars"] == 40 * (MiB + 3)  # event + data
    assert "Limits.audit_rows" in last["data"]["why"]
    assert (log["source"] == "tool").sum() == len(log) - 2 <= 4


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_SEC5_bench_results_keep_the_newest_calls_within_their_limit(
    lang: str, gem: GemBuilder, opened: Any
) -> None:
    """Each call returns 512 KiB and prints 512 KiB: the bench keeps the newest within
    results_bench_chars, bench.calls() starts with a row saying how many went."""
    from workbench._present import presenter
    from workbench.ctx.limits import Limits

    src = {
        "py": "def handle(i, ctx):\n    print('y' * 2**19)\n    return 'x' * 2**19\n",
        "js": "export default () => { console.log('y'.repeat(2 ** 19)); return 'x'.repeat(2 ** 19); };\n",
    }
    gem.tool("big", src[lang], ext=lang)
    bench = opened(gem, limits=Limits(results_bench_chars=4 * MiB))
    calls = [bench.call("big") for _ in range(12)]
    assert all(r.ok for r in calls), calls[0].error
    assert 2 <= len(bench.results) <= 4 and bench.results[-1] is calls[-1]
    assert bench.results.dropped == 12 - len(bench.results)
    df = bench.calls()
    assert df["outcome"].iloc[0] == "dropped" and df["call_id"].iloc[1:].tolist() == [
        r.call_id for r in calls[-len(bench.results) :]
    ]
    assert f"{bench.results.dropped:,} older calls" in df["message"].iloc[0]
    assert "Limits.results_bench_chars" in df["message"].iloc[0]
    assert df["message"].iloc[0] in presenter("bench_html")(bench)
    bench.results.clear()  # as on the list it was: the views start afresh, the next call lands
    assert len(bench.results) == 0 and bench.results.chars == 0
    assert bench.call("big").ok and len(bench.results) == 1


NESTED_FLOOD = {  # `top` calls `fill` i.calls times; each fill audits n rows of 60,000 characters
    "py": (
        "def handle(i, ctx):\n    for k in range(i['n']):\n"
        "        ctx.audit('fill', {'k': k, 's': str(k) + 'x' * 60000})\n    return 'filled'\n",
        "def handle(i, ctx):\n    for k in range(i['calls']):\n        ctx.tools.fill({'n': i['n']})\n"
        "    return 'top'\n",
    ),
    "js": (
        "export async function handle(i, ctx) {\n  for (let k = 0; k < i.n; k++)\n"
        "    await ctx.audit('fill', { k, s: String(k) + 'x'.repeat(60000) });\n  return 'filled';\n}\n",
        "export async function handle(i, ctx) {\n  for (let k = 0; k < i.calls; k++) await ctx.tools.fill({ n: i.n });\n"
        "  return 'top';\n}\n",
    ),
}


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_SEC5_nested_calls_share_the_callers_trace_budget_and_are_counted(
    lang: str, gem: GemBuilder, opened: Any
) -> None:
    """3 calls that each make 49 nested calls keeping 1 MiB of trace apiece: a nested call's
    trace was counted as nothing in bench.results (its trace_chars stayed 0) and had a budget
    of its own, so each call left 49 MB that the ring, capped at 4 MiB, took for 0.3 MB: 150 MB
    grown here. Now a call's trace, its nested calls' included, keeps Limits.trace_chars, each
    CallResult counts what its own trace keeps, and the bench grows by less than 12 MiB."""
    import gc
    import tracemalloc

    from workbench.bench.result import kept_chars
    from workbench.ctx.limits import Limits

    fill, top = NESTED_FLOOD[lang]
    _agent(gem, "fill", fill, lang)
    limits = Limits(trace_chars=MiB, results_bench_chars=4 * MiB, audit_bench_chars=MiB)
    bench = opened(_agent(gem, "top", top, lang), limits=limits)
    assert bench.call("top", {"calls": 1, "n": 1}).ok  # the sandbox started, the modules imported
    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        values = [bench.call("top", {"calls": 49, "n": 20}).value for _ in range(3)]
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert values == ["top"] * 3
    assert grown < 12 * MiB, f"the bench kept {grown:,} bytes more"
    res = bench.results[-1]
    assert len(res.children) == 49 and res.children[0].trace_chars > 900_000  # the first child filled it
    tree = res.trace_chars + sum(c.trace_chars for c in res.children)
    assert tree <= MiB and tree > 900_000
    assert kept_chars(res) >= tree and bench.results.chars <= 4 * MiB + kept_chars(res)
    assert all(len(c.trace_rows) == 20 for c in res.children)  # every call listed; the rest as previews


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_SEC5_nested_calls_share_the_callers_trace_rows(lang: str, gem: GemBuilder, opened: Any) -> None:
    """Limits.trace_rows counts an invocation's ctx calls, its nested calls' included (each
    listed its own 10,000 before: 50 nested calls, 500,000 rows of 520 bytes); what is not
    listed is counted in each trace's last row."""
    from workbench.ctx.limits import Limits

    fill, top = NESTED_FLOOD[lang]
    _agent(gem, "fill", fill, lang)
    bench = opened(_agent(gem, "top", top, lang), limits=Limits(trace_rows=5))
    res = bench.call("top", {"calls": 2, "n": 4}).raise_for_error()
    first, second = res.children
    assert [r["method"] for r in first.trace_rows] == ["audit"] * 4 and first.ctx_calls == 4
    assert [r["method"] for r in second.trace_rows] == ["(not kept)"] and second.ctx_calls == 4
    assert second.trace_rows[0]["args"] == (
        "ctx calls 1 to 4 are not listed: a call's trace lists 5 (Limits.trace_rows), its nested calls included"
    )
    assert [r["method"] for r in res.trace_rows] == ["tools.fill", "(not kept)"] and res.ctx_calls == 2
    assert "ctx calls 2 to 2 are not listed" in res.trace_rows[1]["args"]


HTTP_FLOOD = {  # n fetches, each with a 16 KiB query, to a mock handler that answers them all
    "py": "def handle(i, ctx):\n    for k in range(i['n']):\n        ctx.http.fetch(f'https://api.acme.example/v1/{k}?q=' + 'x' * 2**14)\n    return 'done'\n",
    "js": "export async function handle(i, ctx) {\n  for (let k = 0; k < i.n; k++) await ctx.http.fetch(`https://api.acme.example/v1/${k}?q=` + 'x'.repeat(2 ** 14));\n  return 'done';\n}\n",
}


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_SEC5_a_tool_fetching_long_urls_leaves_the_http_log_bounded(
    lang: str, gem: GemBuilder, opened: Any
) -> None:
    """4 calls of 600 fetches with 16 KiB URLs (38 MiB of URLs, which bench.http() kept whole
    before: one row per fetch, no cap) leave less than 12 MiB in the bench's process: the HTTP
    log keeps the newest 1 MiB of rows, and its first row says how many went. Only the values
    and ids are held here (a CallResult holds its trace, bounded by trace_chars)."""
    import gc
    import tracemalloc

    from workbench.ctx.limits import Limits

    gem.tool("flood", HTTP_FLOOD[lang], ext=lang)
    gem.manifest["permissions"] = {"http": {"connections": {"acme": {"hosts": ["api.acme.example"]}}}}
    limits = Limits(http_log_chars=MiB, trace_chars=MiB, results_bench_chars=4 * MiB)
    handlers = [{"match": "https://api.acme.example/", "respond": {"text": "ok"}}]
    bench = opened(gem, limits=limits, http=handlers)
    assert bench.call("flood", {"n": 1}).ok
    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        results = [(r.value, r.call_id) for r in (bench.call("flood", {"n": 600}) for _ in range(4))]
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert [value for value, _ in results] == ["done"] * 4
    assert grown < 12 * MiB, f"the bench kept {grown:,} bytes more"
    log = bench.http()
    first, kept = log.iloc[0], log.iloc[1:]
    assert first["error"] == "dropped" and "Limits.http_log_chars" in first["reason"]
    assert f"{1 + 4 * 600 - len(kept):,} older requests" in first["reason"]
    assert 50 <= len(kept) <= 64 and kept["url"].str.len().sum() <= MiB
    assert kept["url"].iloc[-1].startswith("https://api.acme.example/v1/599?q=xxx")
    assert (kept["call_id"] == results[-1][1]).all() and (kept["status"] == 200).all()


KV_GETS = {
    "py": "def handle(i, ctx):\n    for _ in range(i['n']):\n        ctx.storage.kv.get('k')\n    return 'done'\n",
    "js": "export default async (i, ctx) => { for (let k = 0; k < i.n; k++) await ctx.storage.kv.get('k'); return 'done'; };\n",
}


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
@pytest.mark.parametrize("shape", ["10,000 calls without arguments", "60 fetches of 16 KiB URLs"])
def test_SEC5_a_kept_call_is_counted_as_the_memory_it_holds(
    shape: str, lang: str, gem: GemBuilder, opened: Any
) -> None:
    """What bench.results counts for a call (kept_chars) is within 25% of what holding it costs
    the process, measured: many tiny trace rows (a row cost twice its 256 counted characters)
    and few rows keeping a fetch's URL twice (its arguments and the reply's url, both counted)."""
    import gc
    import tracemalloc
    import urllib.parse

    from workbench.bench.result import kept_chars
    from workbench.ctx.limits import Limits

    tiny = shape.startswith("10,000")
    gem.tool("t", (KV_GETS if tiny else HTTP_FLOOD)[lang], ext=lang)
    gem.manifest["permissions"] = {"http": {"connections": {"acme": {"hosts": ["api.acme.example"]}}}}
    handlers = [{"match": "https://api.acme.example/", "respond": {"text": "ok"}}]
    bench = opened(gem, limits=Limits(http_log_chars=1_000), http=handlers)
    assert bench.call("t", {"n": 1}).ok and len(bench.call("t", {"n": 1}).trace) == 1  # pandas imported
    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        call_id = bench.call("t", {"n": 10_000 if tiny else 60}).call_id
        urllib.parse.urlsplit.cache_clear()  # the process's, not the call's (Limits.url_chars)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    res = bench.results[-1]
    assert res.call_id == call_id and res.value == "done"
    assert 0.75 <= grown / kept_chars(res) <= 1.25, (grown, kept_chars(res))


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_SEC5_kept_results_hold_no_empty_lists_of_their_own(lang: str, gem: GemBuilder, opened: Any) -> None:
    """A kept call that made no ctx call, printed no warning and surfaced no file holds the one
    shared empty list for each (bench.results keeps thousands: the garbage collector walked
    seven empty lists a result); nothing can be added to it; a call with rows has its own."""
    import gc

    gem.tool("t", KV_GETS[lang], ext=lang)
    bench = opened(gem)
    a, b, c = bench.call("t", {"n": 0}), bench.call("t", {"n": 0}), bench.call("t", {"n": 2})
    assert a.ok and b.ok and c.ok, (a.error, b.error, c.error)
    for name in ("violations", "trace_rows", "surfaced", "children", "log_rows", "warnings", "files"):
        mine, theirs = getattr(a, name), getattr(b, name)
        assert mine == [] and isinstance(mine, list) and mine is theirs, name
        with pytest.raises(TypeError, match="shared by every CallResult"):
            mine.append("x")
    assert a.trace.empty and len(c.trace_rows) == 2 and c.trace_rows is not a.trace_rows
    # what a kept call adds for the collector to walk: itself and its replay record
    shared = (a.files, a.pinner, type(a))
    own = [o for o in gc.get_referents(a) if gc.is_tracked(o) and not any(o is x for x in shared)]
    assert own == [a.replay], [type(o).__name__ for o in own]


# -- a tool's text reaches terminals and reports with its control codes made visible --------------

HOSTILE = (
    "red \x1b[31mALERT\x1b[2J\x1b[H link \x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\ "
    "clip \x1b]52;c;cm0gLXJmIH4=\x07 c1 \x9b2J bidi \u202etxt.exe\u2066 cr \rover"
)
TERMINAL_CODES = {
    "py": f"def handle(i, ctx):\n    print({HOSTILE!r})\n    raise ValueError({HOSTILE!r})\n",
    "js": f"export default () => {{ console.log({json.dumps(HOSTILE)}); throw new Error({json.dumps(HOSTILE)}); }};\n",
}
_ACTIVE = ("\x1b", "\x9b", "\u202e", "\u2066", "\x07", "\rover")


def _inert(text: str) -> None:
    """No control code a terminal would act on; each one visible where it was."""
    assert not [c for c in _ACTIVE if c in text], repr(text)
    assert "␛]8;;https://evil.example/␛\\click" in text and "␛]52;c;cm0gLXJmIH4=␇" in text
    assert "\\u009b2J" in text and "\\u202etxt.exe\\u2066" in text and "␍over" in text
    assert "red ALERT link" in text  # colour and cursor codes are dropped


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_SEC_a_tools_terminal_codes_are_shown_not_acted_on(lang: str, gem: GemBuilder, opened: Any) -> None:
    """A tool's error and output carrying ANSI colour and cursor codes, OSC 8 and OSC 52, C1
    controls and bidi overrides: the pytest report (str of the error), the terminal repr, the
    notebook display and the CLI show them as visible characters."""
    from workbench._present import presenter

    gem.tool("t", TERMINAL_CODES[lang], ext=lang)
    res = opened(gem).call("t")
    assert res.error is not None and HOSTILE[:20] in res.error.message  # the data stays as it was
    with pytest.raises(workbench.WorkbenchError) as info:
        res.raise_for_error()
    _inert(info.exconly())
    _inert(presenter("result_text")(res))
    _inert(presenter("result_html")(res))
    _inert(repr(res))
    exe = [sys.executable, "-m", "workbench.cli", "call", str(gem.root), "t"]
    out = subprocess.run(exe, capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 1
    _inert(out.stderr.split("\nerror ", 1)[1])  # the error line and its JSON
    _inert(out.stderr.split("\nerror ", 1)[0])  # the tool's output


def test_SEC_a_notebook_or_TS_failure_report_shows_terminal_codes_visibly(tmp_path) -> None:
    """The report of a failing notebook cell or TS case (a tool's output in it) and its summary line."""
    from workbench.testing._report import failure_report

    report = failure_report(tmp_path / "n.ipynb", f"{tmp_path / 'n.ipynb'}: cell 2 raised {HOSTILE}", HOSTILE)
    _inert(report.reprcrash.message)
    _inert("".join(report.reprtraceback.reprentries[0].lines))
