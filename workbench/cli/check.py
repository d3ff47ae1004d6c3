"""`gem-workbench check GEM`: lint a gem as workbench.open checks it, then load every tool."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._out import open_flags, usage
from ._table import OpenFlags, register


def add(sub: Any, flags: OpenFlags) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "check",
        help="lint a gem: manifest, schemas, tool files (exit 1 on error); the open() flags of `call` are checked against the gem's platform",
    )
    p.add_argument("gem")
    p.add_argument(
        "--typecheck", action="store_true", help="also type-check TypeScript tools with `deno check`"
    )
    flags(p)
    p.set_defaults(table=flags.on)
    return p


def run(args: argparse.Namespace) -> int:
    from .._check import check
    from .._errors import GemLoadError, UsageError

    try:  # the flags as `call` takes them: refused when the gem's platform lacks them
        if args.table:  # the flags were parsed (with none given, there is nothing to refuse)
            from ..bench.options import resolve

            profile, options, _ = open_flags(args)
            resolve(profile, options)
    except UsageError as exc:
        return usage("check", exc.message)
    except GemLoadError:
        pass  # check reports it, with the rest
    # the gem's format as workbench.open checks it, then every tool loaded without a call
    problems = check(args.gem, typecheck=args.typecheck)
    for p in problems:
        where = p["file"] + (
            f"#{p['pointer']}" if p.get("pointer") else f":{p['line']}" if p.get("line") else ""
        )
        print(f"{where}: {p['message']}", file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem{'s' if len(problems) > 1 else ''}", file=sys.stderr)
        return 1
    print(f"{args.gem}: ok" + (", TypeScript tools type-check" if args.typecheck else ""))
    return 0


register("check", add, run, flags="asked")
