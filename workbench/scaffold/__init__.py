"""`gem-workbench new NAME`: a working gem folder to start from (like create-cloudflare).

    gem-workbench new my-gem [--platform notochord|agent|ekanos|…] [--lang ts|js|py] [--dir PARENT]

The folder passes `gem-workbench check`, its tool's first call succeeds, and it holds a
notebook that calls the tool, a test, fixtures where the platform has them and
`.gem-workbench/` (the ctx types for editors and the manifest's JSON Schema). The platforms are
the registry's (a plugin's too: docs/platforms.md), each profile's `scaffold` says what its gem
holds. This module only registers the command; `_create` writes the folder (imported when the
command runs, so the registry is not loaded for other commands).
"""

from __future__ import annotations

import argparse
import sys

from ..platforms import KNOWN

__all__ = ["add_parser"]

LANGS = ("ts", "js", "py")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register `new` on the CLI's subparsers."""
    p = sub.add_parser(
        "new",
        help="create a working gem folder: manifest or integration, one tool, a notebook, a test, "
        "and the fixtures the platform reads",
        description=__doc__.split("\n\n", 1)[0] if __doc__ else None,
    )
    p.add_argument("name", help="the gem's folder name (and id or slug): lowercase letters, digits, '-'")
    # not argparse choices: the registry (plugins' entry points) is read only when `new` runs
    p.add_argument(
        "--platform",
        default="notochord",
        help=f"{', '.join(KNOWN)} or a plugin's platform (default: notochord)",
    )
    p.add_argument(
        "--lang",
        choices=LANGS,
        help="the tool's language (default: ts; py for notochord and agent only)",
    )
    p.add_argument("--dir", default=".", metavar="PARENT", help="where to create the folder (default: .)")
    p.add_argument("--tool", default="hello", help="the tool's name (default: hello)")
    p.set_defaults(fn=_run)
    return p


def _run(args: argparse.Namespace) -> int:
    from ._create import ScaffoldError, create, next_steps

    try:
        folder = create(args.name, platform=args.platform, lang=args.lang, parent=args.dir, tool=args.tool)
    except ScaffoldError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    print(next_steps(folder, platform=args.platform, tool=args.tool))
    return 0
