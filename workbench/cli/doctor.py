"""`gem-workbench doctor GEM`: the doctor from the command line.

    gem-workbench doctor GEM [--tool T] [--seconds 60] [--examples N] [--seed S]
                             [--json | --junit FILE] [--no-write] [open() flags]

Prints a summary per tool and one block per finding (stdout; `--json`: the report as JSON),
writes each finding as a case under GEM/tests/calls/doctor/ unless `--no-write`, and exits 1
when there are findings, 0 when none, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ._table import OpenFlags, register


def add(sub: Any, flags: OpenFlags) -> argparse.ArgumentParser:
    """The `doctor` subcommand, with the open() flags of `call`."""
    p: argparse.ArgumentParser = sub.add_parser(
        "doctor",
        help="search the gem's tools for bugs an author did not think of: inputs from each schema, "
        "memory between calls (N5), crash reruns (N7), read-only writes (D4), results over N9, "
        "leaked secrets; each finding pinned under tests/calls/doctor/ (exit 1 on findings)",
    )
    p.add_argument("gem")
    p.add_argument("--tool", metavar="T", help="only this tool (default: every tool)")
    p.add_argument(
        "--seconds", type=float, default=60.0, metavar="S", help="time to spend, at most (default 60)"
    )
    p.add_argument(
        "--examples", type=int, metavar="N", help="examples per tool (default: as many as the time allows)"
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the report as JSON")
    out.add_argument("--junit", metavar="FILE", help="also write JUnit XML (a testcase per tool and kind)")
    p.add_argument("--no-write", action="store_true", help="do not write the findings as cases")
    flags(p)
    return p


def run(args: argparse.Namespace) -> int:
    from .. import open as open_bench
    from .._errors import UsageError, WorkbenchError
    from ..bench.options import apply_actions, gem_profile, taken

    def fail(code: str, message: str, exit_code: int) -> int:
        print(f"gem-workbench doctor: error {code}: {message}", file=sys.stderr)
        return exit_code

    try:
        profile = gem_profile(args.gem)
        options, actions = taken(args, profile)
        # --seed (the open() flag) is the search's: the same seed finds the same findings
        seed = options.pop("seed", None) or 0
    except UsageError as exc:
        return fail("E_USAGE", exc.message, 2)
    except WorkbenchError as exc:
        return fail(exc.code, exc.message, 1)
    try:
        bench = open_bench(args.gem, **options)
    except WorkbenchError as exc:
        return fail(exc.code, exc.message, 1)
    with bench:
        try:
            apply_actions(bench, actions)
            report = bench.doctor(
                tool=args.tool,
                seconds=args.seconds,
                examples=args.examples,
                seed=seed,
                write=not args.no_write,
            )
        except UsageError as exc:
            return fail("E_USAGE", exc.message, 2)
        except WorkbenchError as exc:
            return fail(exc.code, exc.message, 1)
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False, indent=2, default=str))
    else:
        _print(report)
    if args.junit:
        report.junit(args.junit)
    return 0 if report.ok else 1


def _print(report: Any) -> None:
    n = sum(s["examples"] for s in report.summary())
    print(
        f"doctor {report.gem}: {len(report.findings)} finding(s), {n} examples in {report.seconds:.1f} s (seed {report.seed})"
    )
    if report.note:
        print(f"  ({report.note})")
    print(f"  {report.time_said}")
    for s in report.summary():
        kinds = ", ".join(f"{k} ×{c}" for k, c in s["findings"].items()) or "none"
        print(
            f"  {s['tool']}: {s['examples']} examples ({s['invalid']} invalid), findings: {kinds}, "
            f"{s['seconds']:.2f} s searching, {s['probe_seconds']:.2f} s probes, {s['pin_seconds']:.2f} s pinning"
        )
    for f in report.findings:
        text = json.dumps(f.input, ensure_ascii=False)
        print(f"\n{f.tool}: {f.kind} ({f.rule}) — {f.message}")
        print(f"  input: {text if len(text) <= 200 else text[:199] + '…'} (start: {f.start})")
        print(f"  reproduce: {f.repro}")
        if f.case is not None:
            print(f"  pinned: {f.case}")


register("doctor", add, run, flags="always")
