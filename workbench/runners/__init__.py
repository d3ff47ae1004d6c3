"""Runners turn (tool, input, ctx layer) into an outcome; they know nothing of storage."""

from .python import Outcome

__all__ = ["Outcome"]
