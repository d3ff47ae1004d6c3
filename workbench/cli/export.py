"""`gem-workbench export GEM`: open it (the flags' options), make the --call calls, write the
bench as a repro bundle and print its path."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ._out import fail, input_text, open_flags, say, usage
from ._table import OpenFlags, register


def add(sub: Any, flags: OpenFlags) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "export",
        help="open a gem (mock providers unless the flags say otherwise), make the --call calls and "
        "write the bench as a repro bundle: one .gemrepro file with its state, calls and the gem's "
        "files, secrets masked; prints its path",
    )
    p.add_argument("gem")
    p.add_argument("--out", metavar="FILE", help="the bundle (default: <gem folder name>.gemrepro here)")
    p.add_argument(
        "--call",
        action="append",
        dest="calls",
        metavar="TOOL[=JSON|=@FILE]",
        help="call TOOL with this input before exporting (repeatable, in order; default input {})",
    )
    flags(p)
    return p


def calls_of(given: list[str]) -> list[tuple[str, Any]]:
    """`--call TOOL[=JSON|=@FILE|=-]` values as (tool, input); UsageError saying which is bad."""
    from .._errors import UsageError

    out = []
    for text in given:
        tool, eq, arg = text.partition("=")
        if not tool:
            raise UsageError(f"--call {text!r}: give TOOL or TOOL=JSON")
        source, body = input_text(arg) if eq else ("--call", "{}")
        try:
            out.append((tool, json.loads(body)))
        except (ValueError, RecursionError) as exc:
            raise UsageError(
                f"--call {tool}: {source if source != '--input' else 'its input'} is not JSON: {exc}"
            ) from None
    return out


def run(args: argparse.Namespace) -> int:
    from .. import open as open_bench
    from .._check import gem_folder
    from .._errors import UsageError, WorkbenchError
    from ..bench.options import apply_actions
    from ..bundles.export import SUFFIX

    try:
        calls = calls_of(args.calls or [])
        profile, options, actions = open_flags(args)
    except UsageError as exc:
        return usage("export", exc.message)
    except WorkbenchError as exc:
        return fail(exc.to_dict())
    root, _ = gem_folder(args.gem)
    out = Path(args.out) if args.out else Path.cwd() / f"{root.name if root else 'gem'}{SUFFIX}"
    try:
        with open_bench(args.gem, **options) as bench:
            try:
                apply_actions(bench, actions)
            except UsageError as exc:
                return usage("export", exc.message)
            for n, (tool, data) in enumerate(calls):
                res = bench.call(tool, data)
                said = "ok" if res.error is None else f"error {res.error.code}: {res.error.message}"
                say(f"call {n} {tool}: {said}", file=sys.stderr)
            path = bench.export(out)
    except UsageError as exc:
        return usage("export", exc.message)
    except WorkbenchError as exc:
        return fail(exc.to_dict())
    say(str(path))
    return 0


register("export", add, run, flags="always")
