"""`python -m workbench.types`: regenerate the ctx declarations from the capability registries.

python -m workbench.types                      # the built-ins', into workbench/types/
python -m workbench.types myplatform --out types/  # a plugin platform's (docs/platforms.md)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._generate import HERE, write_all


def main(argv: list[str] | None = None) -> int:
    from ..platforms import names

    p = argparse.ArgumentParser(prog="python -m workbench.types", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "platforms", nargs="*", metavar="PLATFORM", help=f"default: the built-ins ({', '.join(names())})"
    )
    p.add_argument(
        "--out", type=Path, default=None, help="the folder to write into (default: workbench/types)"
    )
    args = p.parse_args(argv)
    unknown = [n for n in args.platforms if n not in names()]
    if unknown:
        p.error(
            f"unknown platform {', '.join(map(repr, unknown))}: use one of {', '.join(map(repr, names()))}"
        )
    folder = args.out or HERE
    folder.mkdir(parents=True, exist_ok=True)
    for path in write_all(folder, args.platforms or None):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
