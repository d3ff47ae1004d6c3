"""Ekanos integrations (issue 12): a trivial tool call through the workbench (warm: the module
already imported, one storage.account.get through the ctx bridge) against the same tool run
with `createMockContext` directly under `deno test`, in the same run: what the workbench's
process boundary and checks cost per call."""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import bench_deno as bd
from benchlib import Figures, Sizes, no_gc

import workbench
from workbench._deno import DENO_FLAGS, deno_bin, minimal_env

SDK = Path(workbench.__file__).parent / "platforms" / "ekanos" / "sdk"
INTEGRATION = """\
import { defineIntegration } from '@ekanos/sdk';
export default defineIntegration({
  slug: 'bench', egress: [],
  tools: [{ name: 'ping', description: 'A trivial tool.', outputExample: { n: 1 },
            async run(ctx, args) { const r = await ctx.storage.account.get('k'); return { n: r ? r.data : 0 }; } }],
});
"""
DIRECT = """\
import integration from '../integration.ts';
import { createMockContext } from '@ekanos/sdk/testing';
Deno.test('direct', async () => {
  const ctx = createMockContext({ integration: { slug: 'bench' }, storage: { account: { k: 1 } } });
  const tool = integration.tools[0];
  for (let i = 0; i < 50; i++) await tool.run(ctx, {});
  const times = [];
  for (let i = 0; i < N; i++) {
    const t0 = performance.now();
    await tool.run(ctx, {});
    times.push((performance.now() - t0) * 1000);
  }
  times.sort((a, b) => a - b);
  console.log('BENCH ' + JSON.stringify({ us: times[times.length >> 1] }));
});
"""


def bench_ekanos_call(sizes: Sizes) -> Figures:
    """Medians: µs of a warm workbench call of the trivial tool, and µs of the same tool's run
    with createMockContext under `deno test`; plus their ratio."""
    n = sizes.warm_calls
    with tempfile.TemporaryDirectory() as d, bd._workbench_home(Path(d)):
        root = Path(d) / "bench"
        (root / "tests").mkdir(parents=True)
        (root / "integration.ts").write_text(INTEGRATION)
        (root / "tests" / "direct.test.ts").write_text(DIRECT.replace("N;", f"{n};"))
        with workbench.open(root, state_dir=Path(d) / "s", account_storage={"k": 1}) as bench:
            bench.call("ping")  # the sandbox started, the module imported
            wall: list[float] = []
            with no_gc():
                for _ in range(n):
                    t = time.perf_counter()
                    bench.call("ping")
                    wall.append((time.perf_counter() - t) * 1e6)
                    bench.results.clear()
            assert bench.call("ping").value == {"n": 1}
        out = subprocess.run(
            [deno_bin(), "test", *[f for f in DENO_FLAGS if f != "--no-prompt"], "--no-check",
             f"--import-map={SDK / 'import_map.json'}", f"--allow-read={root},{SDK}", str(root / "tests")],
            capture_output=True, text=True, env=minimal_env(Path(d) / "deno"), timeout=300, check=True,
        )  # fmt: skip
        line = next(x for x in out.stdout.splitlines() if x.startswith("BENCH "))
        direct = json.loads(line[6:])["us"]
    med = statistics.median(wall)
    return {"workbench_us": med, "direct_us": direct, "ratio": med / direct}
