"""bundles: see docs/architecture.md."""
