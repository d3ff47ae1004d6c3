"""Gem folders: the gem model, bounded reading of a folder, input-schema checks.

Loading a gem is its platform's (workbench.platforms): each profile turns a folder into
this model with these tools.
"""

from .model import CollectionSpec, Manifest, ToolSpec

__all__ = ["CollectionSpec", "Manifest", "ToolSpec"]
