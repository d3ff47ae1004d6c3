"""What a notebook run, its kernel and its outputs' bounds share (notebook.py re-exports both):
below all three, so the kernel and the outputs never import the runner that imports them."""

from __future__ import annotations

__all__ = ["DEFAULT_KERNEL", "OUTPUT_TAIL"]

#: The kernel notebooks run on unless told otherwise (the kernelspec this package installs).
DEFAULT_KERNEL = "gem-workbench"
#: How much of a failing cell's output a report shows: the end (a kernel's own output likewise).
OUTPUT_TAIL = 64 * 1024
