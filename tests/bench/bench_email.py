"""The issue-5 listSince benchmark: a page from a 1,000,000-message mock mailbox.

A Python tool calls `ctx.email.listSince({since, limit})` at random points of the mailbox and
times each call inside the tool (so the figure is the ctx layer — options, grant, the
provider's per-account pages, the merge, the envelopes as JSON — without the tool call's own
overhead); the trace's duration_us of the same calls is reported too. The baseline, in the
same run and on the same points: a raw `bisect` on one sorted Python list of dates and a slice
of prebuilt rows, turned into the same envelope dicts. Nothing here asserts a time: `run.py`
compares the figures with the target (<= 1 ms median) and prints OK / MISS.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
from bisect import bisect_right
from pathlib import Path
from typing import Any

from benchlib import QUICK, Figures, Sizes, no_gc, time_ns

import workbench
from workbench.providers.mail import Envelope, Message
from workbench.providers.mailmock import MockMailbox

LIMITS = (20, 200)
ACCOUNTS = ("work", "home")
T0 = 1_700_000_000_000
SUBJECTS = tuple(f"Subject {i}: quarterly report" for i in range(16))
TO = ("me@example.com",)

LIST_SINCE = """
import time

def handle(input, ctx):
    out = {}
    for limit in input["limits"]:
        ns = []
        for since in input["since"]:
            t0 = time.perf_counter_ns()
            page = ctx.email.listSince({"since": since, "limit": limit})
            ns.append(time.perf_counter_ns() - t0)
            if len(page["messages"]) != limit:
                raise RuntimeError(f"short page at since={since}: {len(page['messages'])}")
        out[str(limit)] = ns
    return out
"""


def _date(i: int) -> int:
    return T0 + (i // 3) * 1000  # three messages per second: equal dates are common


def _messages(n: int) -> Any:
    for i in range(n):
        env = Envelope(ACCOUNTS[i % 2], f"m{i:07d}", SUBJECTS[i % 16], "sender@example.org", TO, _date(i))
        yield Message(env, "")


def _gem(root: Path) -> Path:
    (root / "tools").mkdir(parents=True, exist_ok=True)
    (root / "tools" / "pages.py").write_text(LIST_SINCE)
    perms = {"email": {"read": True}}
    (root / "manifest.json").write_text(
        json.dumps(
            {
                "id": "bench.email",
                "name": "Bench email",
                "version": "0.1.0",
                "permissions": perms,
                "tools": [
                    {
                        "name": "pages",
                        "file": "tools/pages.py",
                        "inputSchema": {"type": "object"},
                        "sideEffect": "read",
                        "permissions": perms,
                    }
                ],
            }
        )
    )
    return root


def bench_list_since(sizes: Sizes = QUICK) -> Figures:
    """Median ms of one listSince page (limit 20 and 200) on `sizes.mails` messages in two
    accounts, through the ctx layer, vs bisect + slice + dicts on one sorted list."""
    n = sizes.mails
    mailbox = MockMailbox(_messages(n))
    # the baseline's data: every envelope in (date, accountId, id) order, as plain tuples
    rows = sorted((_date(i), ACCOUNTS[i % 2], f"m{i:07d}", SUBJECTS[i % 16]) for i in range(n))
    dates = [r[0] for r in rows]

    def raw(since: int, limit: int) -> list[dict[str, Any]]:
        start = bisect_right(dates, since)
        return [
            {
                "accountId": a,
                "id": i,
                "subject": s,
                "fromAddr": "sender@example.org",
                "toAddrs": list(TO),
                "date": d,
            }
            for d, a, i, s in rows[start : start + limit]
        ]

    rng = random.Random(5)
    last = _date(n - 1) - (max(LIMITS) // 3 + 2) * 1000  # every page is a full one
    points = [rng.randrange(T0 - 1, last) for _ in range(sizes.pages)]
    figures: Figures = {"messages": n}
    with tempfile.TemporaryDirectory() as d:
        bench = workbench.open(_gem(Path(d)), mailbox=mailbox, headless=True)
        try:
            bench.email.allow("all")
            warm = bench.call("pages", {"since": points[:20], "limits": list(LIMITS)})
            if not warm.ok:
                raise RuntimeError(f"benchmark tool failed: {warm.error}")
            with no_gc():
                res = bench.call("pages", {"since": points, "limits": list(LIMITS)})
            if not res.ok:
                raise RuntimeError(f"benchmark tool failed: {res.error}")
            traced = [r["duration_us"] for r in res.trace_rows if r["method"] == "email.listSince"]
        finally:
            bench.close()
        for k, limit in enumerate(LIMITS):
            for p in points[:20]:
                raw(p, limit)
            with no_gc():
                base = statistics.median(time_ns(lambda: raw(p, limit)) for p in points)
            tool = statistics.median(res.value[str(limit)])
            trace = statistics.median(traced[k * len(points) : (k + 1) * len(points)])
            figures |= {
                f"l{limit}_ms": tool / 1e6,
                f"l{limit}_trace_ms": trace / 1e3,
                f"l{limit}_raw_ms": base / 1e6,
                f"l{limit}_ratio": tool / base,
            }
    return figures
