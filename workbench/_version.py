"""The workbench's version, in the lowest layer: what a gem's `.gem-workbench/` stamp and the
kernel's banner name (pyproject.toml's `version`; tests/test_types_refresh.py checks they agree)."""

__version__ = "0.1.0"
