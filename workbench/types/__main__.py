"""`python -m workbench.types`: regenerate the ctx declarations from the capability registries."""

from __future__ import annotations

import sys

from ._generate import write_all


def main() -> int:
    for path in write_all():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
