"""`gem-workbench types [GEM]`: the gem's .gem-workbench/ made again from its definition."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._out import say, usage
from ._table import OpenFlags, register


def add(sub: Any, flags: OpenFlags) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        "types",
        help="write the gem's .gem-workbench/ again from its definition: the ctx and tool-input "
        "types and the manifest's JSON Schema for editors (open, reload and check refresh it "
        "when stale)",
    )
    p.add_argument("gem", nargs="?", default=".", help="the gem folder (default: the current one)")
    return p


def run(args: argparse.Namespace) -> int:
    from .._check import gem_folder
    from .._errors import GemLoadError
    from ..platforms import detect
    from ..types import refresh

    folder, why = gem_folder(args.gem)
    try:
        if folder is None:
            raise GemLoadError(why, file=str(args.gem))
        manifest = detect(folder).load(folder)
    except GemLoadError as exc:
        return usage("types", f"{exc.code}: {exc.message}")
    done = refresh(manifest, create=True)
    if done.state == "skipped":
        say(f"gem-workbench types: error E_PATH: {done.folder}: {done.reason}", file=sys.stderr)
        return 1
    for verb, names in (("wrote", done.written), ("unchanged", done.unchanged), ("removed", done.removed)):
        for name in names:
            say(f"{verb:9} {done.folder}/{name}")
    return 0


register("types", add, run)
