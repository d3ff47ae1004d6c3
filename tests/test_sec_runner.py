"""The Python runner's bounds (SEC5): a tool runs in the workbench's own process, where nothing
stops it at its timeout; what it returns or raises after the timeout is not its result.
(The JS side, whose sandbox is killed at the timeout: test_deno_process.py.)"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from conftest import GemBuilder

LATE = {
    "sync": "import time\ndef handle(i, ctx):\n    time.sleep(i['s'])\n    return 'late'\n",
    "raises": "import time\ndef handle(i, ctx):\n    time.sleep(i['s'])\n    raise ValueError('after its time')\n",
    "async": "import asyncio\nasync def handle(i, ctx):\n    await asyncio.sleep(i['s'])\n    return 'late'\n",
    "coroutine": "import asyncio\ndef handle(i, ctx):\n    return asyncio.sleep(i['s'], result='late')\n",
}


@pytest.mark.parametrize("kind", list(LATE))
def test_SEC5_a_python_tool_past_its_timeout_is_E_TIMEOUT(
    gem: GemBuilder, opened: Callable, kind: str
) -> None:
    """It returned 'late' (ok) after its timeout: now E_TIMEOUT naming the limit, as in JS. An
    async tool is cancelled at the deadline: 30 s of sleep ends within a few seconds."""
    gem.tool("late", LATE[kind])
    bench = opened(gem, timeout=0.5)
    seconds = 30 if kind in ("async", "coroutine") else 0.8
    t0 = time.monotonic()
    res = bench.call("late", {"s": seconds})
    err = res.error
    assert err is not None and err.code == "E_TIMEOUT", res
    assert err.details["limit"] == 0.5 and "timeout of 0.5 s" in err.message, err
    assert time.monotonic() - t0 < 20  # (cancelled, not slept out: a bound, not a measure)


def test_SEC5_a_python_tool_in_time_is_untouched(gem: GemBuilder, opened: Callable) -> None:
    """Its own TimeoutError (caught or raised) within its time stays its own."""
    gem.tool(
        "own",
        "import asyncio\nasync def handle(i, ctx):\n"
        "    try:\n        await asyncio.wait_for(asyncio.sleep(5), 0.01)\n"
        "    except TimeoutError:\n        pass\n"
        "    if i.get('raise'):\n        raise TimeoutError('mine')\n    return 'in time'\n",
    )
    bench = opened(gem, timeout=10)
    assert bench.call("own").value == "in time"
    err = bench.call("own", {"raise": True}).error
    assert err is not None and err.code == "E_TOOL_ERROR" and "mine" in err.message, err
