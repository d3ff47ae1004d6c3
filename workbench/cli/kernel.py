"""`gem-workbench kernel install`: the Gem Workbench kernelspec for another Jupyter."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._out import fail
from ._table import OpenFlags, register


def add(sub: Any, flags: OpenFlags) -> argparse.ArgumentParser:
    kernel: argparse.ArgumentParser = sub.add_parser("kernel", help="manage the Gem Workbench kernelspec")
    ksub = kernel.add_subparsers(dest="kernel_command", required=True)
    p = ksub.add_parser(
        "install",
        help="install the kernelspec for another Jupyter; it runs "
        "this environment's Python (default: --user)",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="for the current user (the default)")
    where.add_argument("--sys-prefix", action="store_true", help=f"into this environment ({sys.prefix})")
    where.add_argument("--prefix", metavar="P", help="into P/share/jupyter/kernels")
    p.add_argument("--name", default="gem-workbench", help="kernel name (default gem-workbench)")
    p.add_argument(
        "--display-name", default="Gem Workbench", help="name shown in Jupyter (default 'Gem Workbench')"
    )
    return kernel


def run(args: argparse.Namespace) -> int:
    """`kernel install` (its only subcommand, which argparse requires)."""
    from .. import _kernelspec

    prefix = sys.prefix if args.sys_prefix else args.prefix
    try:
        dest = _kernelspec.install(
            name=args.name, display_name=args.display_name, user=prefix is None, prefix=prefix
        )
    except ValueError as exc:  # a kernel name Jupyter refuses
        return fail({"code": "E_USAGE", "message": f"--name {args.name!r}: {exc}"})
    except OSError as exc:
        return fail({"code": "E_USAGE", "message": f"cannot install the kernelspec: {exc}"})
    print(f"Installed kernelspec {args.name} ({args.display_name}) in {dest}, running {sys.executable}")
    return 0


register("kernel", add, run)
