"""A call pinned on a bench opened without `clock=` or `seed=` (the default) replays with the
times and draws it had: the case keeps the sandbox's clock reads and the seed of its draws,
and a replay serves them back, through the Python API and `gem-workbench test`."""

from __future__ import annotations

import json
import time

import pytest
from test_pins_cli import cli

from workbench import WorkbenchError
from workbench.pins.replay import Replayer
from workbench.testing import replay_case

STAMP_JS = """
import { randomInt } from "node:crypto";

export default async function (input, ctx) {
  const t0 = performance.now();
  const doc = { title: input.title, uid: crypto.randomUUID(), at: Date.now(), on: new Date().toISOString() };
  const { id } = await ctx.data.collection('notes').insert(doc);
  return {
    id, ...doc,
    random: Math.random(),
    bytes: Array.from(crypto.getRandomValues(new Uint8Array(4))),
    int: randomInt(1000000),
    took: performance.now() - t0,
    later: Date.now(),
  };
}
"""


def stamp_gem(gem, title_expr: str = "input.title"):
    gem.tool("stamp", STAMP_JS.replace("title: input.title", f"title: {title_expr}"), ext="js")
    return gem.collections(notes=[])


@pytest.mark.deno
def test_a_js_call_on_a_default_bench_replays_its_draws_and_times(gem, opened) -> None:
    bench = opened(stamp_gem(gem))
    res = bench.call("stamp", {"title": "a"})
    assert res.ok, res.error
    path = res.pin("first")
    out = replay_case(path)
    assert out.ok, out.report()
    assert out.result.value == res.value  # uuid, draws, ISO date, elapsed time: identical
    call = json.loads(path.read_text())["call"]
    assert call["frozen"] is False and len(call["ticks"]) == 5  # the clock ran; its reads are kept


@pytest.mark.deno
def test_a_default_bench_still_runs_on_wall_time_with_fresh_draws(gem, opened) -> None:
    bench = opened(stamp_gem(gem))
    before = time.time() * 1000
    a = bench.call("stamp", {"title": "a"}).value
    b = bench.call("stamp", {"title": "b"}).value
    after = time.time() * 1000
    assert before - 1 <= a["at"] <= a["later"] <= b["at"] <= after + 1  # the wall clock, running
    assert a["uid"] != b["uid"] and a["random"] != b["random"] and a["bytes"] != b["bytes"]


@pytest.mark.deno
def test_a_replay_updated_from_a_default_bench_pin_replays_again(gem, opened) -> None:
    bench = opened(stamp_gem(gem))
    path = bench.call("stamp", {"title": "a"}).pin("first")
    (gem.root / "tools" / "stamp.js").write_text(
        STAMP_JS.replace("title: input.title", "title: input.title.toUpperCase()")
    )
    with Replayer() as replayer:
        changed = replayer.replay(path)
        assert any('title: expected "a", got "A"' in line for line in changed.lines), changed.lines
        assert replayer.replay(path, update=True).updated
        again = replayer.replay(path)
    assert again.ok, again.report()
    assert again.result.value["title"] == "A"


@pytest.mark.deno
def test_gem_workbench_test_passes_a_default_bench_pin_and_fails_a_real_change(gem, opened, tmp_path) -> None:
    gem.manifest["platform"] = "notochord"
    gem.tool("stamp_py", STAMP_PY).schema_sql("CREATE TABLE stamps (title TEXT, at TEXT);")
    root = stamp_gem(gem).write()
    bench = opened(root)
    bench.call("stamp_py", {"title": "a"}).pin("first")
    bench.call("stamp", {"title": "a"}).pin("first")
    out = cli("test", str(root), cwd=tmp_path)
    assert out.returncode == 0 and "2 passed" in out.stdout, out.stdout[-3000:]
    out = cli("test", str(root), "--update-pins", cwd=tmp_path)
    assert out.returncode == 0 and "updated" not in out.stdout, out.stdout[-3000:]
    tool = root / "tools" / "stamp.js"
    tool.write_text(tool.read_text().replace("title: input.title", "title: input.title + '!'"))
    out = cli("test", str(root), cwd=tmp_path)
    assert out.returncode == 1 and "1 failed, 1 passed" in out.stdout, out.stdout[-3000:]
    assert 'title: expected "a", got "a!"' in out.stdout
    out = cli("test", str(root), "--update-pins", cwd=tmp_path)
    assert out.returncode == 0 and "1 pinned call updated" in out.stdout, out.stdout[-3000:]
    out = cli("test", str(root), cwd=tmp_path)
    assert out.returncode == 0 and "2 passed" in out.stdout, out.stdout[-3000:]


STAMP_PY = """
async def handle(input, ctx):
    await ctx.files.write("stamp.txt", input["title"])
    made = await ctx.files.stat("stamp.txt")
    [row] = await ctx.storage.sql.query("select strftime('%H:%M:%f', 'now') as at")
    await ctx.storage.sql.execute("insert into stamps(title, at) values (?, ?)", [input["title"], row["at"]])
    return {"modified": made["modified"], "at": row["at"]}
"""


def test_a_python_call_on_a_default_bench_replays_the_times_ctx_gave_it(gem, opened) -> None:
    gem.manifest["platform"] = "notochord"
    gem.tool("stamp", STAMP_PY).schema_sql("CREATE TABLE stamps (title TEXT, at TEXT);")
    bench = opened(gem)
    res = bench.call("stamp", {"title": "a"})
    assert res.ok, res.error
    path = res.pin("first")
    out = replay_case(path)  # a time of day to the ms is not an instant a window could excuse
    assert out.ok, out.report()
    assert out.result.value == res.value
    call = json.loads(path.read_text())["call"]
    assert call["frozen"] is False and len(call["times"]) >= 2  # the file's and SQL's 'now'


WHO_PY = """
async def handle(input, ctx):
    inner = await ctx.tools.leaf({}) if input.get("nest") else None
    return {"id": ctx.toolCallId, "inner": inner}
"""


def test_an_agent_calls_tool_call_ids_repeat_on_replay(gem, opened) -> None:
    gem.tool("who", WHO_PY).tool("leaf", "def handle(input, ctx):\n    return ctx.toolCallId\n").as_agent()
    bench = opened(gem)
    first = bench.call("who", {"nest": True})
    path = first.pin("first")
    again = bench.call("who", {"nest": True}).value
    assert again["id"] != first.value["id"] and again["inner"] != first.value["inner"]  # new ones (A2)
    out = replay_case(path)
    assert out.ok, out.report()
    assert out.result.value == first.value and first.value["inner"].startswith("call_")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ticks", ["1"]),
        ("ticks", [-1]),
        ("ticks", [True]),
        ("ticks", [0.5] * 1001),
        ("times", [1e300]),
        ("times", {"0": 1}),
    ],
)
def test_a_case_with_bad_clock_reads_is_refused_naming_them(gem, opened, key: str, value: object) -> None:
    gem.manifest["platform"] = "notochord"
    gem.tool("stamp", STAMP_PY).schema_sql("CREATE TABLE stamps (title TEXT, at TEXT);")
    path = opened(gem).call("stamp", {"title": "a"}).pin("first")
    case = json.loads(path.read_text())
    case["call"][key] = value
    path.write_text(json.dumps(case))
    with pytest.raises(WorkbenchError) as err:
        replay_case(path)
    assert (
        err.value.code == "E_CASE" and f"call.{key} is not a list of up to 1000 numbers" in err.value.message
    )


@pytest.mark.deno
def test_a_replay_that_reads_the_clock_more_often_runs_on_past_the_pinned_reads(gem, opened) -> None:
    bench = opened(stamp_gem(gem))
    path = bench.call("stamp", {"title": "a"}).pin("first")
    tool = gem.root / "tools" / "stamp.js"  # now waits 5 ms on the clock first: many more reads
    tool.write_text(
        tool.read_text().replace(
            "const t0 = performance.now();",
            "const t0 = performance.now();\n  for (const end = Date.now() + 5; Date.now() < end;);",
        )
    )
    out = replay_case(path)
    assert out.result.ok, out.result.error  # it ended: past the served reads time ran on
    assert out.result.value["at"] >= json.loads(path.read_text())["result"]["value"]["at"] + 5
