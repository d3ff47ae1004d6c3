"""Replaying a recorded conversation (issue 45): a 100-call conversation of a trivial JS tool,
read, run in order on a warm bench and compared call by call, next to the same 100 calls made
directly; and the transcript's reading alone."""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import QUICK, Figures, Sizes, write_gem

import workbench
from workbench.conversations.read import read_conversation

ECHO_JS = """\
export default function (input) {
  return { n: input.n, title: input.title };
}
"""
CALLS = 100


def conversation(n: int) -> list[dict[str, object]]:
    """An Anthropic Messages conversation of `n` calls of tool `echo`, each answered."""
    out: list[dict[str, object]] = [{"role": "user", "content": "echo a hundred times"}]
    for i in range(n):
        args = {"n": i, "title": f"note {i}"}
        out.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"t{i}", "name": "echo", "input": args}],
            }
        )
        result = {"type": "tool_result", "tool_use_id": f"t{i}", "content": json.dumps(args)}
        out.append({"role": "user", "content": [result]})
    return out


def bench_conversation_replay(sizes: Sizes = QUICK) -> Figures:
    """The whole replay of a 100-call conversation on a warm bench (median of a few rounds, a
    fresh bench each), the 100 calls made directly on the same bench, and the reading alone."""
    conv = conversation(CALLS)
    text = json.dumps(conv)
    rounds = 1 if sizes.smoke else 3 if sizes is QUICK else 7
    replay_s, direct_s, read_ms = [], [], []
    with tempfile.TemporaryDirectory() as d:
        gem = write_gem(Path(d) / "gem", {"echo.js": ECHO_JS})
        for r in range(rounds):
            with workbench.open(gem, headless=True, state_dir=Path(d) / f"s{r}") as bench:
                bench.call("echo", {"n": -1, "title": "warm"})
                t0 = time.perf_counter()
                out = bench.replay_conversation(text)
                replay_s.append(time.perf_counter() - t0)
                if not out.ok or len(out.calls) != CALLS:
                    raise RuntimeError(out.report())
                t0 = time.perf_counter()
                for i in range(CALLS):
                    bench.call("echo", {"n": i, "title": f"note {i}"})
                direct_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            read_conversation(text)
            read_ms.append((time.perf_counter() - t0) * 1000)
        path = Path(d) / "conversation.json"
        path.write_text(text)
        cli_s = statistics.median(
            _command(gem, path) for _ in range(1 if sizes.smoke else 2 if sizes is QUICK else 3)
        )
    replay, direct = statistics.median(replay_s), statistics.median(direct_s)
    return {
        "calls": CALLS,
        "replay_s": replay,
        "direct_s": direct,
        "per_call_ms": replay / CALLS * 1000,
        "added_ms_per_call": (replay - direct) / CALLS * 1000,
        "read_ms": statistics.median(read_ms),
        "cli_s": cli_s,
    }


def _command(gem: Path, path: Path) -> float:
    """Seconds of `gem-workbench conversation GEM FILE` (a new process: start, open, replay)."""
    exe = shutil.which("gem-workbench", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-m", "workbench.cli"]
    t0 = time.perf_counter()
    out = subprocess.run(
        [*cmd, "conversation", str(gem), str(path), "--headless"], capture_output=True, text=True
    )
    took = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(out.stdout[-2000:] + out.stderr[-2000:])
    return took
