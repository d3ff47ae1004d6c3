"""`gem-workbench mcp GEM`: serve the gem's tools over MCP on stdio (for a desktop assistant,
an editor or an agent SDK that starts the server), or over streamable HTTP on 127.0.0.1 with
`--port PORT` (its URL and token on stderr). Every open() flag is taken, as by `call`:
`--http real|FILE` stays ctx.http's, so the HTTP transport is asked for by its port."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._out import fail, open_flags, say, usage
from ._table import OpenFlags, register


def add(sub: Any, flags: OpenFlags) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "mcp", help="serve the gem's tools over MCP: stdio, or streamable HTTP with --port PORT"
    )
    p.add_argument("gem")
    p.add_argument(
        "--port",
        type=int,
        metavar="PORT",
        help="serve streamable HTTP on 127.0.0.1:PORT instead of stdio (0: a free port); the "
        "URL and the token every request must carry are printed on stderr",
    )
    flags(p)  # every platform's open() flags and bench actions, by capability (ctx/spec.py)
    return p


def run(args: argparse.Namespace) -> int:
    from .. import open as open_bench
    from .._errors import UsageError, WorkbenchError
    from ..bench.options import apply_actions

    given = next((v for k, v in vars(args).items() if k.endswith("\x1f--http")), None)
    if isinstance(given, str) and given.isdigit():  # meant the transport's port: said, not "not found"
        return usage(
            "mcp", f"--http {given}: --http is ctx.http's (real|FILE); serve HTTP with --port {given}"
        )
    try:
        _, options, actions = open_flags(args)
        bench = open_bench(args.gem, **options)
    except UsageError as exc:
        return usage("mcp", exc.message)
    except WorkbenchError as exc:
        return fail(exc.to_dict())
    with bench:
        try:  # --allow-recipient, --allow-account: on the bench, before any call
            apply_actions(bench, actions)
        except UsageError as exc:
            return usage("mcp", exc.message)
        if args.port is None:
            return _stdio(bench)
        try:
            return _http(bench, args.port)
        except UsageError as exc:
            return usage("mcp", exc.message)


def _stdio(bench: Any) -> int:
    import anyio

    from ..mcp.server import BenchServer
    from ..mcp.stdio import serve_stdio

    anyio.run(serve_stdio, BenchServer(bench))
    return 0


def _http(bench: Any, port: int) -> int:
    import asyncio

    from ..mcp.http import http_server, listen, url_of
    from ..mcp.server import BenchServer

    sock = listen(port)
    try:
        server, token = http_server(BenchServer(bench), sock)
        say(f"serving {bench.manifest.id} over MCP at {url_of(sock)}", file=sys.stderr)
        say(f"token: {token}  (header  Authorization: Bearer {token})", file=sys.stderr)
        say(f"or: {url_of(sock)}?token={token}", file=sys.stderr)
        sys.stderr.flush()
        asyncio.run(server.serve(sockets=[sock]))
    finally:
        sock.close()
    return 0


register("mcp", add, run, flags="always")
