"""Schema rules as data: what a platform accepts in a tool's input schema and how it reads
the arguments (a field of each platform profile, applied by `gem.schema`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SchemaRules:
    """unsupported_keywords: rejected at load wherever a `$ref` can reach them (N8: Notochord
    rejects `pattern`, `patternProperties`, `uniqueItems`); null_is_absent: a `null` for an
    optional top-level parameter counts as absent (N8); root_keys: when set, the only keys
    the schema's root may hold (None: any)."""

    unsupported_keywords: tuple[str, ...] = ("pattern", "patternProperties", "uniqueItems")
    null_is_absent: bool = True
    root_keys: tuple[str, ...] | None = None
    # `pattern` allowed and checked with RE2 (linear time, bounded memory); a pattern RE2
    # cannot compile is a load error (Ekanos: "inside properties you are unconstrained")
    re2_patterns: bool = False
    # the root may be `true` or `false` (a 2020-12 schema; Notochord's inputSchema): else only
    # an object, with a message in JSON terms
    boolean_root: bool = False
    # what the platform's format calls the schema (Notochord `inputSchema`, agent tools' and
    # Ekanos' `parameters`): the messages about it say so
    schema_key: str = "inputSchema"


NOTOCHORD = SchemaRules(boolean_root=True)
