"""pins: see docs/architecture.md."""
