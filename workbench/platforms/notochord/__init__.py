"""The Notochord platform (seed 000): gems with manifest.json, tools as `default` / `handle`.

Its ctx shape is the registry below: the Python ctx, the ctx router and the sandbox's JS ctx
are all generated from it (ctx/__init__.py, runners/deno/worker/ctx.ts).
"""

from __future__ import annotations

from ...gem.rules import NOTOCHORD as SCHEMA_RULES
from ..base import Capability, EntryPoint, Limits, Method, Profile
from .declarations import DECLARATIONS
from .grants import grants_for
from .manifest import lint, load_manifest, manifest_schema
from .scaffold import SCAFFOLD

M = Method
CAPABILITIES = (
    Capability(
        "files",
        "namespace",
        "files",
        (
            M("list", ("path",)),
            M("stat", ("path",)),
            M("read", ("path", "options")),
            M("write", ("path", "content", "options")),
            M("mkdir", ("path",)),
            M("move", ("from", "to")),
            M("delete", ("path",)),
        ),
        doc="F1–F12: the run folder and the conversation folder",
    ),
    Capability(
        "data",
        "collection",
        "data",
        (
            M("insert", ("collection", "doc")),
            M("get", ("collection", "id")),
            M("update", ("collection", "id", "patch")),
            M("delete", ("collection", "id")),
            M("find", ("collection", "query")),
            M("count", ("collection", "query")),
        ),
        doc="D1: collections declared in the manifest",
    ),
    Capability(
        "storage.kv",
        "namespace",
        "kv",
        (M("get", ("key",)), M("set", ("key", "value")), M("delete", ("key",)), M("list", ("prefix",))),
        doc="D2: string keys and values",
    ),
    Capability(
        "storage.sql",
        "namespace",
        "sql",
        (M("query", ("sql", "params")), M("execute", ("sql", "params"))),
        doc="D3: the gem's private SQLite database",
    ),
    Capability(
        "email",
        "namespace",
        "email",
        (M("listSince", ("options",)), M("getMessage", ("options",))),
        grant="email",
        python_absent="deny",
        doc="E1–E6: read-only mail of allowed accounts",
    ),
    Capability(
        "http",
        "namespace",
        "http",
        (M("fetch", ("url", "init"), codec="fetch"),),
        grant="http",
        doc="N10: fetch, with credentials injected by connection (absent without permissions.http)",
    ),
    Capability(
        "extract",
        "function",
        "extractor",
        (M("extract", ("path", "options")),),
        doc="text of a PDF, HTML or text file",
    ),
    Capability(
        "resources",
        "namespace",
        "resources",
        (M("path", ("id",)),),
        grant="resources",
        doc="R1–R5: the gem's declared downloads",
    ),
    Capability(
        "idempotencyKey",
        "value",
        "idempotency_key",
        python_alias="idempotency_key",
        doc="N7: the same on a crash rerun; deduplicate on it",
    ),
)

PROFILE = Profile(
    name="notochord",
    title="Notochord gems",
    limits=Limits(),
    schema_rules=SCHEMA_RULES,
    entry=EntryPoint(),
    capabilities=CAPABILITIES,
    load=load_manifest,
    lint=lint,
    grants_for=grants_for,
    declarations=DECLARATIONS,
    side_effects=True,
    scaffold=SCAFFOLD,
)

__all__ = ["CAPABILITIES", "PROFILE", "manifest_schema"]
