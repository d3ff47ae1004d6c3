"""A JS call's conversation on one CPU (runners/deno/affinity.py): pinned while it is quick,
set free when the sandbox computes, the caller's own mask always given back."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _deno import deno_home  # noqa: F401  (fixture)
from conftest import GemBuilder

from workbench.runners.deno import affinity
from workbench.runners.deno import sandbox as sandbox_mod

pytestmark = [
    pytest.mark.deno,
    pytest.mark.skipif(
        not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
        reason="CPU affinity needs Linux and two CPUs to choose from",
    ),
]

KV = "export default async (i, ctx) => { await ctx.storage.kv.get('k'); return 1 }"
SPIN_THEN_KV = """export default async (i, ctx) => {
  const end = performance.now() + 200;
  while (performance.now() < end) {}
  await ctx.storage.kv.get('k');
  return 1;
}"""


def _masks(pid: int) -> dict[str, set[int]]:
    """{thread name: its CPUs} of the process's threads (the same name: their union)."""
    out: dict[str, set[int]] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            out.setdefault(name, set()).update(os.sched_getaffinity(int(tid)))
        except (FileNotFoundError, ProcessLookupError):
            continue
    return out


class Seen:
    """What each ctx call served from JS saw: the serving thread's CPUs, the sandbox's threads'."""

    def __init__(self) -> None:
        self.pid = 0
        self.calls: list[dict[str, Any]] = []


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Seen:
    serve, out = sandbox_mod._serve, Seen()

    def looking(*args: Any) -> Any:
        if out.pid:
            out.calls.append({"caller": os.sched_getaffinity(0), "sandbox": _masks(out.pid)})
        return serve(*args)

    monkeypatch.setattr(sandbox_mod, "_serve", looking)
    return out


def _bench(gem: GemBuilder, opened: Callable, seen: Seen) -> Any:
    gem.tool("kv", KV, ext="js").tool("spin", SPIN_THEN_KV, ext="js")
    bench = opened(gem)
    assert bench.call("kv").value == 1  # started, and pinned once
    seen.pid = bench.sandbox.pid or 0
    return bench


def test_a_quick_call_runs_on_the_callers_cpu_and_gives_its_mask_back(
    gem: GemBuilder, opened: Callable, seen: Seen
) -> None:
    bench = _bench(gem, opened, seen)
    before = os.sched_getaffinity(0)
    assert bench.call("kv").value == 1
    assert os.sched_getaffinity(0) == before  # the caller's own mask, back
    (ctx_call,) = seen.calls
    (cpu,) = ctx_call["caller"]  # one CPU while it served the ctx call
    sandbox = ctx_call["sandbox"]
    assert sandbox["deno"] == {cpu} and sandbox["worker-1"] == {cpu}, sandbox
    v8 = [cpus for name, cpus in sandbox.items() if name.startswith("V8 ")]
    assert v8 and all(cpus == before for cpus in v8), sandbox  # GC and compiling stay free


def test_a_call_that_computes_sets_every_thread_free(gem: GemBuilder, opened: Callable, seen: Seen) -> None:
    bench = _bench(gem, opened, seen)
    before = os.sched_getaffinity(0)
    assert bench.call("spin").value == 1  # 200 ms without a word: past RELEASE_AFTER
    (ctx_call,) = seen.calls
    assert ctx_call["caller"] == before
    assert all(cpus == before for cpus in ctx_call["sandbox"].values()), ctx_call["sandbox"]
    assert os.sched_getaffinity(0) == before
    assert bench.call("kv").value == 1  # and the next quick call pins again
    assert len(seen.calls[-1]["caller"]) == 1


def test_a_caller_pinned_by_its_user_is_left_as_it_is(gem: GemBuilder, opened: Callable, seen: Seen) -> None:
    bench = _bench(gem, opened, seen)
    bench.sandbox._colocation.release(None)  # the sandbox free, as after a long call
    before = os.sched_getaffinity(0)
    mine = {min(before)}
    os.sched_setaffinity(0, mine)
    try:
        assert bench.call("kv").value == 1
        assert os.sched_getaffinity(0) == mine
        (ctx_call,) = seen.calls
        assert all(cpus == before for cpus in ctx_call["sandbox"].values()), ctx_call["sandbox"]
    finally:
        os.sched_setaffinity(0, before)


def test_a_sandbox_gone_before_it_is_pinned_is_no_error(tmp_path: Path) -> None:
    colocation = affinity.Colocation()
    before = os.sched_getaffinity(0)
    assert colocation.join(2**22 + 12345) is None  # no such process: nothing pinned
    assert os.sched_getaffinity(0) == before and colocation.pid is None
