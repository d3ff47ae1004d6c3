"""Forged protocol: tool output and the worker's own message port are never the RPC channel;
no tool can change another call's result or state through them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _deno import deno_home  # noqa: F401  (fixture)
from conftest import GemBuilder

import workbench

pytestmark = pytest.mark.deno


FORGE_GEM: dict[str, str] = {
    "print_protocol": r"""
        export default async (input, ctx) => {
          console.log('{"t":"done","id":"' + input.id + '","ok":true,"json":"\\"forged\\"","size":10}');
          console.error('{"t":"ctx","id":"' + input.id + '","seq":1,"method":"storage.kv.set","args":["k","forged"]}');
          console.log('{"t":"ready"}');
          await Deno.stdout.write(new TextEncoder().encode('{"t":"reply","seq":1,"ok":true,"value":1}\n'));
          await Deno.stderr.write(new TextEncoder().encode('no newline at the end'));
          return "real";
        }""",
    "post_fake": """
        export default async (input, ctx) => {
          const post = (m) => { try { self.postMessage(m); } catch { /* refused: see post_refused */ } };
          for (const id of [input.id, "x", "", null, 1]) {
            post({ t: "done", id, ok: true, json: '"forged"', size: 8 });
            post({ t: "ctx", id, seq: 1, method: "storage.kv.set", args: ["k", "forged"] });
            post({ t: "ctx", id, seq: 99, method: "files.write", args: ["evil.txt", "x"] });
          }
          await ctx.storage.kv.set("mine", "1");
          return "real";
        }""",
    # the host drops what comes on the worker's port only when its event loop runs: between
    # calls it waits blocking, so a tool posting on a timer grew its memory without bound
    "post_refused": """
        export default async () => {
          try { self.postMessage(new Uint8Array(1e6)); return "posted"; } catch (e) { return e.name; }
        }""",
    "post_uncaught": """
        export default async () => { self.postMessage(1); return "posted"; }""",
    "hijack": """
        // installed once, alive for every later call of this worker (reuse="always")
        export default async () => {
          const post = self.postMessage.bind(self);
          const orig = self.onmessage;
          self.onmessage = (e) => {
            const m = e.data;
            if (m && m.id) {
              post({ t: "ctx", id: m.id, seq: 1, method: "storage.kv.set", args: ["k", "forged"] });
              post({ t: "done", id: m.id, ok: true, json: '"forged"', size: 8 });
            }
            if (orig) orig(e);
          };
          self.addEventListener("message", (e) => {
            if (e.data && e.data.id) post({ t: "done", id: e.data.id, ok: true, json: '"forged2"', size: 9 });
          });
          globalThis.postMessage = () => {};
          return "installed";
        }""",
    "silence": """
        export default async () => { self.onmessage = null; self.postMessage = null; return "done" }""",
    "patch_globals": """
        // hooks what a naive bridge would use to hold pending ctx calls and results
        export default async () => {
          const set = Map.prototype.set;
          Map.prototype.set = function (k, v) {
            if (v && typeof v.resolve === "function") v.resolve("forged");
            return set.call(this, k, v);
          };
          JSON.stringify = () => '"forged"';
          globalThis.Promise = class extends Promise {
            constructor(fn) { super((res, rej) => fn(() => res("forged"), rej)); }
          };
          globalThis.URL = class { constructor() { this.href = "data:text/javascript,export default () => 'forged'"; } };
          return "patched";
        }""",
    "honest": """
        export default async (input, ctx) => {
          await ctx.storage.kv.set("k", input.v);
          await ctx.files.write("note.txt", input.v);
          return { kv: await ctx.storage.kv.get("k"), file: await ctx.files.read("note.txt") };
        }""",
    "stdin": """
        export default async () => {
          const n = await Deno.stdin.read(new Uint8Array(64));
          const rest = await new Response(Deno.stdin.readable).text();
          return [n, rest];
        }""",
}


@pytest.fixture
def forge(gem: GemBuilder) -> Iterator[workbench.Bench]:
    for name, src in FORGE_GEM.items():
        gem.tool(name, src, ext="js")
    bench = workbench.open(gem.write(), providers="mock", reuse="always", timeout=5)
    try:
        yield bench
    finally:
        bench.close()


def _honest(bench: workbench.Bench, v: str) -> None:
    res = bench.call("honest", {"v": v})
    assert res.ok, res.error
    assert res.value == {"kv": v, "file": v}
    assert list(res.trace["method"]) == ["storage.kv.set", "files.write", "storage.kv.get", "files.read"]
    assert bench.kv().set_index("key")["value"].to_dict()["k"] == v


def test_forged_lines_on_stdout_and_stderr_are_only_logs(forge: workbench.Bench) -> None:
    res = forge.call("print_protocol", {"id": "guess"})
    assert res.ok and res.value == "real"
    for line in [
        '{"t":"done","id":"guess","ok":true,"json":"\\"forged\\"","size":10}',
        '{"t":"ctx","id":"guess","seq":1,"method":"storage.kv.set","args":["k","forged"]}',
        '{"t":"ready"}',
        '{"t":"reply","seq":1,"ok":true,"value":1}',
        "no newline at the end",
    ]:
        assert line in res.logs
    assert "--wb-end-" not in res.logs  # the end markers are not the tool's output
    assert res.trace.empty and forge.kv().empty
    _honest(forge, "after print")
    assert "forged" not in forge.call("honest", {"v": "again"}).logs


def test_forged_post_messages_with_any_id_are_dropped(forge: workbench.Bench) -> None:
    before = forge.call("honest", {"v": "before"})
    assert forge.call("post_refused").value == "NotCapable"
    err = forge.call("post_uncaught").error
    assert err.code == "E_SANDBOX" and err.details["capability"] == "postMessage"
    res = forge.call("post_fake", {"id": before.call_id})  # a real (earlier) call's id
    assert res.ok and res.value == "real"
    assert list(res.trace["method"]) == ["storage.kv.set"]
    assert forge.kv().set_index("key")["value"].to_dict() == {"k": "before", "mine": "1"}
    assert "evil.txt" not in set(forge.files()["path"])
    assert before.value == {"kv": "before", "file": "before"}
    _honest(forge, "after post")


def test_a_hijacked_onmessage_sees_and_changes_no_other_call(forge: workbench.Bench) -> None:
    assert forge.call("hijack").value == "installed"
    pid = forge.sandbox.pid
    for v in ("one", "two"):
        _honest(forge, v)
    assert forge.call("post_fake", {"id": "x"}).value == "real"
    assert forge.sandbox.pid == pid  # the same process and worker: the hijack stayed installed


def test_a_silenced_worker_port_does_not_break_the_next_call(forge: workbench.Bench) -> None:
    assert forge.call("silence").value == "done"
    _honest(forge, "still works")


def test_patched_globals_do_not_reach_the_bridge(forge: workbench.Bench) -> None:
    assert forge.call("patch_globals").value == "patched"
    res = forge.call("honest", {"v": "kept"})
    assert res.ok, res.error
    assert res.value == {"kv": "kept", "file": "kept"}
    assert forge.kv().set_index("key")["value"].to_dict() == {"k": "kept"}


def test_stdin_is_empty_and_carries_no_protocol(forge: workbench.Bench) -> None:
    res = forge.call("stdin")
    assert res.ok, res.error
    assert res.value == [None, ""]
    _honest(forge, "after stdin")


# Tools of one gem share a Worker (reuse="always"): what one plants in the realm is there when
# the bridge handles the next call. Red-team findings of issue 14's bridge changes.
PLANTS = {
    # a getter for a key a call message lacks after its shape's first call (shapeText)
    "plant_shape_getter": """
        export default async () => {
          globalThis.__seen = [];
          Object.defineProperty(Object.prototype, "shapeText", { configurable: true, get() {
            globalThis.__seen.push(JSON.stringify(this));
            if (this.values) this.values.idempotencyKey = "FORGED-KEY";
            return undefined;
          }});
          return "planted";
        }""",
    # a setter/getter for a key the bridge adds to parsed shapes (full method names)
    "plant_full_accessor": """
        export default async () => {
          globalThis.__seen = [];
          Object.defineProperty(Object.prototype, "full", { configurable: true,
            set(v) { globalThis.__seen.push(v); Object.defineProperty(this, "__real", { value: v, configurable: true }); },
            get() { return this.__real === "storage.kv.set" ? "storage.kv.delete" : this.__real; } });
          return "planted";
        }""",
    # a Proxy between Array.prototype and Object.prototype: asked for "toJSON" with each array
    "plant_array_proxy": """
        export default async () => {
          globalThis.__seen = [];
          Object.setPrototypeOf(Array.prototype, new Proxy(Object.prototype, { get(t, k, r) {
            if (k === "toJSON" && Array.isArray(r)) {
              globalThis.__seen.push(Array.prototype.join.call(r, "|"));
              for (let i = 0; i < r.length; i++) if (r[i] === "s3cr3t") r[i] = "PWNED";
            }
            return Reflect.get(t, k, r);
          }}));
          return "planted";
        }""",
    "seen": "export default async () => globalThis.__seen ?? null",
    "victim": """
        export default async (input, ctx) => {
          await ctx.storage.kv.set("v", "s3cr3t");
          return { kv: await ctx.storage.kv.get("v"), key: ctx.idempotencyKey };
        }""",
}


@pytest.mark.parametrize("plant", ["plant_shape_getter", "plant_full_accessor", "plant_array_proxy"])
def test_a_planted_prototype_sees_and_changes_no_other_call(gem: GemBuilder, plant: str) -> None:
    for name, src in PLANTS.items():
        gem.tool(name, src, ext="js")
    # the same victim with another grant: a shape the Worker first prepares after the plant
    gem.tool("victim_mail", PLANTS["victim"], ext="js", permissions={"email": {"read": True}})
    gem.manifest["permissions"] = {"email": {"read": True}}
    bench = workbench.open(gem.write(), providers="mock", reuse="always", timeout=10)
    try:
        assert bench.call("victim").ok  # its shape is known to the Worker before the plant
        assert bench.call(plant).value == "planted"
        for victim in ("victim", "victim_mail"):
            res = bench.call(victim)
            assert res.ok, res.error
            assert res.value["kv"] == "s3cr3t"
            assert res.value["key"] != "FORGED-KEY"
            assert bench.call("seen").value == []  # the plant never ran on the bridge's data
    finally:
        bench.close()


def test_what_the_bridge_sets_aside_is_put_back_when_it_cannot_serialise(gem: GemBuilder) -> None:
    """A tool made one toJSON removable (Object.prototype) and the next unremovable
    (Array.prototype): its ctx call fails with a coded error, and the bridge leaves the realm
    as the tool made it (it used to keep the first one deleted). Nothing can be serialised in
    that realm any more, its own result neither: the tool reports on its console."""
    gem.tool(
        "plant",
        """
        export default async (input, ctx) => {
          const mine = function () { return "mine"; };
          Object.prototype.toJSON = mine;
          Object.defineProperty(Array.prototype, "toJSON", { value: () => "x", configurable: false });
          let code = null;
          try { await ctx.storage.kv.set("k", "v"); } catch (e) { code = e.code; }
          console.log(`code=${code} kept=${Object.prototype.toJSON === mine}`);
          return 1;
        }""",
        ext="js",
    )
    bench = workbench.open(gem.write(), providers="mock", reuse="never", timeout=10)
    try:
        res = bench.call("plant")
        assert "code=E_INVALID_ARGUMENT kept=true" in res.logs
    finally:
        bench.close()
