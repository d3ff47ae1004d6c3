"""`gem-workbench lab [PATH]`: JupyterLab with the Gem Workbench kernel as default."""

from __future__ import annotations

import argparse
from typing import Any

from ._table import OpenFlags, register


def add(sub: Any, flags: OpenFlags) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "lab",
        help="start JupyterLab with the Gem Workbench kernel as default; "
        "after `--`, arguments for jupyter lab",
    )
    p.add_argument("path", nargs="?", default="notebooks", help="folder to open (default: notebooks)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument("--port", type=int, help="port (default: 8888 or the next free one)")
    p.add_argument("--ip", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    return p


def run(args: argparse.Namespace) -> int:
    from .. import _lab as lab

    return lab.run(args.path, ip=args.ip, port=args.port, browser=not args.no_browser, extra=args.extra)


register("lab", add, run)
