"""Deterministic calls in the Deno sandbox (issue 29 point 3): a call's virtual clock and seed
drive Date, performance, Math.random and crypto's draws, installed before tool code runs and
out of its reach; a call without them sees real time and randomness, on the same warm Worker."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _deno import deno_home  # noqa: F401  (fixture)
from conftest import GemBuilder

import workbench
from workbench.runners.deno import sandbox

pytestmark = pytest.mark.deno

AT = 1_700_000_000_000  # 2023-11-14T22:13:20.000Z
AT_ISO = "2023-11-14T22:13:20.000Z"

CLOCK = """
export default async (i) => {
  const a = { now: Date.now(), iso: new Date().toISOString(), fn: Date(), perf: performance.now(),
              origin: performance.timeOrigin, temporal: Temporal.Now.instant().epochMilliseconds,
              plain: [Temporal.Now.plainDateTimeISO("UTC").toString(), Temporal.Now.plainDateISO("UTC").toString(),
                      Temporal.Now.plainTimeISO("UTC").toString(),
                      Temporal.Now.zonedDateTimeISO("UTC").epochMilliseconds],
              intl: [new Intl.DateTimeFormat("en-US", { timeZone: "UTC" }).format(),
                     new Intl.DateTimeFormat("en-US", { timeZone: "UTC" }).formatToParts()[4].value,
                     new Intl.DateTimeFormat("en-US", { timeZone: "UTC" }).format(0)] };
  await new Promise((r) => setTimeout(r, i.wait ?? 0)); // timers keep real time
  return { ...a, later: Date.now(), laterPerf: performance.now(), parsed: Date.parse(a.iso),
           utc: Date.UTC(2020, 0, 2), isDate: new Date() instanceof Date, name: Date.name,
           args: new Date(0).toISOString(), sub: new (class X extends Date {})().getTime() };
}
"""

DRAWS = """
import nodeCrypto from "node:crypto";
export default async () => ({
  node: [nodeCrypto.randomBytes(6).toString("hex"), nodeCrypto.randomUUID()],
  random: [Math.random(), Math.random(), Math.random()],
  bytes: Array.from(crypto.getRandomValues(new Uint8Array(7))),
  words: Array.from(crypto.getRandomValues(new Uint32Array(3))),
  uuid: crypto.randomUUID(),
  uuids: [crypto.randomUUID(), crypto.randomUUID()],
});
"""

# node:crypto's other draws, and a File's lastModified (its default is the engine's now)
NODE = """
import nodeCrypto, { randomInt as namedInt } from "node:crypto";
import { Buffer } from "node:buffer";
import { createRequire } from "node:module";
export default async () => {
  const required = createRequire(import.meta.url)("crypto");
  const filled = await new Promise((r, j) => nodeCrypto.randomFill(Buffer.alloc(6), (e, b) => e ? j(e) : r(b)));
  const bytes = await new Promise((r, j) => nodeCrypto.randomBytes(6, (e, b) => e ? j(e) : r(b)));
  const ints = await new Promise((r, j) => nodeCrypto.randomInt(1000000, (e, n) => e ? j(e) : r(n)));
  return {
    randomInt: [nodeCrypto.randomInt(1000000), nodeCrypto.randomInt(-5, 2 ** 40), ints, namedInt(10 ** 9),
                required.randomInt(10 ** 9), Array.from(required.randomFillSync(new Uint8Array(4)))],
    randomFillSync: [nodeCrypto.randomFillSync(Buffer.alloc(6)).toString("hex"),
                     Array.from(nodeCrypto.randomFillSync(new Uint32Array(2))),
                     Array.from(new Uint8Array(nodeCrypto.randomFillSync(new ArrayBuffer(4))))],
    randomFill: filled.toString("hex"),
    randomBytes: [nodeCrypto.randomBytes(6).toString("hex"), bytes.toString("hex")],
    webcrypto: [Array.from(nodeCrypto.webcrypto.getRandomValues(new Uint8Array(4))), nodeCrypto.webcrypto.randomUUID(),
                Array.from(nodeCrypto.getRandomValues(new Uint8Array(4)))],
    uuid: nodeCrypto.randomUUID(),
    file: [new File(["x"], "a.txt").lastModified, new File([], "b", { type: "text/plain" }).lastModified,
           new File([], "c", { lastModified: 5 }).lastModified,
           new (Object.getPrototypeOf(new File([], "d")).constructor)([], "e").lastModified,
           Reflect.construct(File, [[], "f"]).lastModified, new File([], "g") instanceof File],
  };
};
"""

# node:crypto only through require, in a Worker where no module imported it
REQUIRED = """
import { createRequire } from "node:module";
export default async () => {
  const c = createRequire(import.meta.url)("crypto");
  return [c.randomInt(10 ** 9), Array.from(c.randomFillSync(new Uint8Array(6)))];
};
"""

ERRORS = """
export default async () => {
  const out = {};
  const probe = (name, fn) => { try { fn(); out[name] = "no error"; } catch (e) { out[name] = e.name; } };
  probe("float", () => crypto.getRandomValues(new Float32Array(1)));
  probe("dataview", () => crypto.getRandomValues(new DataView(new ArrayBuffer(4))));
  probe("quota", () => crypto.getRandomValues(new Uint8Array(65537)));
  probe("max", () => crypto.getRandomValues(new Uint8Array(65536)));
  probe("this", () => crypto.getRandomValues.call({}, new Uint8Array(1)));
  probe("uuidThis", () => crypto.randomUUID.call({}));
  out.after = Array.from(crypto.getRandomValues(new Uint8Array(8)));
  return out;
}
"""

# a tool that tries to reach the real clock and randomness by every way it has in its realm
ESCAPE = """
const atImport = { Date, now: Date.now, random: Math.random };
export default async () => {
  const out = {};
  const saved = globalThis.Date;
  globalThis.Date = function Fake() {};
  globalThis.Date = saved;
  out.restored = Date.now();
  out.ctor = new (Date.prototype.constructor)().getTime();
  out.protoCtor = new (Object.getPrototypeOf(new Date()).constructor)().getTime();
  out.reflect = Reflect.construct(Date, []).getTime();
  out.reflectNow = Reflect.apply(Date.now, undefined, []);
  out.descNow = Object.getOwnPropertyDescriptor(Date, "now").value();
  out.imported = [new atImport.Date().getTime(), atImport.now()];
  out.perfProto = Object.getPrototypeOf(performance).now.call(performance);
  out.origin = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(performance), "timeOrigin")
    .get.call(performance);
  out.json = performance.toJSON().timeOrigin;
  out.cloned = structuredClone(new Date()).getTime();
  out.random = [atImport.random(), Object.getOwnPropertyDescriptor(Math, "random").value()];
  out.cryptoProto = Array.from(Object.getPrototypeOf(crypto).getRandomValues.call(crypto, new Uint8Array(4)));
  // patched for the next call: it must not matter for a later call's virtual clock or stream
  Date.prototype.constructor = saved;
  return out;
}
"""


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory, deno_home: None) -> Iterator[workbench.Bench]:  # noqa: F811
    g = GemBuilder(tmp_path_factory.mktemp("det") / "gem")
    for name, src in {
        "clock": CLOCK,
        "draws": DRAWS,
        "errors": ERRORS,
        "escape": ESCAPE,
        "node": NODE,
        "required": REQUIRED,
    }.items():
        g.tool(name, src, ext="js")
    b = workbench.open(g.write(), providers="mock", timeout=20, state_dir=tmp_path_factory.mktemp("state"))
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def virtual(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """virtual(clock_ms=…, frozen=…, seed=…): what the next calls' sessions say (the test hook
    until CallSession has the fields: the job reads them through sandbox._session_values)."""

    def set_(clock_ms: float | None = None, frozen: bool = False, seed: int | None = None) -> None:
        monkeypatch.setattr(sandbox, "_session_values", lambda _session: (clock_ms, frozen, seed))

    return set_


def value(b: workbench.Bench, tool: str, args: Any = None) -> Any:
    res = b.call(tool, args or {})
    assert res.ok, res.error
    return res.value


def test_a_frozen_clock_is_what_date_and_performance_say(bench: workbench.Bench, virtual: Callable) -> None:
    virtual(clock_ms=AT, frozen=True)
    v = value(bench, "clock", {"wait": 30})
    assert v["now"] == v["later"] == AT
    assert v["iso"] == AT_ISO and v["parsed"] == AT
    assert v["fn"].startswith("Tue Nov 14 2023")
    assert v["perf"] == v["laterPerf"] == 0 and v["origin"] == AT
    assert v["intl"] == ["11/14/2023", "2023", "1/1/1970"]
    assert v["temporal"] == AT and v["plain"] == ["2023-11-14T22:13:20", "2023-11-14", "22:13:20", AT]
    assert v["isDate"] is True and v["name"] == "Date" and v["sub"] == AT
    assert v["args"] == "1970-01-01T00:00:00.000Z" and v["utc"] == 1577923200000


def test_a_running_clock_starts_at_its_time_and_advances(bench: workbench.Bench, virtual: Callable) -> None:
    virtual(clock_ms=AT, frozen=False)
    v = value(bench, "clock", {"wait": 30})
    assert AT <= v["now"] < AT + 1000
    assert v["later"] >= v["now"] + 30 and v["laterPerf"] >= 30
    assert abs(v["origin"] + v["perf"] - v["now"]) < 2 and AT <= v["temporal"] <= v["later"]


def test_without_a_clock_time_is_real(bench: workbench.Bench, virtual: Callable) -> None:
    virtual(clock_ms=AT, frozen=True)
    assert value(bench, "clock")["now"] == AT
    virtual()
    v = value(bench, "clock")
    assert abs(v["now"] - time.time() * 1000) < 5000 and v["perf"] > 0
    assert abs(v["temporal"] - v["now"]) < 5000


def test_the_same_seed_draws_the_same_values(bench: workbench.Bench, virtual: Callable) -> None:
    virtual(seed=42)
    first = value(bench, "draws")
    assert value(bench, "draws") == first
    bench.sandbox.stop()  # a new sandbox process (and Worker): the same stream
    assert value(bench, "draws") == first
    virtual(seed=43)
    other = value(bench, "draws")
    for key in first:
        assert other[key] != first[key]
    assert all(0 <= r < 1 for r in first["random"]) and len(set(first["random"])) == 3
    v4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
    assert all(v4.match(u) for u in [first["uuid"], *first["uuids"], other["uuid"]])


def test_a_seed_wraps_to_32_bits_as_the_session_says() -> None:
    assert sandbox._determinism(None, False, -1) == {"seed": 0xFFFFFFFF}
    assert sandbox._determinism(AT, 1, None) == {"clock": [float(AT), True]}
    assert sandbox._determinism(None, False, None) == {}
    with pytest.raises(TypeError):
        sandbox._determinism(None, False, "1")
    with pytest.raises(ValueError, match="not a time"):
        sandbox._determinism(float("inf"), False, None)


def test_seeded_draws_keep_the_real_errors(bench: workbench.Bench, virtual: Callable) -> None:
    virtual()
    real = value(bench, "errors")
    virtual(seed=7)
    seeded = value(bench, "errors")
    assert value(bench, "errors") == seeded  # the same draws after the same errors
    real.pop("after"), seeded.pop("after")
    assert seeded == real
    assert seeded["float"] == seeded["dataview"] == "TypeMismatchError"
    assert seeded["quota"] == "QuotaExceededError" and seeded["max"] == "no error"
    assert seeded["this"] == seeded["uuidThis"] == "TypeError"


def test_a_tool_cannot_reach_the_real_clock_or_stream(bench: workbench.Bench, virtual: Callable) -> None:
    virtual(clock_ms=AT, frozen=True, seed=5)
    v = value(bench, "escape")
    for key in (
        "restored",
        "ctor",
        "protoCtor",
        "reflect",
        "reflectNow",
        "descNow",
        "origin",
        "json",
        "cloned",
    ):
        assert v[key] == AT, key
    assert v["imported"] == [AT, AT] and v["perfProto"] == 0
    again = value(bench, "escape")  # after the tool set Date.prototype.constructor itself
    assert again == v  # the same stream from the same seed, the same clock


def test_an_unseeded_call_after_a_seeded_one_draws_real_values(
    bench: workbench.Bench, virtual: Callable
) -> None:
    virtual(seed=42)
    seeded = value(bench, "draws")
    assert value(bench, "draws") == seeded
    virtual()
    a, b = value(bench, "draws"), value(bench, "draws")
    for key in seeded:
        assert a[key] != seeded[key] and b[key] != a[key]


def test_node_crypto_draws_and_file_times_follow_the_seed_and_clock(
    bench: workbench.Bench, virtual: Callable
) -> None:
    """node:crypto's randomInt, randomFill(Sync), randomBytes (callback forms too; imported by
    name, as the default export, or through require), webcrypto, and a File's lastModified
    escaped the seed and the frozen clock: a tool's own File got the real now. Now each follows
    them; a lastModified the tool gives is kept."""
    virtual(clock_ms=AT, frozen=True, seed=42)
    first = value(bench, "node")
    assert value(bench, "node") == first
    bench.sandbox.stop()  # a new process and Worker: the same draws
    assert value(bench, "node") == first
    assert first["file"] == [AT, AT, 5, AT, AT, True]
    virtual(clock_ms=AT + 1, frozen=True, seed=43)
    other = value(bench, "node")
    for key in first:
        if key != "file":
            assert other[key] != first[key], key
    assert other["file"][:2] == [AT + 1, AT + 1]
    assert all(0 <= n < 1000000 for n in [first["randomInt"][0], first["randomInt"][2]])
    assert -5 <= first["randomInt"][1] < 2**40
    for unseeded_first in (False, True):  # a fresh Worker: nothing imported node:crypto before
        bench.sandbox.stop()
        if unseeded_first:  # (its module is then kept from a call that loaded no node:crypto)
            virtual()
            value(bench, "required")
        virtual(seed=42)
        assert value(bench, "required") == value(bench, "required")
    virtual()  # unseeded, real time: real draws and the real now again
    real = value(bench, "node")
    assert real["randomInt"] != first["randomInt"] and abs(real["file"][0] - time.time() * 1000) < 60_000
