"""SEC7: bench.call never raises for what a tool does. What a hostile tool reached before (a
TEMP-table drop failing at the call's end, in test_sec_storage.py; error details that break the
bench when it measures them, here) is fixed where it arose; whatever else escapes the
workbench's own code is a coded E_INTERNAL result carrying its traceback, said to be a
workbench bug, while a KeyboardInterrupt still stops the call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conftest import GemBuilder

import workbench
from workbench.providers import SqlDatabase

HOSTILE_DETAILS = """
from workbench import WorkbenchError

class Trap(dict):
    def items(self): raise ZeroDivisionError("items")
    def keys(self): raise ZeroDivisionError("keys")
    def __iter__(self): raise ZeroDivisionError("iter")

class Opaque:
    def __repr__(self): raise ZeroDivisionError("repr")
    __str__ = __repr__

def handle(input, ctx):
    loop = []
    loop.append(loop)
    raise WorkbenchError("E_NOT_FOUND", "no such note", trap=Trap(a=1), opaque=Opaque(),
                         loop=loop, note_id="n1", where={"page": [1, 2]})
"""


def test_SEC7_a_python_tools_error_details_that_are_not_JSON_do_not_escape_bench_call(
    gem: GemBuilder, opened: Callable[..., workbench.Bench]
) -> None:
    """A tool's own WorkbenchError whose details hold a dict subclass whose items() raises, an
    object whose repr raises and a cycle: ZeroDivisionError came out of bench.call (the bench
    measures details to keep the result) before; now the code and the JSON details are kept,
    the others are noted as not kept, and the result shows and measures without raising."""
    gem.tool("t", HOSTILE_DETAILS)
    bench = opened(gem)
    res = bench.call("t")
    assert res.error is not None and res.error.code == "E_NOT_FOUND", res.error
    details = res.error.details
    assert details["note_id"] == "n1" and details["where"] == {"page": [1, 2]}
    assert {details[k] for k in ("trap", "opaque", "loop")} == {"(not kept: not JSON data of up to 64 KiB)"}
    assert "E_NOT_FOUND" in repr(res) and res.error.to_dict()["note_id"] == "n1"
    assert len(bench.results) == 1


SQL_PY = """
KEPT = []

def handle(input, ctx):
    KEPT.append(ctx)
    ctx.storage.sql.execute("CREATE TEMP TABLE IF NOT EXISTS scratch(x)")
    ctx.storage.kv.set("k", str(input.get("v", 1)))
    return "done"
"""
SQL_JS = """
export default async (input, ctx) => {
  await ctx.storage.sql.execute("CREATE TEMP TABLE IF NOT EXISTS scratch(x)");
  await ctx.storage.kv.set("k", String(input.v ?? 1));
  return "done";
};
"""


@pytest.mark.parametrize("lang", ["py", pytest.param("js", marks=pytest.mark.deno)])
def test_SEC7_an_exception_inside_the_workbench_is_E_INTERNAL_with_its_traceback(
    gem: GemBuilder,
    opened: Callable[..., workbench.Bench],
    monkeypatch: pytest.MonkeyPatch,
    lang: str,
) -> None:
    """The call's end fails inside the workbench (as the TEMP-table drop did): bench.call
    returns E_INTERNAL saying it is a workbench bug to report, with the traceback naming where
    (it raised the exception before); the call's kv write is committed and its ctx is ended.
    A KeyboardInterrupt from the same place still propagates, and the next call works."""
    gem.tool("t", SQL_JS if lang == "js" else SQL_PY, ext=lang)
    bench = opened(gem)
    real_drop = SqlDatabase.drop_temp
    fail: list[BaseException] = [ZeroDivisionError("a bug in the drop")]

    def broken(db: Any) -> None:
        raise fail[0]

    monkeypatch.setattr(SqlDatabase, "drop_temp", broken)
    res = bench.call("t", {"v": 2})
    assert res.error is not None and res.error.code == "E_INTERNAL", res.error
    assert "bug in the workbench" in res.error.message and "ZeroDivisionError" in res.error.message
    assert res.error.details["exception"] == "ZeroDivisionError"
    assert "in broken" in res.error.details["traceback"] and "drop_temp" in res.error.details["traceback"]
    assert bench.results[-1] is res and res.value is None
    assert not bench.providers.data_db.in_transaction
    assert bench.kv()["value"].tolist() == ["2"]  # the call's writes commit, as on any failure
    if lang == "py":  # the ctx the tool kept is ended, though the end failed
        ((_, module),) = bench.core.runners["python"].modules.values()  # type: ignore[attr-defined]
        with pytest.raises(workbench.WorkbenchError) as ended:
            module.KEPT[-1].storage.kv.set("k", "late")
        assert ended.value.code == "E_STATE"
    fail[0] = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        bench.call("t", {"v": 3})
    monkeypatch.setattr(SqlDatabase, "drop_temp", real_drop)
    ok = bench.call("t", {"v": 4})
    assert ok.ok and ok.value == "done", ok.error
    assert bench.sql("SELECT count(*) AS n FROM temp.sqlite_master")["n"].tolist() == [0]
