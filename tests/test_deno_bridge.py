"""The ctx bridge of JS/TS tools: ctx errors as JS Errors with .code, thrown errors mapped to the
tool's lines (TypeScript too), exact bytes, result rules (N9), N2, and the call trace."""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest
from _deno import deno_home  # noqa: F401  (fixture)
from conftest import GemBuilder

pytestmark = pytest.mark.deno


# --- errors: ctx errors in JS, throws, results ------------------------------------------------


def test_F7_F11_ctx_errors_reach_js_as_errors_with_code(gem: GemBuilder, opened: Callable) -> None:
    gem.tool(
        "errs",
        """
        export default async (input, ctx) => {
          const seen = {};
          const probe = async (name, fn) => {
            try { await fn(); seen[name] = "no error"; }
            catch (e) { seen[name] = { isError: e instanceof Error, code: e.code, message: e.message }; }
          };
          await probe("missing", () => ctx.files.read("nope.txt"));
          await ctx.files.write("a.txt", "A");
          await ctx.files.write("b.txt", "B");
          await probe("exists", () => ctx.files.move("a.txt", "b.txt"));
          await probe("workspace", () => ctx.files.write("workspace:x.txt", "x"));
          seen.b = await ctx.files.read("b.txt");  // move never overwrote it
          return seen;
        }""",
        ext="js",
    )
    res = opened(gem, conversation=False).call("errs")
    assert res.ok, res.error
    v = res.value
    assert v["missing"]["isError"] and v["missing"]["code"] == "E_NOT_FOUND"
    assert "nope.txt" in v["missing"]["message"]
    assert v["exists"]["isError"] and v["exists"]["code"] == "E_EXISTS"
    assert v["workspace"]["isError"] and v["workspace"]["code"] == "E_PERM_DENIED"
    assert v["b"] == "B"


def test_F11_uncaught_ctx_error_is_the_call_error(gem: GemBuilder, opened: Callable) -> None:
    gem.tool(
        "missing",
        "export default async (i, ctx) => {\n  return await ctx.files.read('nope.txt');\n}",
        ext="js",
    )
    gem.tool("nows", "export default async (i, ctx) => ctx.files.list('workspace:')", ext="js")
    bench = opened(gem, conversation=False)
    res = bench.call("missing")
    assert res.error.code == "E_NOT_FOUND" and "nope.txt" in res.error.message
    assert "tools/missing.js:2" in res.error.details["stack"]  # the tool's frame, not ours
    assert bench.call("nows").error.code == "E_PERM_DENIED"


JS_THROW = """\
// a comment
export default async function (input, ctx) {
  const x = input.n + 1;
  throw new Error(`boom ${x}`);
}
"""
TS_THROW = """\
interface Input { n: number }
type Out = { ok: boolean };
// types above and below disappear when Deno strips them: the lines must not move
function helper(n: number): never {
  const msg: string = `ts boom ${n}`;
  throw new RangeError(msg);
}
export default async function (input: Input, ctx: unknown): Promise<Out> {
  helper(input.n);
  return { ok: true };
}
"""


def test_js_throw_is_tool_error_with_the_tools_file_and_line(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("boom", JS_THROW, ext="js")
    res = opened(gem).call("boom", {"n": 1})
    assert res.error.code == "E_TOOL_ERROR"
    assert res.error.message == "Error: boom 2"
    assert "tools/boom.js:4:" in res.error.details["stack"]
    assert "file://" not in res.error.details["stack"] and "worker.ts" not in res.error.details["stack"]


def test_ts_throw_maps_to_the_ts_source_lines(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("tsboom", TS_THROW, ext="ts")
    res = opened(gem).call("tsboom", {"n": 5})
    assert res.error.code == "E_TOOL_ERROR"
    assert res.error.message == "RangeError: ts boom 5"
    frames = res.error.details["stack"].splitlines()
    assert "tools/tsboom.ts:6:" in frames[0]  # throw in helper
    assert "tools/tsboom.ts:9:" in frames[1]  # the call in the default export


def test_F4_base64_round_trips_every_byte(gem: GemBuilder, open_bench: Callable) -> None:
    gem.tool(
        "bytes",
        """
        export default async (input, ctx) => {
          const raw = atob(await ctx.files.read("workspace:in.bin", { encoding: "base64" }));
          const got = Array.from(raw, (c) => c.charCodeAt(0));
          let s = "";
          for (let b = 255; b >= 0; b--) s += String.fromCharCode(b);
          await ctx.files.write("workspace:out.bin", btoa(s), { encoding: "base64" });
          await ctx.files.write("same.bin", await ctx.files.read("workspace:in.bin", { encoding: "base64" }),
                                { encoding: "base64" });
          return { got, back: await ctx.files.read("same.bin", { encoding: "base64" }) };
        }""",
        ext="js",
    )
    bench = open_bench(gem)
    every = bytes(range(256))
    bench.providers.files.write("workspace", "in.bin", every)
    res = bench.call("bytes")
    assert res.ok, res.error
    assert res.value["got"] == list(range(256))
    assert bench.providers.files.read("workspace", "out.bin") == bytes(reversed(every))
    assert base64.b64decode(res.value["back"]) == every


def test_N9_result_size_limit_in_js(gem: GemBuilder, opened: Callable) -> None:
    # JSON of a string of n characters is n + 2 characters long
    gem.tool("big", "export default async (i) => 'x'.repeat(i.n)", ext="js")
    bench = opened(gem)
    assert bench.call("big", {"n": 1_048_574}).ok
    res = bench.call("big", {"n": 1_048_575})
    assert res.error.code == "E_RESULT_TOO_LARGE"
    assert res.error.details["size"] == 1_048_577 and res.error.details["limit"] == 1_048_576


def test_bigint_result_is_not_json_and_undefined_is_none(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("bigint", "export default async () => ({ n: 10n })", ext="js")
    gem.tool("nothing", "export default async () => undefined", ext="js")
    gem.tool("sync", "export default function () { return [1, 'two', null, { three: 3 }] }", ext="js")
    bench = opened(gem)
    res = bench.call("bigint")
    assert res.error.code == "E_RESULT_NOT_JSON" and "BigInt" in res.error.message
    res = bench.call("nothing")
    assert res.ok and res.value is None
    assert bench.call("sync").value == [1, "two", None, {"three": 3}]


# --- N2: files, data and storage with no permissions ----------------------------------------


def test_N2_files_data_storage_without_permissions(gem: GemBuilder, open_bench: Callable) -> None:
    gem.collections(notes=["status"]).schema_sql("CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER);")
    gem.tool(
        "all",
        """
        export default async (input, ctx) => {
          await ctx.files.write("dir/a.txt", "hello");
          await ctx.files.write("workspace:w.txt", "conv");
          const notes = ctx.data.collection("notes");
          const { id } = await notes.insert({ title: "t", status: "open" });
          await ctx.storage.kv.set("cursor", "42");
          await ctx.storage.sql.execute("INSERT INTO t (k, v) VALUES (?, ?)", ["a", 1]);
          return {
            list: (await ctx.files.list("dir")).map((e) => [e.name, e.type, e.size]),
            read: await ctx.files.read("dir/a.txt"),
            stat: (await ctx.files.stat("workspace:w.txt")).size,
            missing: await ctx.files.stat("nope"),
            doc: await notes.get(id),
            found: (await notes.find({ where: { status: "open" } })).items.length,
            count: await notes.count(),
            kv: await ctx.storage.kv.get("cursor"),
            sql: await ctx.storage.sql.query("SELECT k, v FROM t"),
          };
        }""",
        ext="js",
    )
    assert "permissions" not in gem.manifest["tools"][0]
    bench = open_bench(gem)
    res = bench.call("all")
    assert res.ok, res.error
    v = res.value
    assert v["list"] == [["a.txt", "file", 5]] and v["read"] == "hello" and v["stat"] == 4
    assert v["missing"] is None
    assert v["doc"]["title"] == "t" and v["found"] == 1 and v["count"] == 1
    assert v["kv"] == "42" and v["sql"] == [{"k": "a", "v": 1}]
    # and Python sees the same state
    assert list(bench.data("notes")["title"]) == ["t"]
    assert bench.kv().set_index("key")["value"].to_dict() == {"cursor": "42"}
    assert bench.sql("SELECT v FROM t")["v"].tolist() == [1]
    assert bench.providers.files.read("workspace", "w.txt") == b"conv"
    assert {"workspace:w.txt", "dir/a.txt"} <= set(bench.files()["path"])


def test_trace_has_one_row_per_ctx_call_like_python(gem: GemBuilder, opened: Callable) -> None:
    gem.tool(
        "js",
        """
        export default async (input, ctx) => {
          await ctx.files.write("a.txt", "x");
          await ctx.files.read("a.txt");
          try { await ctx.files.read("nope"); } catch {}
          await ctx.storage.kv.set("k", "v");
          return await ctx.storage.kv.get("k");
        }""",
        ext="js",
    )
    gem.tool(
        "py",
        """
        from workbench import WorkbenchError

        def handle(input, ctx):
            ctx.files.write("a.txt", "x")
            ctx.files.read("a.txt")
            try:
                ctx.files.read("nope")
            except WorkbenchError:
                pass
            ctx.storage.kv.set("k", "v")
            return ctx.storage.kv.get("k")
        """,
    )
    bench = opened(gem)
    js, py = bench.call("js"), bench.call("py")
    assert js.ok and py.ok and js.value == py.value == "v"
    cols = ["seq", "method", "args", "ok", "error"]
    assert len(js.trace) == 5
    assert js.trace[cols].to_dict("records") == py.trace[cols].to_dict("records")


@pytest.mark.parametrize("reuse", ["always", "never"])
def test_each_ctx_shape_reaches_every_new_worker(gem: GemBuilder, opened: Callable, reuse: str) -> None:
    """A ctx shape's text crosses once per process, then its number: a Worker started afresh
    (reuse="never", or after a tool that did not load) still builds each tool's own ctx."""
    keys = "export default async (input, ctx) => Object.keys(ctx).sort()"
    gem.tool("plain", keys, ext="js")
    gem.tool("mail", keys, ext="js", permissions={"email": {"read": True}})
    gem.tool("broken", "export default async (input, ctx) => {", ext="js")
    gem.manifest["permissions"] = {"email": {"read": True}}  # the gem's grant, then the tool's
    bench = opened(gem, reuse=reuse)
    plain = bench.call("plain").value
    assert "email" not in plain and "files" in plain
    assert bench.call("broken").error.code == "E_TOOL_ERROR"
    for _ in range(2):
        assert bench.call("mail").value == sorted([*plain, "email"])
        assert bench.call("plain").value == plain
    bench.sandbox.stop()  # a new process: the texts cross again
    assert bench.call("mail").value == sorted([*plain, "email"])


@pytest.mark.parametrize("after_ms", [0, 30])
def test_an_uncaught_error_out_of_any_call_ends_the_call_not_the_sandbox(
    gem: GemBuilder, opened: Callable, after_ms: int
) -> None:
    # The host waits for the worker blocking, then (after a few ms) on its event loop, where the
    # worker's error event comes; it must not take the process down with the worker (a wait on
    # the event loop that nothing else keeps alive did, about one call in five)
    gem.tool(
        "bomb",
        "export default async (i) => { setTimeout(() => { throw new Error('later'); }, i.ms);"
        " await new Promise((r) => setTimeout(r, 500)); return 'never'; }",
        ext="js",
    )
    gem.tool("one", "export default async () => 1", ext="js")
    bench = opened(gem, conversation=False)
    for _ in range(8):
        res = bench.call("bomb", {"ms": after_ms})
        assert res.error.code == "E_TOOL_ERROR" and "later" in res.error.message, res.error
        assert bench.call("one").value == 1


@pytest.mark.parametrize(
    ("leftover", "fires"),
    [
        # a timer is cleared when its call ends (issue 25): it never fires, nor fails anything
        ("setTimeout(() => { throw new Error('late boom'); }, 20);", False),
        ("ctx.storage.kv.get('k').then(() => { throw new Error('late boom'); });", True),
    ],
)
def test_an_error_left_by_an_earlier_call_fails_no_later_call(
    gem: GemBuilder, opened: Callable, leftover: str, fires: bool
) -> None:
    # the worker's error event comes while the host waits for Python, blocking: it is seen at
    # the next call, which the worker (its event loop ended) never read: that call must run
    import time

    gem.tool("latebomb", f"export default async (i, ctx) => {{ {leftover} return 'returned'; }}", ext="js")
    gem.tool("plain", "export default async () => 'plain ok'", ext="js")
    bench = opened(gem, conversation=False)
    for _ in range(3):
        first = bench.call("latebomb")
        assert first.value == "returned"
        time.sleep(0.3)
        res = bench.call("plain")
        assert res.ok and res.value == "plain ok", res.error
        # the process printed it, after or before the end
        assert ("late boom" in first.logs + res.logs) is fires
