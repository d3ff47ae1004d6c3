"""`python -m workbench.cli`: the gem-workbench command."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
