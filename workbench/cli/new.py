"""`gem-workbench new NAME`: a working gem folder (the scaffold's command)."""

from __future__ import annotations

import argparse
from typing import Any

from ._table import OpenFlags, register


def add(sub: Any, flags: OpenFlags) -> argparse.ArgumentParser:
    from ..scaffold import add_parser

    return add_parser(sub)  # (it sets its own handler)


register("new", add, None)
