"""The doctor's throughput (issue 30 point 6): examples per second for a trivial JS and a
trivial Python tool, each example a state reset (snapshot restore), a call and its checks,
beside a warm call of the same tool."""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from benchlib import QUICK, Figures, Sizes, no_gc, time_ns, write_gem

import workbench

ECHO_JS = "export default async function (input, ctx) { return { echo: input.s ?? null } }\n"
ECHO_PY = "def handle(input, ctx):\n    return {'echo': input.get('s')}\n"
SCHEMA = {
    "type": "object",
    "properties": {"s": {"type": "string", "maxLength": 50}},
    "additionalProperties": False,
}


def _gem(root: Path) -> Path:
    gem = write_gem(root, {"echo_js.js": ECHO_JS, "echo_py": ECHO_PY})
    import json

    manifest = json.loads((gem / "manifest.json").read_text())
    for t in manifest["tools"]:
        t["inputSchema"] = SCHEMA
        t["sideEffect"] = "read"
    (gem / "manifest.json").write_text(json.dumps(manifest))
    return gem


def bench_doctor_throughput(sizes: Sizes = QUICK) -> Figures:
    """Examples per second of `bench.doctor(tool=…)` (its search phase: draws, a state reset,
    the call, the checks), and the median warm call of the same tool."""
    out: Figures = {}
    with tempfile.TemporaryDirectory() as d:
        gem = _gem(Path(d) / "gem")
        with workbench.open(gem, headless=True) as bench:
            for lang, tool in (("js", "echo_js"), ("py", "echo_py")):
                bench.call(tool, {"s": "warm"})
                with no_gc():
                    warm = [
                        time_ns(lambda t=tool: bench.call(t, {"s": "x"})) for _ in range(sizes.warm_calls)
                    ]
                t0 = time.perf_counter()
                # (the smoke run counts examples, not seconds: 2 s under load ran none, 0 per s)
                budget = {"examples": 20} if sizes.smoke else {"seconds": 2 if sizes is QUICK else 6}
                report = bench.doctor(tool=tool, **budget, seed=1, write=False)
                wall = time.perf_counter() - t0
                [stats] = report.summary()
                if report.findings:
                    raise RuntimeError(f"the trivial {lang} tool has findings: {report.findings}")
                out[f"{lang}_per_s"] = stats["examples"] / stats["seconds"]
                out[f"{lang}_examples"] = stats["examples"]
                out[f"{lang}_warm_ms"] = statistics.median(warm) / 1e6
                out[f"{lang}_wall_s"] = wall
    return out
