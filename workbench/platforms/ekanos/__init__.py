"""Ekanos integrations (seed 003, K1–K7): `integration.ts` default-exporting
`defineIntegration({slug, egress, storage, tools})`; each tool's `run(ctx, args)` gets
`ctx.storage.account`, `ctx.secrets`, `ctx.fetch` (egress hosts only) and `ctx.logger`.

The workbench serves `@ekanos/sdk`, `@ekanos/sdk/testing` and a `vitest` shim to the sandbox
through an import map (`sdk/`). Readings where the seed is silent, documented in the README:
egress entries are host names (`api.x.example`, port 443), `host:port`, or `*.x.example`;
requests are https only; `storage` is `{account: {<key>: <JSON Schema>}}` with exact keys.
"""

from __future__ import annotations

import os

from ...gem.model import Manifest, ToolSpec
from ..base import Capability, EntryPoint, Grants, Limits, Method, Profile
from . import registry
from .declarations import DECLARATIONS
from .loader import IMPORT_MAP, RULES, SDK, effective_name, lint, load_integration
from .outcomes import judge
from .scaffold import SCAFFOLD
from .shapes import output_example
from .storage import check_stored

M = Method
LEVELS = ("debug", "info", "warn", "error")

CAPABILITIES = (
    Capability(
        "storage.account",
        "namespace",
        "account",
        (M("get", ("key",)), M("set", ("key", "data"))),
        doc="K6: the account's records ({key, data, updatedAt}), checked against `storage` schemas",
    ),
    Capability("secrets", "namespace", "secrets", (M("get", ("name",), secret=True),), doc="K6"),
    Capability(
        "fetch", "function", "http", (M("fetch", ("url", "init"), codec="response"),), doc="K6: egress hosts"
    ),
    Capability(
        "logger",
        "namespace",
        "logger",
        tuple(M(level, ("fields", "message"), codec="void") for level in LEVELS),
        doc="K6: structured rows in res.log_rows",
    ),
)


def grants_for(manifest: Manifest, tool: ToolSpec) -> Grants:
    """Every tool of an integration fetches through the integration's egress (K6)."""
    return Grants(frozenset({"http"}), lists={"egress": tuple(manifest.raw.get("egress") or ())})


PROFILE = Profile(
    name="ekanos",
    title="Ekanos integrations",
    limits=Limits(),
    schema_rules=RULES,
    entry=EntryPoint(
        js_exports=("default",),
        js_hint="export default defineIntegration({ slug, egress, tools: [{ name, …, async run(ctx, args) {…} }] })",
        js_member="tools",
    ),
    open_options=("fetch_handlers",),
    capabilities=CAPABILITIES,
    load=load_integration,
    lint=lint,
    grants_for=grants_for,
    foreign={
        name: f"Ekanos tools have no ctx.{name}: their ctx is storage.account, secrets, fetch (the "
        "integration's egress hosts) and logger (seed 003)"
        for name in (
            "files",
            "data",
            "email",
            "http",
            "extract",
            "resources",
            "tools",
            "audit",
            "idempotencyKey",
        )
    },
    check_stored=check_stored,
    judge=judge,
    import_map=IMPORT_MAP,
    sdk_dirs=(SDK,),
    opened=registry.claim,
    closed=registry.release,
    detects=lambda root: any(os.path.lexists(root / f"integration.{ext}") for ext in ("ts", "js")),
    effective_names=True,
    declarations=DECLARATIONS,
    scaffold=SCAFFOLD,
    finding_rules={},  # a secret that got out is K6's
    throw_kind="fault",
    output_example=output_example,
)

__all__ = ["CAPABILITIES", "PROFILE", "effective_name"]
