"""K2: a tool's three outcomes. A returned value is a success, a returned `{error}` an expected
failure (the model explains it to the user), a throw a fault (the runner's error). The call
pipeline asks the profile's `judge` for the first two; a success also gets warnings where its
shape differs from the tool's `outputExample` (shapes.py)."""

from __future__ import annotations

from typing import Any

from ...gem.model import Manifest, ToolSpec
from ..base import SUCCESS, Verdict
from .shapes import shape_warnings

EXPECTED_FAILURE = Verdict(expected_failure=True)


def judge(manifest: Manifest, tool: ToolSpec, value: Any) -> Verdict:
    """The verdict on `value`, which `tool` returned: an expected failure, or a success with
    warnings about its shape."""
    if isinstance(value, dict) and "error" in value:
        return EXPECTED_FAILURE
    warnings = shape_warnings(manifest, tool, value)
    return Verdict(warnings=tuple(warnings)) if warnings else SUCCESS
