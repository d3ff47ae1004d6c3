"""The `gem-workbench` command: check a gem, call a tool."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Sequence


def _fail(err: dict[str, Any]) -> int:
    print(f"error {err.get('code', 'E_USAGE')}: {err.get('message', '')}", file=sys.stderr)
    print(json.dumps({"ok": False, "error": err}, ensure_ascii=False, default=str), file=sys.stderr)
    return 1


def _check(args: argparse.Namespace) -> int:
    from .gem import lint

    problems = lint(args.gem)
    for p in problems:
        where = f"{p['file']}#{p['pointer']}" if p.get("pointer") else p["file"]
        print(f"{where}: {p['message']}", file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem{'s' if len(problems) > 1 else ''}", file=sys.stderr)
        return 1
    if args.typecheck:
        from .gem import load_manifest
        from .providers import default_state_dir
        from .runners.deno import typecheck

        m = load_manifest(args.gem)
        ts = [t.file for t in m.tools.values() if t.language == "typescript"]
        report = typecheck(ts, deno_dir=default_state_dir(m.id) / "deno") if ts else None
        if report:
            print(report, file=sys.stderr)
            return 1
        print(f"{args.gem}: {len(ts)} TypeScript tool{'' if len(ts) == 1 else 's'} type-check")
    print(f"{args.gem}: ok")
    return 0


def _call(args: argparse.Namespace) -> int:
    from . import open as open_bench
    from ._errors import WorkbenchError

    try:
        data = json.loads(args.input)
    except json.JSONDecodeError as exc:
        return _fail({"code": "E_USAGE", "message": f"--input is not JSON: {exc.msg} at column "
                      f"{exc.colno}"})
    try:
        bench = open_bench(args.gem, providers="real" if args.real else "mock",
                           workspace=args.workspace, state_dir=args.state_dir)
    except WorkbenchError as exc:
        return _fail(exc.to_dict())
    with bench:
        res = bench.call(args.tool, data)
    if res.logs:
        print(res.logs, end="" if res.logs.endswith("\n") else "\n", file=sys.stderr)
    if res.error is not None:
        return _fail(res.error.to_dict())
    for v in res.violations:
        print(f"warning: {v}", file=sys.stderr)
    print(json.dumps(res.value, ensure_ascii=False, indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gem-workbench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("check", help="lint a gem: manifest, schemas, tool files (exit 1 on error)")
    p.add_argument("gem")
    p.add_argument("--typecheck", action="store_true",
                   help="also type-check TypeScript tools with `deno check`")
    p.set_defaults(fn=_check)
    p = sub.add_parser("call", help="call one tool and print its result as JSON (exit 1 on error)")
    p.add_argument("gem")
    p.add_argument("tool")
    p.add_argument("--input", default="{}", help="the tool's input as JSON (default {})")
    p.add_argument("--real", action="store_true", help="real providers instead of mocks")
    p.add_argument("--workspace", help="the conversation folder")
    p.add_argument("--state-dir", help="where real state lives")
    p.set_defaults(fn=_call)
    args = parser.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
