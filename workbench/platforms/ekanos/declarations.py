"""How `workbench.types` declares the Ekanos ctx beyond its capability rows: StoredValue and
fetch's shapes, and `ekanos.d.ts` as the `@ekanos/sdk` modules, the SDK's own declarations
lifted from its TypeScript source (sdk/*.ts) so they are declared as served."""

from __future__ import annotations

import re
from pathlib import Path

from ..base import Declarations
from ..shapes import FETCH_PY

SDK = Path(__file__).parent / "sdk"

_TS = """\
/** A record of `ctx.storage.account` (K6); `updatedAt` is ISO 8601 UTC. */
export interface StoredValue<T = any> {
  key: string;
  data: T;
  updatedAt: string;
}""".splitlines()

_PY = '''\
class StoredValue(TypedDict):
    """A record of ctx.storage.account (K6); updatedAt is ISO 8601 UTC."""

    key: str
    data: Any
    updatedAt: str


'''.splitlines()

_START = re.compile(r"^(export )?(type|interface) (\w+)")
_CONST = re.compile(r"^export const (\w+): (\w+) =")
_FUNC = re.compile(r"^export function (\w+)(<[^>]*>)?\((.*)\): (.+) \{\Z")  # a line of splitlines(): \Z is $


def lift(source: str, skip: frozenset[str] = frozenset()) -> list[str]:
    """The type-level declarations of a TS module: its types and interfaces, and its exported
    functions and constants as declarations (function parameters with defaults are left out)."""
    out: list[str] = []
    lines = source.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _START.match(line)
        if m:
            block = [line]
            depth = line.count("{") - line.count("}")
            while depth > 0 or not (block[-1].rstrip().endswith((";", "}"))):
                i += 1
                block.append(lines[i])
                depth += lines[i].count("{") - lines[i].count("}")
            if m.group(3) not in skip:
                out += [re.sub(r"^(type|interface) ", r"export \1 ", b) for b in block]
        elif (c := _CONST.match(line)) is not None:
            out.append(f"export const {c.group(1)}: {c.group(2)};")
        elif (f := _FUNC.match(line)) is not None and "=" not in f.group(3):
            out.append(f"export function {f.group(1)}{f.group(2) or ''}({f.group(3)}): {f.group(4)};")
        i += 1
    return out


def ekanos_modules(ctx_body: list[str]) -> list[str]:
    """`declare module` blocks for @ekanos/sdk (the ctx from the registry; the rest lifted from
    sdk/index.ts), @ekanos/sdk/testing and the vitest shim, so an editor with no import map
    resolves what the workbench serves to the sandbox."""
    index = (SDK / "index.ts").read_text(encoding="utf-8")
    ctx_names = frozenset({"Logger", "StoredValue", "IntegrationContext"})
    sdk = [
        *ctx_body,
        *lift(index, skip=ctx_names),
        "export class IntegrationDefinitionError extends Error {",
        "  path: string;",
        "  issues: Issue[];",
        "  constructor(issues: Issue[]);",
        "}",
    ]
    testing = [
        'import type { IntegrationContext, JsonSchema } from "@ekanos/sdk";',
        *lift((SDK / "testing.ts").read_text(encoding="utf-8")),
    ]
    vitest = [
        *lift((SDK / "expect.ts").read_text(encoding="utf-8")),
        *lift((SDK / "mock.ts").read_text(encoding="utf-8"), skip=frozenset({"Timer"})),
        *lift((SDK / "vitest.ts").read_text(encoding="utf-8"), skip=frozenset({"Suite", "Entry"})),
    ]

    def module(name: str, body: list[str]) -> list[str]:
        return [f'declare module "{name}" {{', *(f"  {b}" if b else "" for b in body), "}"]

    return [
        '// Ambient: `/// <reference types="./.gem-workbench/ekanos.d.ts" />` in integration.ts lets an',
        "// editor resolve the modules the workbench serves to the sandbox through its import map.",
        *module("@ekanos/sdk", sdk),
        *module("@ekanos/sdk/testing", testing),
        *module("vitest", vitest),
    ]


DECLARATIONS = Declarations(
    ctx_type="IntegrationContext",
    ts_shapes=tuple(_TS),
    py_shapes=(*_PY, *FETCH_PY),
    ts_modules=ekanos_modules,
    gem_types=False,
)
