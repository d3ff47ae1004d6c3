"""How `workbench.types` declares the agent ctx beyond its capability rows: the built-ins'
results (their inputs come from their schemas) and a gem's `Ctx` typed by its `builtins`."""

from __future__ import annotations

import json
from pathlib import Path

from ...gem.model import Manifest
from ..base import Declarations
from .manifest import BUILTINS

_PY = '''\
@final  # so `"error" in result` narrows a result | ErrorEnvelope
class ErrorEnvelope(TypedDict):
    """A built-in's failure: returned, not raised (A4)."""

    error: str
    details: dict[str, Any]


@final
class SearchResult(TypedDict):
    title: str
    url: str
    snippet: str


@final
class SendEmailResult(TypedDict):
    message_id: str


@final
class CalculateResult(TypedDict):
    result: float

'''.splitlines()


def gem_ctx(manifest: Manifest) -> list[str]:
    """The gem's `Ctx` in .gem-workbench/gem.d.ts: `ctx.tools` with the enabled built-ins and
    the gem's own tools (`Inputs`)."""
    enabled = manifest.raw.get("builtins", BUILTINS)
    names = " | ".join(json.dumps(b) for b in enabled) or "never"
    return [
        "/** ctx.tools: the enabled built-ins (`builtins`) and this gem's own tools. */",
        f"export type Ctx = PlatformCtx<Inputs, {names}>;",
    ]


DECLARATIONS = Declarations(
    py_shapes=tuple(_PY),
    gem_ctx=gem_ctx,
    manifest_schema=Path(__file__).parent / "manifest.schema.json",
)
