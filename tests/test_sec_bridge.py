"""Issue 9, the sandbox bridge and output capture: adversarial tools against the bounds (SEC5),
hostile values (SEC7), the private channel from inside the Worker, and the gem folder (N1).

Each attack runs as a tool; the victim in the prototype attacks is a second tool of the same
gem, run after the attacker in the same Worker (reuse="always"), and a third call reads back
what the attacker captured.
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _deno import deno_home, gone  # noqa: F401  (fixture)
from conftest import GemBuilder

import workbench
from workbench.ctx._session import CallSession
from workbench.runners.deno import sandbox as sandbox_module

pytestmark = pytest.mark.deno

MiB = 1024 * 1024


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """limits(**fields): every call's session gets these Limits (small ones keep tests cheap)."""

    def use(**fields: Any) -> None:
        init = CallSession.__init__

        def patched(self: CallSession, *args: Any, **kw: Any) -> None:
            init(self, *args, **kw)
            self.limits = dataclasses.replace(self.limits, **fields)

        monkeypatch.setattr(CallSession, "__init__", patched)

    return use


def bounded_call(
    bench: workbench.Bench, tool: str, input: Any = None, *, within: float = 30
) -> workbench.CallResult:
    """bench.call in a thread; a call still running after `within` s (the bug these tests look
    for: a call that never ends) is failed and its sandbox killed, so the test ends."""
    box: dict[str, Any] = {}
    t = threading.Thread(target=lambda: box.update(res=bench.call(tool, input)), daemon=True)
    t.start()
    t.join(within)
    if t.is_alive():
        bench.sandbox.stop()
        t.join(10)
        pytest.fail(f"{tool}: the call was still running after {within} s")
    return box["res"]


def peak_python_bytes(fn: Callable[[], Any]) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        value = fn()
        return value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# --- item 6: captured output is bounded (SEC5) ---------------------------------------------------

FLOOD_JS = """
export default async (input) => {
  console.log("FIRST");
  const s = "x".repeat(1 << 20);
  for (let i = 0; i < input.mb; i++) (input.err ? console.error : console.log)(s);
  console.log("LAST");
  return "done";
}"""
FLOOD_PY = """
def handle(input, ctx):
    print("FIRST")
    s = "y" * (1 << 20)
    for _ in range(input["mb"]):
        print(s)
    print("LAST")
    return "done"
"""


def _assert_capped(res: workbench.CallResult, mb: int, stream: str, limit: int = MiB) -> None:
    assert res.ok, res.error
    assert len(res.logs.encode()) <= limit + 500
    assert res.logs.startswith("FIRST\n") and res.logs.endswith("LAST\n")
    note = [line for line in res.logs.splitlines() if line.startswith("… [workbench:")]
    assert len(note) == 1, note
    dropped = int(note[0].split()[2].replace(",", ""))
    assert dropped > mb * MiB - limit - 100 and f"bytes of {stream} dropped" in note[0]


def test_SEC5_js_stdout_flood_is_capped_head_and_tail(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("flood", FLOOD_JS, ext="js")
    gem.tool("quiet", "export default async () => { console.log('just me'); return 1 }", ext="js")
    bench = opened(gem)
    res, peak = peak_python_bytes(lambda: bench.call("flood", {"mb": 64}))
    _assert_capped(res, 64, "stdout")
    assert peak < 16 * MiB, f"{peak / MiB:.0f} MiB held in Python while the tool printed 64 MiB"
    # the marker was still found: the next call's logs are its own
    assert bench.call("quiet").logs == "just me\n"


def test_SEC5_js_stdout_and_stderr_floods_share_the_cap(gem: GemBuilder, opened: Callable) -> None:
    gem.tool(
        "flood",
        """
        export default async () => {
          const s = "o".repeat(1 << 20), e = "e".repeat(1 << 20);
          for (let i = 0; i < 8; i++) { console.log(s); console.error(e); }
          return 1;
        }""",
        ext="js",
    )
    res = opened(gem).call("flood")
    assert res.ok, res.error
    assert len(res.logs.encode()) <= MiB + 1000
    assert "bytes of stdout dropped" in res.logs and "bytes of stderr dropped" in res.logs


def test_SEC5_js_small_log_limit(gem: GemBuilder, opened: Callable, limits: Callable) -> None:
    limits(log_bytes=1000)
    gem.tool("flood", FLOOD_JS, ext="js")
    _assert_capped(opened(gem).call("flood", {"mb": 2, "err": False}), 2, "stdout", 1000)


def test_SEC5_python_print_flood_is_capped(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("flood", FLOOD_PY)
    res, peak = peak_python_bytes(lambda: opened(gem).call("flood", {"mb": 64}))
    _assert_capped(res, 64, "output")
    assert peak < 16 * MiB, f"{peak / MiB:.0f} MiB held while the tool printed 64 MiB"


def test_SEC5_python_logs_under_the_cap_are_whole(gem: GemBuilder, opened: Callable) -> None:
    gem.tool(
        "chatty",
        """
        import sys
        def handle(input, ctx):
            print("é" * 10, "\\ud800")   # a lone surrogate is printable in Python
            sys.stderr.write("err\\n")
            return 1
        """,
    )
    res = opened(gem).call("chatty")
    assert res.ok, res.error
    assert res.logs.startswith("é" * 10) and res.logs.endswith("err\n")


def test_SEC5_endless_output_still_times_out(gem: GemBuilder, opened: Callable) -> None:
    # output that never pauses kept the wait loop busy past the deadline: the call never ended.
    # The tool never returns: a call that ends at all, as E_TIMEOUT, was stopped at its deadline
    # (bounded_call fails the test if it never ends, the old bug)
    gem.tool(
        "spew",
        "export default async () => { const s = 'z'.repeat(4096); for (;;) console.log(s); }",
        ext="js",
    )
    bench = opened(gem, timeout=1.5)
    res = bounded_call(bench, "spew", within=20)
    assert res.error is not None and res.error.code == "E_TIMEOUT", res
    assert "the sandbox was killed" in res.error.message, res.error
    assert len(res.logs.encode()) <= MiB + 500


def test_SEC5_ctx_call_served_past_the_deadline_ends_as_timeout(
    gem: GemBuilder, opened: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Python serves a ctx call until after the call's deadline; the tool then prints without
    # pause. The call must end at once as E_TIMEOUT (the sandbox killed), not wait for it.
    gem.tool(
        "slow",
        """
        export default async (input, ctx) => {
          await ctx.storage.kv.get("k");
          const s = "w".repeat(4096);
          for (;;) console.log(s);
        }""",
        ext="js",
    )
    gem.tool("pid", "export default async () => Deno.pid", ext="js")
    serve = sandbox_module._serve

    def slow_serve(caps: Any, *args: Any) -> Any:
        time.sleep(max(0.0, caps.session.deadline - time.monotonic()) + 0.2)
        return serve(caps, *args)

    bench = opened(gem, timeout=1)
    pid = bench.call("pid").value
    monkeypatch.setattr(sandbox_module, "_serve", slow_serve)
    res = bounded_call(bench, "slow", within=20)
    assert res.error.code == "E_TIMEOUT"
    # killed; the next call gets a fresh one (which may be starting already, in the background)
    assert gone(pid) and bench.sandbox.pid != pid


# --- item 9: hostile values from JS to ctx (SEC7) ---------------------------------------------------

PROBE = """
export default async (input, ctx) => {
  const out = {};
  const probe = async (name, fn) => {
    try { await fn(); out[name] = "no error"; }
    catch (e) { out[name] = { code: e.code ?? null, message: String(e.message), details: e.details ?? null }; }
  };
  const cyclic = { a: 1 }; cyclic.self = cyclic;
  let deep = []; for (let i = 0; i < 100000; i++) deep = [deep];
  let d300 = []; for (let i = 0; i < 300; i++) d300 = [d300];
  await probe("bigint", () => ctx.storage.kv.set("k", 10n));
  await probe("cyclic", () => ctx.files.write("a.txt", cyclic));
  await probe("deep", () => ctx.storage.kv.set("k", deep));
  await probe("d300", () => ctx.data.collection("c").insert({ v: d300 }));
  out.after = await ctx.storage.kv.set("k", "v") ?? "set";
  return out;
}"""


def test_SEC7_bigint_cyclic_deep_ctx_arguments_are_coded_errors(gem: GemBuilder, opened: Callable) -> None:
    gem.collections(c=[])
    gem.tool("probe", PROBE, ext="js")
    gem.tool("uncaught", "export default async (i, ctx) => ctx.storage.kv.set('k', 10n)", ext="js")
    bench = opened(gem)
    res = bench.call("probe")
    assert res.ok, res.error
    v = res.value
    assert v["bigint"]["code"] == "E_INVALID_ARGUMENT"
    assert "storage.kv.set" in v["bigint"]["message"] and "argument 2 (value)" in v["bigint"]["message"]
    assert "BigInt" in v["bigint"]["message"]
    assert v["cyclic"]["code"] == "E_INVALID_ARGUMENT" and "argument 2 (content)" in v["cyclic"]["message"]
    assert v["deep"]["code"] == "E_INVALID_ARGUMENT" and v["deep"]["details"]["limit"] == 200
    assert v["d300"]["code"] == "E_INVALID_ARGUMENT" and v["d300"]["details"]["limit"] == 200
    assert v["after"] == "set"  # the host is alive and the channel in step
    pid = bench.sandbox.pid
    res = bench.call("uncaught")
    assert res.error.code == "E_INVALID_ARGUMENT" and "argument 2 (value)" in res.error.message
    assert bench.sandbox.pid == pid


def test_SEC7_deep_js_results_are_coded_errors(gem: GemBuilder, opened: Callable) -> None:
    gem.tool(
        "deep",
        """
        export default async (input) => {
          let v = []; for (let i = 0; i < input.n; i++) v = [v];
          return v;
        }""",
        ext="js",
    )
    bench = opened(gem)
    for n in (100_000, 300):
        res = bench.call("deep", {"n": n})
        assert res.error.code == "E_RESULT_NOT_JSON", (n, res.error)
        assert res.error.details["limit"] == 200 and "200" in res.error.message
    assert bench.call("deep", {"n": 150}).ok


def test_SEC7_deep_and_cyclic_python_results_are_coded_errors(gem: GemBuilder, opened: Callable) -> None:
    gem.tool(
        "deep",
        """
        def handle(input, ctx):
            v = []
            for _ in range(input["n"]):
                v = [v]
            if input.get("cycle"):
                v.append(v)
            return {"v": v}
        """,
    )
    bench = opened(gem)
    res = bench.call("deep", {"n": 100_000})
    assert res.error.code == "E_RESULT_NOT_JSON" and res.error.details["limit"] == 200
    res = bench.call("deep", {"n": 3, "cycle": True})
    assert res.error.code == "E_RESULT_NOT_JSON" and "cycle" in res.error.message
    assert bench.call("deep", {"n": 100}).ok


# --- item 10: the bridge is linear and bounded ----------------------------------------------------


# Work counted, not timed: the bytes the bridge's JavaScript hands to the built-ins that scan or
# copy bytes and text (typed arrays' indexOf/includes/slice/set, TextDecoder.decode, strings'
# indexOf/includes/slice/split/concat, JSON.parse), in the host and in the Worker. A linear
# bridge touches each byte of an input a few times; one that re-scans what it buffered for
# each chunk it reads touches it once per chunk. Installed before the bridge's own code runs
# (the host: Deno's --preload; the Worker: a module that imports it first, then the bridge's
# bundle), so the built-ins the bridge keeps for itself are the counting ones. The host's count
# goes into the call's logs, just before its end marker; the Worker's is read by the tool.
BYTES_COUNTER = """
const counted = { bytes: 0 };
const apply = Reflect.apply;
function wrap(proto, name, size) {
  const fn = proto[name];
  Object.defineProperty(proto, name, { value: function (...args) {
    counted.bytes += size(this, args);
    return apply(fn, this, args);
  }, writable: true, configurable: true });
}
const own = (self) => self.length;
const first = (self, args) => args[0]?.length ?? args[0]?.byteLength ?? 0;
const typed = Object.getPrototypeOf(Uint8Array.prototype);
for (const name of ["indexOf", "lastIndexOf", "includes", "slice"]) wrap(typed, name, own);
wrap(typed, "set", first);
wrap(TextDecoder.prototype, "decode", first);
for (const name of ["indexOf", "lastIndexOf", "includes", "slice", "split", "concat"]) {
  wrap(String.prototype, name, own);
}
wrap(JSON, "parse", first);
"""
HOST_REPORT = """
const stdout = Deno.stdout, write = stdout.writeSync.bind(stdout);
const END = new TextEncoder().encode("--wb-end-");
stdout.writeSync = (bytes) => {  // the call's end marker: its count first, then a fresh one
  if (END.every((b, i) => bytes[i] === b)) {
    write(new TextEncoder().encode(`host touched ${counted.bytes} bytes\\n`));
    counted.bytes = 0;
  }
  return write(bytes);
};
"""


def count_bridge_bytes(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Every sandbox started from now on counts the bytes its bridge touches (see above); the
    Worker's count is globalThis.bridgeBytes()."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "host.js").write_text(BYTES_COUNTER + HOST_REPORT)
    (folder / "counter.js").write_text(BYTES_COUNTER + "globalThis.bridgeBytes = () => counted.bytes;\n")
    command = sandbox_module.Sandbox._command

    def counting(self: sandbox_module.Sandbox, fifo_dir: str) -> tuple[list[str], str, str]:
        cmd, to_host, from_host = command(self, fifo_dir)
        host = next(i for i, a in enumerate(cmd) if a.endswith("host.ts"))
        # (to_host, from_host, our pid, the worker: its bundle; after "--inspected" with inspect=)
        at = host + 4 + (cmd[host + 1] == "--inspected")
        real_worker = cmd[at]
        assert real_worker.startswith("file://") and "/bridge/worker." in real_worker, cmd
        (folder / "worker.js").write_text(f'import "./counter.js";\nimport "{real_worker}";\n')
        cmd[at] = (folder / "worker.js").as_uri()
        cmd.insert(host, f"--preload={folder / 'host.js'}")
        return cmd, to_host, from_host

    monkeypatch.setattr(sandbox_module.Sandbox, "_command", counting)


def test_SEC5_big_input_costs_linear_work(
    gem: GemBuilder, opened: Callable, monkeypatch: pytest.MonkeyPatch
) -> None:
    gem.tool(
        "len",
        "export default async (input) => [input.s.length, globalThis.bridgeBytes()]",
        ext="js",
    )
    count_bridge_bytes(monkeypatch, gem.root / "counting")  # (the sandbox may read the gem)
    bench = opened(gem, timeout=60, reuse="never")  # a fresh Worker per call: its count from 0
    assert bench.call("len", {"s": "x"}).ok

    def touched(n: int) -> int:
        res = bench.call("len", {"s": "x" * n})
        assert res.ok and res.value[0] == n, res.error
        (host,) = re.findall(r"^host touched (\d+) bytes$", res.logs, re.M)
        return int(host) + res.value[1]

    small, big = touched(2 * MiB), touched(32 * MiB)
    # 16 x the bytes: linear is ~13 x the bytes touched here; re-scanning the buffer per chunk
    # read (64 KiB) was ~250 x the time, and touches ~190 x the bytes
    assert small >= 2 * MiB and big < 40 * small, (small, big)


def test_SEC5_oversized_input_is_too_large_not_a_hang(
    gem: GemBuilder, opened: Callable, limits: Callable
) -> None:
    limits(bridge_message_bytes=MiB)
    gem.tool("len", "export default async (input) => input.s.length", ext="js")
    bench = opened(gem)
    res = bounded_call(bench, "len", {"s": "x" * (2 * MiB)}, within=20)
    assert res.error.code == "E_TOO_LARGE" and res.error.details["limit"] == MiB
    assert bench.call("len", {"s": "x" * 1000}).value == 1000


def test_SEC5_oversized_ctx_request_and_reply_throw_too_large(
    gem: GemBuilder, opened: Callable, limits: Callable
) -> None:
    limits(bridge_message_bytes=MiB)
    gem.tool(
        "big",
        """
        export default async (input, ctx) => {
          const out = {};
          try { await ctx.files.write("big.txt", "x".repeat(2 << 20)); out.write = "no error"; }
          catch (e) { out.write = [e.code, e.details?.limit, e.message]; }
          await ctx.files.write("mid.txt", "y".repeat(900 * 1024));
          try { await ctx.files.read("mid.txt", { encoding: "base64" }); out.read = "no error"; }
          catch (e) { out.read = [e.code, e.details?.limit, e.message]; }
          out.ok = (await ctx.files.read("mid.txt")).length;
          return out;
        }""",
        ext="js",
    )
    res = opened(gem).call("big")
    assert res.ok, res.error
    assert res.value["write"][:2] == ["E_TOO_LARGE", MiB], res.value
    assert res.value["read"][:2] == ["E_TOO_LARGE", MiB], res.value  # 900 KiB as base64 > 1 MiB
    assert res.value["ok"] == 900 * 1024


# --- item 11: the private channel, from inside the Worker -------------------------------------------

VICTIM = """
export default async (input, ctx) => {
  await ctx.storage.kv.set("victim", input.secret);
  const back = await ctx.storage.kv.get("victim");
  return { secret: input.secret, back, n: [1, 2, 3] };
}"""
REPORT = """
export default async () => {
  const got = globalThis.__stolen ?? [];
  return got.map(String);
}"""
SECRET = "s3cr3t-victim-data"


def _attack(
    gem: GemBuilder, opened: Callable, attacker: str, victim: str = VICTIM, cleanup: str = ""
) -> tuple[workbench.CallResult, list[str], workbench.Bench]:
    gem.tool("attack", attacker, ext="js")
    gem.tool("victim", victim, ext="js")
    gem.tool("report", REPORT.replace("const got", f"{cleanup}\n  const got"), ext="js")
    bench = opened(gem, reuse="always", timeout=10)
    assert bench.call("attack").ok
    res = bounded_call(bench, "victim", {"secret": SECRET}, within=20)
    report = bench.call("report")
    assert report.ok, report.error
    return res, report.value, bench


def _assert_victim_untouched(res: workbench.CallResult, stolen: list[str], bench: workbench.Bench) -> None:
    assert res.ok, res.error
    assert res.value == {"secret": SECRET, "back": SECRET, "n": [1, 2, 3]}
    kv = bench.kv()
    assert dict(zip(kv["key"], kv["value"]))["victim"] == SECRET
    assert not any(SECRET in s for s in stolen), stolen


def test_SEC_bridge_MessageEvent_data_accessor_cannot_take_the_port(
    gem: GemBuilder, opened: Callable
) -> None:
    res, stolen, bench = _attack(
        gem,
        opened,
        """
        export default async () => {
          globalThis.__stolen = [];
          const grab = (ev, v) => {
            globalThis.__stolen.push(JSON.stringify(v));
            const port = ev.target ?? ev.currentTarget;
            if (port && v && v.t === "call") {  // answer the victim's call ourselves
              port.postMessage({ t: "done", id: v.id, ok: true, json: '"forged"' });
            }
          };
          for (const proto of [MessageEvent.prototype, Event.prototype, Object.prototype]) {
            Object.defineProperty(proto, "data", { configurable: true,
              set(v) { Object.defineProperty(this, "__d", { value: v, configurable: true }); },
              get() { const v = this.__d; grab(this, v); return v; } });
          }
          return "planted";
        }""",
        cleanup="delete MessageEvent.prototype.data; delete Event.prototype.data; delete Object.prototype.data;",
    )
    _assert_victim_untouched(res, stolen, bench)


def test_SEC_bridge_Array_map_and_iterator_poisoning(gem: GemBuilder, opened: Callable) -> None:
    res, stolen, bench = _attack(
        gem,
        opened,
        """
        export default async () => {
          globalThis.__stolen = [];
          const map = Array.prototype.map, iter = Array.prototype[Symbol.iterator];
          Array.prototype.map = function (f) {
            globalThis.__stolen.push(JSON.stringify(this));
            return map.call(this, (x, i, a) => (typeof x === "string" && x.startsWith("s3") ? "pwned" : f(x, i, a)));
          };
          Array.prototype[Symbol.iterator] = function () {
            globalThis.__stolen.push(JSON.stringify(this));
            return iter.call(this);
          };
          return "planted";
        }""",
        cleanup="",
    )
    _assert_victim_untouched(res, stolen, bench)


def test_SEC_bridge_Object_prototype_toJSON_poisoning(gem: GemBuilder, opened: Callable) -> None:
    res, stolen, bench = _attack(
        gem,
        opened,
        """
        export default async () => {
          globalThis.__stolen = [];
          Object.prototype.toJSON = function () {
            const own = {};
            for (const k of Object.keys(this)) own[k] = this[k];
            globalThis.__stolen.push(Object.values(own).join(","));
            return "pwned";
          };
          return "planted";
        }""",
        cleanup="delete Object.prototype.toJSON;",
    )
    _assert_victim_untouched(res, stolen, bench)


def test_SEC_bridge_Promise_prototype_then_poisoning(gem: GemBuilder, opened: Callable) -> None:
    # the victim returns a ctx promise from an async function: resolving with it looks up `then`
    res, stolen, bench = _attack(
        gem,
        opened,
        """
        export default async () => {
          globalThis.__stolen = [];
          const then = Promise.prototype.then;
          Promise.prototype.then = function (ok, err) {
            return then.call(this, (v) => {
              globalThis.__stolen.push(typeof v === "object" ? JSON.stringify(v) : String(v));
              return ok ? ok(v === "s3cr3t-victim-data" ? "pwned" : v) : v;
            }, err);
          };
          return "planted";
        }""",
        victim="""
        export default async (input, ctx) => {
          await ctx.storage.kv.set("victim", input.secret);
          await ctx.storage.kv.set("n", "[1,2,3]");
          const back = await ctx.storage.kv.get("victim");
          if (input.direct) return ctx.storage.kv.get("victim");
          return { secret: input.secret, back, n: JSON.parse(await ctx.storage.kv.get("n")) };
        }""",
        cleanup="",
    )
    _assert_victim_untouched(res, stolen, bench)
    direct = bench.call("victim", {"secret": SECRET, "direct": True})
    assert direct.ok and direct.value == SECRET
    assert not any(SECRET in s for s in bench.call("report").value)


def test_SEC_bridge_Object_prototype_then_poisoning(gem: GemBuilder, opened: Callable) -> None:
    # a `then` on Object.prototype made every ctx reply object a thenable of the attacker's
    # (planted from a microtask, after the attacker's call returned; a timer no longer runs
    # after its call)
    res, stolen, bench = _attack(
        gem,
        opened,
        """
        export default async () => {
          globalThis.__stolen = [];
          queueMicrotask(() => {
            Object.defineProperty(Object.prototype, "then", { configurable: true, writable: true,
              value: function (ok) { globalThis.__stolen.push(JSON.stringify(this)); ok(["pwned"]); } });
          });
          return "planted";
        }""",
        victim="""
        export default (input, ctx) => {
          // strings only out of its own async function: an object returned from one would meet
          // the planted `then` in the tool's own code, which no bridge can guard
          const run = async () => {
            await ctx.storage.kv.set("victim", input.secret);
            await ctx.storage.kv.set(input.secret, "key");
            const listed = await ctx.storage.kv.list();
            return `${listed.join("|")}/${await ctx.storage.kv.get("victim")}`;
          };
          return run();  // a sync tool handing back a promise: the bridge awaits it
        }""",
        cleanup="delete Object.prototype.then;",
    )
    assert res.ok, res.error
    assert res.value == f"{SECRET}|victim/{SECRET}"
    assert not any(SECRET in s for s in stolen), stolen


def test_SEC_bridge_Object_prototype_then_does_not_change_another_tools_async_return(
    gem: GemBuilder, opened: Callable
) -> None:
    # V8 resolves an async function's returned object through its `then`: one planted on
    # Object.prototype by an earlier call made every other tool's object result "hijacked"
    gem.tool(
        "attack",
        """export default async () => {
          Object.defineProperty(Object.prototype, "then", { configurable: true, writable: true,
            value: function (ok) { ok("hijacked"); } });
          Array.prototype.then = Object.prototype.then;
          return "planted";
        }""",
        ext="js",
    )
    victims = {
        "obj": ("async () => ({ a: 1 })", {"a": 1}),
        "arr": ("async () => [1, 2]", [1, 2]),
        "promise": ("() => Promise.resolve({ b: 2 })", {"b": 2}),
        "awaited": ("async () => { const x = await { c: 3 }; return x; }", {"c": 3}),
    }
    for name, (src, _) in victims.items():
        gem.tool(name, f"export default {src}", ext="js")
    gem.tool("still", "export default async () => typeof Object.prototype.then", ext="js")
    bench = opened(gem, reuse="always", timeout=10)
    assert bench.call("attack").value == "planted"
    for name, (_, want) in victims.items():
        res = bench.call(name)
        assert res.ok and res.value == want, (name, res)
    assert bench.call("still").value == "undefined"  # removed as the next call started


def test_SEC_bridge_an_unremovable_planted_then_fails_calls_not_hijacks_them(
    gem: GemBuilder, opened: Callable
) -> None:
    gem.tool(
        "attack",
        """export default async () => {
          Object.defineProperty(Object.prototype, "then", { value: function (ok) { ok("hijacked"); } });
          return "planted";
        }""",
        ext="js",
    )
    gem.tool("obj", "export default async () => ({ a: 1 })", ext="js")
    bench = opened(gem, reuse="always", timeout=10)
    assert bench.call("attack").value == "planted"
    res = bench.call("obj")
    assert res.error is not None and "`then` unremovable" in res.error.message, res
    fresh = opened(gem, reuse="never", timeout=10)  # a fresh Worker per call: no planted then
    assert fresh.call("attack").ok and fresh.call("obj").value == {"a": 1}


def test_SEC_bridge_Error_prototype_getters_see_no_error(gem: GemBuilder, opened: Callable) -> None:
    res, stolen, bench = _attack(
        gem,
        opened,
        """
        export default async () => {
          globalThis.__stolen = [];
          for (const key of ["name", "code", "stack"]) {
            const d = Object.getOwnPropertyDescriptor(Error.prototype, key);
            Object.defineProperty(Error.prototype, key, { configurable: true,
              get() { globalThis.__stolen.push(String(this.message)); return d?.value; } });
          }
          Error.prepareStackTrace = (e) => { globalThis.__stolen.push(String(e.message)); return "forged"; };
          return "planted";
        }""",
        victim="""
        export default async (input) => { throw new Error(input.secret); }""",
        cleanup="",
    )
    assert res.error.code == "E_TOOL_ERROR" and SECRET in res.error.message
    assert "tools/victim.js:2" in res.error.details["stack"]
    assert not any(SECRET in s for s in stolen), stolen


# --- item 12: a symlink added to the gem folder after open (N1) ------------------------------------

READ_LINK = """
export default async () => Deno.readTextFileSync(new URL("./link", import.meta.url)).slice(0, 20);
"""


def test_N1_symlink_added_after_open_is_refused(gem: GemBuilder, opened: Callable, tmp_path: Path) -> None:
    gem.tool("rd", READ_LINK, ext="js")
    gem.tool("ok", "export default async () => 'fine'", ext="js")
    bench = opened(gem)
    assert bench.call("ok").ok
    outside = tmp_path / "outside.txt"
    outside.write_text("secret outside the gem")
    link = gem.root / "tools" / "link"
    for target in (outside, Path("/etc/passwd")):
        link.unlink(missing_ok=True)
        os.symlink(target, link)
        for tool in ("rd", "ok"):  # every call: the tool could read it any time
            res = bench.call(tool)
            assert res.error is not None and res.error.code == "E_SANDBOX", res.value
            assert res.error.details["path"] == "tools/link" and "tools/link" in res.error.message
    link.unlink()
    assert bench.call("ok").value == "fine"
    # a deeper folder, created after open, holding a link to a folder outside
    (gem.root / "data" / "sub").mkdir(parents=True)
    os.symlink(tmp_path, gem.root / "data" / "sub" / "out")
    res = bench.call("ok")
    assert res.error.code == "E_SANDBOX" and res.error.details["path"] == "data/sub/out"


def test_N1_symlink_inside_the_gem_is_fine(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("rd", READ_LINK, ext="js")
    bench = opened(gem)
    (gem.root / "tools" / "real.txt").write_text("inside text")
    os.symlink(gem.root / "tools" / "real.txt", gem.root / "tools" / "link")
    res = bench.call("rd")
    assert res.ok and res.value == "inside text", res.error


def test_N1_a_hard_link_in_the_gem_folder_is_refused(
    gem: GemBuilder, opened: Callable, tmp_path: Path
) -> None:
    """A hard link is another name of a file, possibly outside (round 4: a tool read a file
    of the user's through one); Deno's path check cannot tell. Refused like a symlink out."""
    gem.tool("rd", READ_LINK, ext="js")
    gem.tool("ok", "export default async () => 'fine'", ext="js")
    bench = opened(gem)
    outside = tmp_path / "outside.txt"
    outside.write_text("secret outside the gem")
    os.link(outside, gem.root / "tools" / "link")
    for tool in ("rd", "ok"):
        res = bench.call(tool)
        assert res.error is not None and res.error.code == "E_SANDBOX", res.value
        assert res.error.details["path"] == "tools/link" and "hard link" in res.error.message
    (gem.root / "tools" / "link").unlink()
    (gem.root / "tools" / "link").write_text("a copy")
    assert bench.call("rd").value == "a copy"


def test_SEC_bridge_replaced_builtins_do_not_reach_the_channel(gem: GemBuilder, opened: Callable) -> None:
    # every global the bridge uses, replaced by spies that record what they see
    res, stolen, bench = _attack(
        gem,
        opened,
        """
        export default async () => {
          const seen = globalThis.__stolen = [];
          // the spies' own tools, taken first; a flag keeps them from spying on themselves
          const apply = Reflect.apply, stringify = JSON.stringify, dec = new TextDecoder();
          const decode = dec.decode.bind(dec);
          let busy = false;
          const record = (key, self, args) => {
            const parts = [String(key)];
            for (const a of [self, ...args]) {
              try { parts[parts.length] = a instanceof Uint8Array ? decode(a) : stringify(a); } catch {}
            }
            seen[seen.length] = parts.join(" ");
          };
          const spy = (obj, key) => {
            const orig = obj[key];
            if (typeof orig !== "function") return;
            obj[key] = function (...args) {
              if (!busy) { busy = true; try { record(key, this, args); } finally { busy = false; } }
              return apply(orig, this, args);
            };
          };
          const FP = Function.prototype, AP = Array.prototype, OP = Object;
          for (const k of ["call", "apply", "bind"]) spy(FP, k);
          for (const k of ["map", "push", "slice", "join", "concat", "forEach"]) spy(AP, k);
          for (const k of ["freeze", "defineProperty", "keys", "fromEntries", "create", "getPrototypeOf",
                           "getOwnPropertyDescriptor", "hasOwn"]) spy(OP, k);
          for (const k of ["stringify", "parse"]) spy(JSON, k);
          for (const k of ["apply", "deleteProperty"]) spy(Reflect, k);
          for (const k of ["waitAsync", "load", "store", "notify"]) spy(Atomics, k);
          spy(TextEncoder.prototype, "encode"); spy(TextDecoder.prototype, "decode");
          for (const k of ["set", "subarray", "slice"]) spy(Object.getPrototypeOf(Uint8Array.prototype), k);
          for (const k of ["split", "slice", "indexOf"]) spy(String.prototype, k);
          spy(Promise.prototype, "then"); spy(Promise, "resolve");
          spy(MessagePort.prototype, "postMessage");
          return "planted";
        }""",
        cleanup="",
    )
    _assert_victim_untouched(res, stolen, bench)


def test_SEC5_huge_error_message_and_result_stay_small(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("throws", "export default async () => { throw new Error('e'.repeat(50e6)); }", ext="js")
    gem.tool("huge", "export default async () => 'r'.repeat(100e6)", ext="js")
    bench = opened(gem, timeout=30)
    res = bench.call("throws")
    assert res.error.code == "E_TOOL_ERROR" and len(res.error.message) < 70_000
    res = bench.call("huge")
    assert res.error.code == "E_RESULT_TOO_LARGE"
    assert res.error.details["size"] == 100_000_002 and res.error.details["limit"] == 1_048_576


def test_SEC5_concurrent_large_ctx_calls_stay_in_step(gem: GemBuilder, opened: Callable) -> None:
    # many big messages in flight at once, both ways: each arrives whole and in its own frame
    gem.tool(
        "burst",
        """
        export default async (input, ctx) => {
          const body = (i) => String(i).padStart(6, "0") + "é".repeat(300_000);
          await Promise.all(Array.from({ length: 24 }, (_, i) => ctx.files.write(`f${i}.txt`, body(i))));
          const back = await Promise.all(Array.from({ length: 24 }, (_, i) => ctx.files.read(`f${i}.txt`)));
          return back.map((t, i) => t === body(i));
        }""",
        ext="js",
    )
    res = opened(gem, timeout=60).call("burst")
    assert res.ok, res.error
    assert res.value == [True] * 24


@pytest.mark.parametrize("planted_in", ["attacker", "victim"])
def test_SEC_bridge_fetch_response_and_body_do_not_meet_a_planted_then(
    gem: GemBuilder, opened: Callable, planted_in: str
) -> None:
    # the Response object and res.json()'s value are resolved by the bridge: a `then` planted on
    # Object.prototype must see neither, planted by the attacker after its call returned (set
    # aside during later calls, issue 25) or by the victim's own code at its start (then the
    # bridge's resolveWith shadows it)
    gem.manifest["permissions"] = {"http": {"connections": {"acme": {"hosts": ["api.acme.example"]}}}}
    gem.tool(
        "attack",
        """
        export default async () => {
          globalThis.__stolen = [];
          queueMicrotask(() => {
            Object.defineProperty(Object.prototype, "then", { configurable: true, writable: true,
              value: function (ok) { globalThis.__stolen.push(JSON.stringify(this)); ok(["pwned"]); } });
          });
          return "planted";
        }""",
        ext="js",
    )
    gem.tool(
        "victim",
        """
        export default (input, ctx) => (async () => {
          if (input.plant) Object.defineProperty(Object.prototype, "then", { configurable: true,
            writable: true, value: function (ok) { globalThis.__stolen.push(JSON.stringify(this)); ok(["pwned"]); } });
          const res = await ctx.http.fetch("https://api.acme.example/v1/secret");
          const body = await res.json();
          return `${res.status}/${body.secret}/${Object.isFrozen(res)}`;
        })()""",
        ext="js",
    )
    gem.tool("report", REPORT.replace("const got", "delete Object.prototype.then;\n  const got"), ext="js")
    bench = opened(
        gem,
        reuse="always",
        timeout=10,
        http=[{"match": "https://api.acme.example/", "respond": {"json": {"secret": SECRET}}}],
    )
    if planted_in == "attacker":
        assert bench.call("attack").ok
    else:
        bench.call("attack")  # (for its __stolen list) ...
        bench.call("report")  # ... and nothing planted by it
    res = bounded_call(bench, "victim", {"plant": planted_in == "victim"}, within=20)
    stolen = bench.call("report").value
    assert res.ok, res.error
    assert res.value == f"200/{SECRET}/true"
    assert not any(SECRET in s for s in stolen), stolen


# --- the bridge's own checks cannot be hooked, its errors cannot be forged ------------------------


def test_SEC7_hasInstance_planted_on_builtins_sees_no_fetch_arguments(
    gem: GemBuilder, opened: Callable
) -> None:
    # instanceof looked up Symbol.hasInstance on URL, Headers, Uint8Array... at call time: the
    # attacker saw the victim's URL and headers, and added a header of its own
    gem.manifest["permissions"] = {"http": {"connections": {"acme": {"hosts": ["api.acme.example"]}}}}
    gem.tool(
        "attack",
        """
        export default async () => {
          globalThis.__stolen = [];
          for (const C of [URL, Headers, Uint8Array, ArrayBuffer, URLSearchParams, Error]) {
            Object.defineProperty(C, Symbol.hasInstance, { configurable: true, value(x) {
              try { globalThis.__stolen.push(String(x) + JSON.stringify(x)); } catch {}
              if (C === Headers && x && typeof x === "object") x["X-Evil"] = "1";
              return Function.prototype[Symbol.hasInstance].call(C, x);
            } });
          }
          return "planted";
        }""",
        ext="js",
    )
    gem.tool(
        "victim",
        """
        export default async (input, ctx) => {
          const res = await ctx.http.fetch(new URL("https://api.acme.example/v1/" + input.secret),
            { method: "POST", headers: { "X-Token": input.secret }, body: new TextEncoder().encode(input.secret) });
          const echo = await res.json();
          try { await ctx.files.read("../nope"); } catch (e) { echo.code = e.code; }
          return echo;
        }""",
        ext="js",
    )
    gem.tool("report", REPORT, ext="js")
    seen: list[Any] = []

    def handler(req: Any) -> dict[str, Any]:
        seen.append((req.url, dict(req.headers), req.body))
        return {"json": {"evil": any(k.lower() == "x-evil" for k in req.headers)}}

    bench = opened(
        gem, reuse="always", timeout=10, http=[{"match": "https://api.acme.example/", "respond": handler}]
    )
    assert bench.call("attack").ok
    res = bounded_call(bench, "victim", {"secret": SECRET}, within=20)
    stolen = bench.call("report").value
    assert res.ok, res.error
    assert res.value == {"evil": False, "code": "E_PATH"}, res.value
    assert seen and seen[0][0] == f"https://api.acme.example/v1/{SECRET}" and seen[0][2] == SECRET.encode()
    assert not any(SECRET in s for s in stolen), stolen


def test_SEC7_descriptor_poisoning_does_not_break_result_handling(gem: GemBuilder, opened: Callable) -> None:
    # descriptors the bridge read back into defineProperty inherited a planted `get`/`value`
    res, stolen, bench = _attack(
        gem,
        opened,
        """
        export default async () => {
          globalThis.__stolen = [];
          Object.prototype.toJSON = function () { return this; };
          Error.prepareStackTrace = (e, s) => String(e);
          Object.defineProperty(Object.prototype, "get", { configurable: true, writable: true,
            value: function () { globalThis.__stolen.push("get"); return 1; } });
          return "planted";
        }""",
        victim=VICTIM.replace("return {", "if (input.throw) throw new Error('boom');\n  return {"),
        cleanup="delete Object.prototype.get; delete Object.prototype.toJSON;",
    )
    _assert_victim_untouched(res, stolen, bench)


def test_SEC7_forged_bridge_error_names_are_tool_errors(gem: GemBuilder, opened: Callable) -> None:
    gem.tool(
        "big",
        """
        export default async () => { const e = new Error("x"); e.name = "ResultTooLarge"; e.size = "many"; throw e; }""",
        ext="js",
    )
    gem.tool(
        "code",
        """
        export default async () => { const e = new Error("x"); e.name = "CtxError"; e.code = "E_TIMEOUT"; throw e; }""",
        ext="js",
    )
    gem.tool(
        "recode",
        """
        export default async (input, ctx) => {
          try { await ctx.files.read("../x"); } catch (e) { if (input.change) e.code = "E_TIMEOUT"; throw e; }
        }""",
        ext="js",
    )
    gem.tool(
        "odd",
        """
        export default async () => { const e = new Error("x"); e.name = "ResultError"; e.code = 5; throw e; }""",
        ext="js",
    )
    bench = opened(gem)
    for tool in ("big", "code", "odd"):
        res = bench.call(tool)
        assert res.error is not None and res.error.code == "E_TOOL_ERROR", (tool, res.error)
    real = bench.call("recode")
    assert real.error.code == "E_PATH", real.error  # a real ctx error rethrown keeps its code
    changed = bench.call("recode", {"change": True})
    assert changed.error.code == "E_PATH", changed.error


def test_SEC7_odd_error_messages_from_the_host_never_raise(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("ok", "export default async () => 1", ext="js")
    bench = opened(gem)
    assert bench.call("ok").ok
    sb = bench.sandbox
    for e in [
        {},
        {"name": None},
        {"name": "ResultTooLarge"},
        {"name": "ResultTooLarge", "size": "x"},
        {"bridge": "result_too_large", "size": None},
        {"bridge": "ctx", "code": ["E_X"]},
        {"name": 1, "message": {"a": 1}, "stack": 5},
        {"bridge": "ctx", "code": "E_\n"},
    ]:
        err = sb._error(e)
        assert err.code == "E_TOOL_ERROR", (e, err)


def test_SEC5_unawaited_ctx_calls_stay_within_a_memory_bound(
    gem: GemBuilder, opened: Callable, limits: Callable
) -> None:
    from _deno import deno_pids

    limits(bridge_message_bytes=32 * MiB)
    gem.tool(
        "fire",
        """
        export default async (input, ctx) => {
          const big = "x".repeat(20e6);
          let refused = 0;
          for (let i = 0; i < 200; i++) {
            ctx.storage.kv.set("k" + i, big).catch((e) => { if (e.code === "E_TOO_LARGE") refused++; });
          }
          await new Promise((r) => setTimeout(r, 0));
          return refused;
        }""",
        ext="js",
    )
    gem.tool("ok", "export default async () => 'ok'", ext="js")
    bench = opened(gem, timeout=60)
    assert bench.call("ok").ok
    res = bounded_call(bench, "fire", within=60)
    assert res.ok, res.error
    assert res.value >= 190  # at most 4 x 32 MiB of arguments in flight
    pids = deno_pids(gem.root)
    assert pids
    for pid in pids:
        status = Path(f"/proc/{pid}/status").read_text()
        hwm_kb = int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1])
        assert hwm_kb < 1_200_000, f"deno peak RSS {hwm_kb / 1024:.0f} MiB"
    assert bench.call("ok").ok


# --- Python tools: whatever they raise or return, a coded result ---------------------------------

PY_HOSTILE = """
from workbench._errors import WorkbenchError

class Custom(BaseException):
    pass

class BadStr(Exception):
    def __str__(self):
        raise RuntimeError("no str")

class Meta(type):
    @property
    def __name__(cls):
        raise RuntimeError("no name")

class BadName(Exception, metaclass=Meta):
    pass

class BadCode(WorkbenchError):
    @property
    def code(self):
        raise RuntimeError("no code")
    @code.setter
    def code(self, v):
        pass

class BadIter(dict):
    def __iter__(self):
        raise RuntimeError("no iter")
    def items(self):
        raise RuntimeError("no items")

class BadList(list):
    def __iter__(self):
        raise RuntimeError("no iter")

class BadFloat(float):
    def __repr__(self):
        raise RuntimeError("no repr")

def handle(input, ctx):
    k = input["k"]
    if k == "exit": raise SystemExit(3)
    if k == "genexit": raise GeneratorExit()
    if k == "custom": raise Custom("c")
    if k == "badstr": raise BadStr()
    if k == "badname": raise BadName("n")
    if k == "stack": raise WorkbenchError("E_X", "m", stack="s")
    if k == "badcode": raise BadCode("E_X", "m")
    if k == "syntax":
        e = SyntaxError("bad"); e.filename = 5; raise e
    if k == "huge": raise ValueError("x" * 30_000_000)
    if k == "bigint": return 10 ** 5000
    if k == "baditer": return BadIter(a=1)
    if k == "badlist": return BadList([1])
    if k == "badfloat": return BadFloat(1.5)
    return "ok"
"""


@pytest.mark.parametrize(
    "k,codes",
    [
        ("exit", {"E_TOOL_ERROR"}),
        ("genexit", {"E_TOOL_ERROR"}),
        ("custom", {"E_TOOL_ERROR"}),
        ("badstr", {"E_TOOL_ERROR"}),
        ("badname", {"E_TOOL_ERROR"}),
        ("stack", {"E_X"}),
        ("badcode", {"E_TOOL_ERROR"}),
        ("syntax", {"E_TOOL_ERROR"}),
        ("huge", {"E_TOOL_ERROR"}),
        ("bigint", {"E_RESULT_NOT_JSON", "E_RESULT_TOO_LARGE"}),
        ("baditer", {"E_RESULT_NOT_JSON"}),
        ("badlist", {"E_RESULT_NOT_JSON"}),
        ("badfloat", {"E_RESULT_NOT_JSON", None}),
    ],
)
def test_SEC7_python_hostile_exceptions_and_results_are_coded(
    gem: GemBuilder, opened: Callable, k: str, codes: set
) -> None:
    gem.tool("hostile", PY_HOSTILE)
    bench = opened(gem)
    res = bench.call("hostile", {"k": k})
    assert (res.error.code if res.error else None) in codes, (k, res.error, res.value)
    if res.error:
        assert len(res.error.message) <= 70_000
    if k == "badfloat" and res.error is None:
        assert res.value == 1.5
    assert bench.call("hostile", {"k": "fine"}).value == "ok"


def test_SEC7_python_KeyboardInterrupt_still_propagates(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("stop", "def handle(input, ctx):\n    raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        opened(gem).call("stop")
