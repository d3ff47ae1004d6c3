"""Same-run before/after: `python tests/bench/compare.py OLD_TREE NEW_TREE [NAME ...]`.

Runs each benchmark of tests/bench/run.py on two checkouts of the workbench (each with its own
`workbench` and `tests/bench`, in a fresh process), alternating old, new, old, new… for
`--rounds` rounds, and prints per figure the medians and the new/old ratio as a Markdown table
(for docs/benchmarks.md). Alternating in one run puts both trees under the same load, so a
ratio near 1 is "no change" whatever the machine is doing; the spread of the rounds is the
noise to compare it with. Figures are reported, never enforced.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

# the headline figures of each benchmark (the others are printed with --all)
HEADLINE = {
    "call_overhead": ("added_us", "call_us"),
    "insert_mock": ("tool_ms",),
    "insert_real": ("tool_ms",),
    "find": ("tool_ms", "trace_ms"),
    "dataframe": ("data_ms",),
    "import": ("import_ms",),
    "startup": ("check_ms", "open_ms"),
    "deno_cold_start": ("call_ms",),
    "deno_warm_call": ("js_ms",),
    "deno_ctx_round_trip": ("js_us",),
    "fetch_vs_files": ("fetch_us", "files_us"),
    "resource_path": ("path_ms",),
    "deno_agent_tools": ("tools_us", "chain_ms"),
    "deno_ekanos_call": ("workbench_us",),
    "mcp_stdio_call": ("mcp_ms", "call_ms", "ratio"),
    "mcp_http_call": ("mcp_ms", "call_ms", "ratio"),
    "mcp_stdio_raw": ("mcp_ms", "call_ms", "ratio", "floor_ms"),
    "mcp_http_raw": ("mcp_ms", "call_ms", "ratio", "floor_ms"),
}
DEFAULT = [
    "call_overhead",
    "insert_mock",
    "find",
    "dataframe",
    "import",
    "startup",
    "deno_cold_start",
    "deno_warm_call",
    "deno_ctx_round_trip",
    "email_list_since",
    "fetch_vs_files",
    "deno_agent_tools",
    "deno_ekanos_call",
]
_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
import run
from benchlib import FULL, QUICK
figures = run.BENCHMARKS[sys.argv[2]][0](QUICK if sys.argv[3] == "quick" else FULL)
print("\\n@@FIGURES@@" + json.dumps({k: v for k, v in figures.items() if isinstance(v, (int, float))}))
"""


def _run(tree: Path, name: str, size: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tree / "tests" / "bench"), name, size],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if out.returncode != 0 or "@@FIGURES@@" not in out.stdout:
        raise RuntimeError(f"{name} on {tree}: exit {out.returncode}: {out.stderr[-2000:]}")
    figures: dict[str, float] = json.loads(out.stdout.rsplit("@@FIGURES@@", 1)[1])
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="the checkout before the change")
    parser.add_argument("new", type=Path, help="the checkout after it")
    parser.add_argument("names", nargs="*", help=f"benchmarks (default: {', '.join(DEFAULT)})")
    parser.add_argument("--rounds", type=int, default=3, help="alternations (default 3)")
    parser.add_argument("--full", action="store_true", help="full sizes (default: --quick sizes)")
    parser.add_argument("--all", action="store_true", help="every figure, not only the headline ones")
    args = parser.parse_args(argv)
    size = "full" if args.full else "quick"
    print(
        "| benchmark | figure | before (median) | after (median) | after / before | rounds, after / before |"
    )
    print("|---|---|---|---|---|---|")
    for name in args.names or DEFAULT:
        got: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
        try:
            for _ in range(args.rounds):
                got["old"].append(_run(args.old.resolve(), name, size))
                got["new"].append(_run(args.new.resolve(), name, size))
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            print(f"| `{name}` | could not run: {str(exc).splitlines()[0][:200]} | | | | |", flush=True)
            continue
        keys = [k for k in got["old"][0] if k in got["new"][0]]
        shown = keys if args.all else [k for k in HEADLINE.get(name, keys[:1]) if k in keys] or keys[:1]
        for key in shown:
            old = [r[key] for r in got["old"]]
            new = [r[key] for r in got["new"]]
            mo, mn = statistics.median(old), statistics.median(new)
            each = ", ".join(f"{n / o:.2f}" if o else "—" for o, n in zip(old, new))
            ratio = f"{mn / mo:.2f}×" if mo else "—"
            print(f"| `{name}` | {key} | {mo:.4g} | {mn:.4g} | {ratio} | {each} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
