"""Testing tools: run notebooks on the Gem Workbench kernel; the pytest plugin (`plugin`).

from workbench.testing import run_notebook
run_notebook("notebooks/01-quickstart.ipynb", timeout=60)   # raises NotebookFailure
"""

from .notebook import NotebookFailure, run_notebook, strip_ansi

__all__ = ["NotebookFailure", "run_notebook", "strip_ansi"]
