"""Gem folders: manifest, tools and schema checks."""

from .manifest import CollectionSpec, Manifest, ToolSpec, lint, load_manifest, manifest_schema

__all__ = ["CollectionSpec", "Manifest", "ToolSpec", "lint", "load_manifest", "manifest_schema"]
