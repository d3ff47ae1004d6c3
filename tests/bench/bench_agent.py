"""Agent custom tools (issue 11): a `ctx.tools.calculate` round trip from JS against a ctx round
trip of the same run (`ctx.storage.kv.get` of a Notochord tool), and the wall clock of a
50-call chain (a tool calling itself through ctx.tools until the 50th call)."""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

import bench_deno as bd
from benchlib import Figures, Sizes, no_gc, write_gem

CALC = """\
export async function handle(input, ctx) {
  const t0 = performance.now();
  for (let i = 0; i < input.n; i++) await ctx.tools.calculate({ expression: "1+1" });
  return { us: (performance.now() - t0) * 1000 / input.n };
}
"""
CHAIN = """\
def handle(input, ctx):
    n = input.get("n", 1)
    return n if n >= 50 else ctx.tools.chain({"n": n + 1})
"""
PER_CALL = 40  # cross-tool calls per invocation (the platform allows 50)


def _agent_gem(root: Path) -> Path:
    (root / "tools").mkdir(parents=True)
    (root / "tools" / "calc.js").write_text(CALC)
    (root / "tools" / "chain.py").write_text(CHAIN)
    manifest = {
        "platform": "agent",
        "id": "bench.agent",
        "name": "Bench",
        "version": "0.1.0",
        "agent": {"id": "a-1", "name": "Bench"},
        "tools": [{"name": "calc", "file": "tools/calc.js"}, {"name": "chain", "file": "tools/chain.py"}],
    }
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root


def bench_tools_round_trip(sizes: Sizes) -> Figures:
    """Alternating, `sizes.trip_reps` repetitions of ~sizes.trips calls each: the median µs of a
    ctx.tools.calculate call from JS, of a kv.get from JS, and of a 50-call chain's wall clock."""
    reps = max(1, sizes.trips // PER_CALL)
    tools_us: list[float] = []
    kv_us: list[float] = []
    chain_ms: list[float] = []
    with tempfile.TemporaryDirectory() as d, bd._workbench_home(Path(d)):
        tmp = Path(d)
        agent = _agent_gem(tmp / "agent")
        notochord = write_gem(tmp / "gem", {"kv.js": bd.KV})
        with (
            bd._open(agent, tmp / "s1") as a,
            bd._open(notochord, tmp / "s2") as k,
            no_gc(),
        ):
            a.call("calc", {"n": 5}), k.call("kv", {"n": 5})  # warm-up
            for _ in range(sizes.trip_reps):
                tools_us.append(
                    statistics.median(a.call("calc", {"n": PER_CALL}).value["us"] for _ in range(reps))
                )
                kv_us.append(k.call("kv", {"n": PER_CALL * reps}).value["us"])
                t = time.perf_counter()
                assert a.call("chain").value == 50
                chain_ms.append((time.perf_counter() - t) * 1000)
                a.results.clear()
                k.results.clear()
    med = statistics.median
    return {
        "tools_us": med(tools_us),
        "kv_us": med(kv_us),
        "ratio": med(tools_us) / med(kv_us),
        "chain_ms": med(chain_ms),
    }
