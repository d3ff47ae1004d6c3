"""`gem-workbench replay BUNDLE`: each call of a repro bundle run again, one JSON line each on
stdout; exit 1 when any result differs from the recorded one."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._out import fail, say, usage
from ._table import OpenFlags, register


def add(sub: Any, flags: OpenFlags) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "replay",
        help="run a bundle's calls again on mock providers and print each result as a JSON line "
        "with whether it matches the recorded one (exit 1 if any differs)",
    )
    p.add_argument("bundle")
    p.add_argument("--call", type=int, metavar="N", help="only call N of the bundle (0 is the first)")
    p.add_argument(
        "--trust",
        action="store_true",
        help="run the bundle's Python tools and tests/doctor.py in this process (refused without it)",
    )
    return p


def run(args: argparse.Namespace) -> int:
    from .._errors import UsageError, WorkbenchError
    from ..bundles.replay import replay_bundle

    try:
        reruns = replay_bundle(args.bundle, call=args.call, trust=args.trust)
    except UsageError as exc:
        return usage("replay", exc.message)
    except WorkbenchError as exc:
        return fail(exc.to_dict())
    if not reruns:
        say(f"{args.bundle}: the bundle has no calls", file=sys.stderr)
    for r in reruns:
        say(json.dumps(r.to_json(), ensure_ascii=False))
        how = {
            "case": "its pinned case",
            "doctor": "its doctor's case",
            "sequence": "the bundle's start, served its answers",
        }.get(r.how, "the gem's fixtures")
        say(f"call {r.n} {r.tool} (from {how}): {'matches' if r.ok else 'differs'}", file=sys.stderr)
        if r.note:
            say(f"  {r.note}", file=sys.stderr)
        for line in r.lines:
            say(f"  {line}", file=sys.stderr)
    return 0 if all(r.ok for r in reruns) else 1


register("replay", add, run)
