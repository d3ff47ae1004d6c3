"""A bench is safe to share between threads; two benches of one gem share nothing (issue 10)."""

from __future__ import annotations

import gc
import threading
import warnings
from pathlib import Path

import pytest
from conftest import GemBuilder

import workbench

COUNTER_PY = """
count = 0

def handle(input, ctx):
    global count
    count += 1
    return count
"""

INCR_PY = """
def handle(input, ctx):
    n = int(ctx.storage.kv.get("n") or "0")
    ctx.storage.kv.set("n", str(n + 1))
    return n + 1
"""

INCR_JS = """
export default async function (input, ctx) {
  const n = Number((await ctx.storage.kv.get("n")) ?? "0");
  await ctx.storage.kv.set("n", String(n + 1));
  return n + 1;
}
"""


def test_two_benches_of_one_gem_do_not_share_python_module_state(gem: GemBuilder, tmp_path: Path) -> None:
    root = gem.tool("counter", COUNTER_PY).write()
    a = workbench.open(root, state_dir=tmp_path / "a")
    b = workbench.open(root, state_dir=tmp_path / "b")
    never = workbench.open(root, state_dir=tmp_path / "c", reuse="never")
    try:
        assert [a.call("counter").value for _ in range(2)] == [1, 2]
        assert b.call("counter").value == 1  # was 3: the benches shared one module
        assert never.call("counter").value == 1
        assert a.call("counter").value == 3  # the reuse="never" bench did not reset a's module
    finally:
        for bench in (a, b, never):
            bench.close()


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_a_bench_is_safe_to_share_between_threads(gem: GemBuilder, tmp_path: Path, lang: str) -> None:
    gem.tool("incr", INCR_PY if lang == "py" else INCR_JS, ext=lang)
    threads, per_thread = 4, 10
    with workbench.open(gem.write(), state_dir=tmp_path / "state") as bench:
        errors: list[BaseException] = []
        results: list[workbench.CallResult] = []

        def work() -> None:
            try:
                for _ in range(per_thread):
                    results.append(bench.call("incr"))
            except BaseException as exc:  # bench.call must never raise: collect it
                errors.append(exc)

        pool = [threading.Thread(target=work) for _ in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join(120)
        assert errors == []
        assert [r.error for r in results if not r.ok] == []
        assert sorted(r.value for r in results) == list(range(1, threads * per_thread + 1))
        assert bench.kv()["value"].tolist() == [str(threads * per_thread)]


def test_open_checks_its_options_before_it_opens_anything(gem: GemBuilder, tmp_path: Path) -> None:
    root = gem.tool("counter", COUNTER_PY).write()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)  # an unclosed SQLite connection
        for bad in ({"reuse": "sometimes"}, {"keep_runs": -1}, {"http_timeout": 0}):
            with pytest.raises(workbench.UsageError):
                workbench.open(root, providers="real", state_dir=tmp_path / "s", **bad)
            gc.collect()
    assert not (tmp_path / "s").exists()  # nothing was created either
