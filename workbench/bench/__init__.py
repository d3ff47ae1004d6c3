"""bench: see docs/architecture.md."""
