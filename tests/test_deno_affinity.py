"""A JS call's conversation on one CPU (runners/deno/affinity.py): pinned while it is quick,
set free when the sandbox computes, the caller's own mask always given back."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _deno import deno_home, gone, interrupted  # noqa: F401  (fixture)
from conftest import GemBuilder

from workbench.runners.deno import affinity
from workbench.runners.deno import sandbox as sandbox_mod
from workbench.runners.deno.process import Output

pytestmark = [
    pytest.mark.deno,
    pytest.mark.skipif(
        not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
        reason="CPU affinity needs Linux and two CPUs to choose from",
    ),
]

FREE = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()  # at collection
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
    """What the calling thread saw: its CPUs at each wait for the sandbox, and at each ctx
    call it served from JS, with the sandbox's threads' CPUs then."""

    def __init__(self) -> None:
        self.pid = 0
        self.waits: list[set[int]] = []
        self.calls: list[dict[str, Any]] = []
        self.kill = False  # kill the sandbox at the next ctx call

    def clear(self) -> None:
        self.waits.clear()
        self.calls.clear()


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Seen:
    serve, wait, out = sandbox_mod._serve, Output.wait, Seen()

    def serving(*args: Any) -> Any:
        if out.kill:
            out.kill = False
            os.kill(out.pid, signal.SIGKILL)
            out.pid = 0  # (nothing to look at until a test names the next one)
        elif out.pid:
            out.calls.append({"caller": os.sched_getaffinity(0), "sandbox": _masks(out.pid)})
        return serve(*args)

    def waiting(self: Output, *args: Any) -> bool:
        if out.pid:
            out.waits.append(os.sched_getaffinity(0))
        return wait(self, *args)

    monkeypatch.setattr(sandbox_mod, "_serve", serving)
    monkeypatch.setattr(Output, "wait", waiting)
    return out


def _bench(gem: GemBuilder, opened: Callable, seen: Seen) -> tuple[Any, set[int]]:
    """A bench whose sandbox ran one call, and the caller's CPUs before it opened."""
    before = os.sched_getaffinity(0)
    assert before == FREE  # no pin left over from an earlier test
    gem.tool("kv", KV, ext="js").tool("spin", SPIN_THEN_KV, ext="js")
    bench = opened(gem)
    assert bench.call("kv").value == 1  # started, and pinned once
    seen.pid = bench.sandbox.pid or 0
    return bench, before


def test_a_quick_call_waits_on_one_cpu_with_the_sandbox(
    gem: GemBuilder, opened: Callable, seen: Seen
) -> None:
    bench, before = _bench(gem, opened, seen)
    assert bench.call("kv").value == 1
    assert os.sched_getaffinity(0) == before  # the caller's own mask, back
    assert seen.waits and all(len(cpus) == 1 for cpus in seen.waits), seen.waits
    (ctx_call,) = seen.calls
    # serving the ctx call, the caller is free: nothing it starts then inherits a pin
    assert ctx_call["caller"] == before
    sandbox = ctx_call["sandbox"]
    assert sandbox["deno"] == sandbox["worker-1"] == seen.waits[0], sandbox
    v8 = [cpus for name, cpus in sandbox.items() if name.startswith("V8 ")]
    assert v8 and all(cpus == before for cpus in v8), sandbox  # GC and compiling stay free


def test_a_call_that_computes_sets_every_thread_free(gem: GemBuilder, opened: Callable, seen: Seen) -> None:
    bench, before = _bench(gem, opened, seen)
    seen.clear()
    assert bench.call("spin").value == 1  # 200 ms without a word: past RELEASE_AFTER
    (ctx_call,) = seen.calls
    assert all(cpus == before for cpus in ctx_call["sandbox"].values()), ctx_call["sandbox"]
    assert len(seen.waits[0]) == 1 and seen.waits[-1] == before, seen.waits  # free after
    assert os.sched_getaffinity(0) == before
    seen.clear()
    assert bench.call("kv").value == 1  # and the next quick call pins again
    assert all(len(cpus) == 1 for cpus in seen.waits), seen.waits


def test_a_caller_pinned_by_its_user_is_left_as_it_is(gem: GemBuilder, opened: Callable, seen: Seen) -> None:
    bench, before = _bench(gem, opened, seen)  # its sandbox pinned where the caller was
    mine = {min(before)}
    os.sched_setaffinity(0, mine)
    try:
        seen.clear()
        assert bench.call("kv").value == 1
        assert os.sched_getaffinity(0) == mine and set(map(frozenset, seen.waits)) == {frozenset(mine)}
        (ctx_call,) = seen.calls
        assert all(cpus == before for cpus in ctx_call["sandbox"].values()), ctx_call["sandbox"]
    finally:
        os.sched_setaffinity(0, before)


def test_a_sandbox_started_by_a_call_is_not_pinned(gem: GemBuilder, opened: Callable, seen: Seen) -> None:
    bench, before = _bench(gem, opened, seen)
    seen.kill = True
    res = bench.call("kv")  # the process dies in it; the next one starts now, in the background
    assert res.error is not None and res.error.code == "E_SANDBOX", res
    assert bench.call("kv").value == 1  # (whether the background start or this call made it)
    new = bench.sandbox.pid
    assert new not in (None, seen.pid)
    # V8's platform threads, never pinned, have the mask the process was started with
    v8 = [cpus for name, cpus in _masks(new).items() if name.startswith("V8 ")]
    assert v8 and all(cpus == before for cpus in v8), _masks(new)
    seen.pid = new
    seen.clear()
    assert bench.call("kv").value == 1  # and it joins the caller's CPU at its calls
    assert seen.calls[0]["sandbox"]["deno"] == seen.waits[0] and len(seen.waits[0]) == 1


def test_a_sandbox_gone_before_it_is_pinned_is_no_error(gem: GemBuilder, opened: Callable) -> None:
    gem.tool("kv", KV, ext="js")
    bench = opened(gem)
    assert bench.call("kv").value == 1
    proc = bench.sandbox.proc
    proc.kill()
    proc.wait()
    colocation = affinity.Colocation()
    colocation.join(proc)  # its pid may be another process's by now: never touched
    colocation.leave()
    assert os.sched_getaffinity(0) == FREE and colocation.cpu == -1 and not colocation.failed


HOG = """export default async () => {
  const src = "const end = Date.now() + 5000; while (Date.now() < end) {}";
  new Worker(`data:text/javascript,${encodeURIComponent(src)}`, { type: "module" });
  await new Promise((r) => setTimeout(r, 50));  // (it has started)
  return 1;
}"""


def test_a_worker_the_tool_leaves_running_ends_with_its_sandbox(
    gem: GemBuilder, opened: Callable, seen: Seen
) -> None:
    """A nested Worker still computing when its call returned is not left to run beside the
    next calls (pinned or not): Worker.terminate() does not stop it, so the process is
    recycled (issue 25), and the next calls run in a fresh one, pinned as any."""
    gem.tool("hog", HOG, ext="js")
    bench, before = _bench(gem, opened, seen)
    old, seen.pid = seen.pid, 0  # (its threads are gone with it: nothing to look at)
    assert bench.call("hog").value == 1
    seen.clear()
    assert bench.call("kv").value == 1
    assert gone(old) and bench.sandbox.pid not in (None, old)
    seen.pid = bench.sandbox.pid or 0
    assert bench.call("kv").value == 1
    assert seen.waits and all(len(cpus) == 1 for cpus in seen.waits), seen.waits
    assert os.sched_getaffinity(0) == before


# -- Ctrl-C at the worst moments ------------------------------------------------------------------


def _interrupted_call(gem: GemBuilder, opened: Callable, seen: Seen, where: Callable[..., bool]) -> None:
    """A Ctrl-C raised at `where` during a quick call (a profile hook raises it where the
    interpreter would raise a pending SIGINT: at a function's entry, after a C call returns);
    the calling thread must have its own mask afterwards."""
    bench, before = _bench(gem, opened, seen)
    try:
        with interrupted(where):
            bench.call("kv")
    finally:
        after = os.sched_getaffinity(0)
        os.sched_setaffinity(0, before)
    assert after == before  # else pinned for good: every later join sees a one-CPU mask


def test_a_ctrl_c_as_join_pins_the_caller_leaves_no_pin(
    gem: GemBuilder, opened: Callable, seen: Seen
) -> None:
    # a SIGINT that arrives during join's sched_setaffinity(0, {cpu}) is raised as it returns,
    # before _wait's try: leave never runs
    _interrupted_call(
        gem,
        opened,
        seen,
        lambda f, e, a: e == "c_return" and a is os.sched_setaffinity and len(os.sched_getaffinity(0)) == 1,
    )


def test_a_ctrl_c_as_leave_starts_leaves_no_pin(gem: GemBuilder, opened: Callable, seen: Seen) -> None:
    # a SIGINT pending when the wait returned is raised at leave's entry, before its syscall
    _interrupted_call(
        gem, opened, seen, lambda f, e, a: e == "call" and f.f_code is affinity.Colocation.leave.__code__
    )


def test_a_one_cpu_caller_is_not_left_talking_to_a_sandbox_pinned_elsewhere(
    gem: GemBuilder, opened: Callable, seen: Seen
) -> None:
    bench, before = _bench(gem, opened, seen)
    for _ in range(5):
        assert bench.call("kv").value == 1  # a free caller: the sandbox is pinned to its CPU
    pinned = bench.sandbox._colocation.cpu
    assert pinned in before
    mine = {min(before - {pinned})}  # then the user pins this thread to the other CPU
    os.sched_setaffinity(0, mine)
    try:
        seen.clear()
        assert bench.call("kv").value == 1
        sandbox = seen.calls[-1]["sandbox"]
    finally:
        os.sched_setaffinity(0, before)
    # the host and the tool's Worker may run where the caller runs: every hand-off of this
    # caller's calls would cross CPUs otherwise (~0.8 -> ~1.4 ms a warm call, until a 20 ms wait)
    assert mine <= sandbox["deno"] and mine <= sandbox["worker-1"], sandbox
