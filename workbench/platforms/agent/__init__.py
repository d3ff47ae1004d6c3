"""Agent custom tools (seed 002): tools with `handle(input, ctx)` whose ctx carries the agent's
identity, `ctx.tools.<name>` (the enabled built-ins) and `ctx.audit` — nothing else.

The workbench's readings where the seed is silent: the agent's ids come from the manifest's
`agent {id, name}`; `powerUserId` is `bench.call(..., as_user=)` (None: the owner calls),
`conversationId` is `bench.call(..., conversation=)` (None when not given), `toolCallId` is new
per call (`call_<24 hex>`). Input schemas follow Notochord's keyword rules (the workbench
cannot check `pattern` safely).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from ...gem.model import Manifest, ToolSpec
from ..base import Capability, EntryPoint, Grants, Limits, Method, Profile
from .declarations import DECLARATIONS
from .manifest import BUILTINS, SCHEMA_RULES, lint, load_manifest, manifest_schema
from .results import model_view
from .scaffold import SCAFFOLD


def _value(name: str, doc: str) -> Capability:
    return Capability(name, "value", f"values.{name}", doc=doc)


CAPABILITIES = (
    _value("agentId", "A2: the agent's stable id"),
    _value("agentName", "A2: the agent's name"),
    _value("powerUserId", "A2: the calling subscriber, or null when the owner calls"),
    _value("toolCallId", "A2: this invocation's id, new per call"),
    _value("conversationId", "A2: the chat session's id, or null"),
    Capability("tools", "dispatch", "tools", grant="tools", doc="A3–A5: the enabled built-ins"),
    Capability("audit", "function", "audit", (Method("audit", ("event", "data")),), doc="A6"),
)


def grants_for(manifest: Manifest, tool: ToolSpec) -> Grants:
    """Every tool of the agent may call the enabled built-ins and the gem's own tools (A3)."""
    enabled = tuple(manifest.raw.get("builtins", BUILTINS))
    return Grants(frozenset({"tools"}), lists={"tools": (*enabled, *sorted(manifest.tools))})


def call_values(manifest: Manifest, options: Mapping[str, Any]) -> dict[str, Any]:
    """A2's fields for one call."""
    agent = manifest.raw["agent"]
    return {
        "agentId": agent["id"],
        "agentName": agent["name"],
        "powerUserId": options.get("as_user"),
        # the call's seeded token (a pinned call's replay repeats it), else a fresh one
        "toolCallId": f"call_{options.get('token') or secrets.token_hex(12)}",
        "conversationId": options.get("conversation"),
    }


PROFILE = Profile(
    name="agent",
    title="agent custom tools",
    limits=Limits(),
    schema_rules=SCHEMA_RULES,
    entry=EntryPoint(
        js_exports=("handle",), js_hint="export async function handle(input, ctx) {...}", js_plain=True
    ),
    capabilities=CAPABILITIES,
    load=load_manifest,
    lint=lint,
    grants_for=grants_for,
    call_values=call_values,
    foreign={
        name: f"agent custom tools have no ctx.{name}: their ctx is the agent's ids (agentId, "
        "agentName, powerUserId, toolCallId, conversationId), ctx.tools.<name> (the built-ins and "
        "the gem's own tools) and ctx.audit (seed 002)"
        for name in ("files", "data", "storage", "email", "http", "extract", "resources", "idempotencyKey")
    },
    declarations=DECLARATIONS,
    scaffold=SCAFFOLD,
    finding_rules={"timeout": "A5", "limit": "A5", "secret": "SEC4"},
    envelopes=True,
    model_view=model_view,
)

__all__ = ["CAPABILITIES", "PROFILE", "manifest_schema"]
