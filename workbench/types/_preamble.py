"""The value shapes the ctx methods take and return (read from workbench/ctx/), per platform,
and the Ekanos SDK's own declarations lifted from its TypeScript source."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

SDK = Path(__file__).parent.parent / "platforms" / "ekanos" / "sdk"

_FETCH_RESPONSE_TS = """\
/** What `ctx.http.fetch` resolves with: the Fetch API's Response, plus `credentialDenied` (N10). */
export interface FetchResponse {
  readonly status: number;
  readonly statusText: string;
  readonly ok: boolean;
  readonly url: string;
  readonly redirected: boolean;
  readonly headers: Headers;
  readonly bodyUsed: boolean;
  text(): Promise<string>;
  json(): Promise<any>;
  arrayBuffer(): Promise<ArrayBuffer>;
  bytes(): Promise<Uint8Array>;
  /** Set when the connection's credentials were not injected: why, and for which host. */
  readonly credentialDenied?: { reason: string; host: string };
}
/** `ctx.http.fetch`'s init: `connection` names a manifest connection whose credentials apply. */
export interface FetchInit {
  method?: string;
  headers?: Record<string, string> | [string, string][] | Headers;
  body?: string | Uint8Array | ArrayBuffer | ArrayBufferView | URLSearchParams | null;
  connection?: string;
  redirect?: "follow" | "manual" | "error";
}"""

TS: dict[str, list[str]] = {
    "notochord": """\
export type Encoding = "utf8" | "base64";
export interface ReadOptions {
  /** "utf8" (default) or "base64" (the bytes as base64 text). */
  encoding?: Encoding;
}
export interface WriteOptions {
  /** "utf8" (default) or "base64" (content is base64 text). */
  encoding?: Encoding;
}
/** One entry of a folder (F2) or a path's info (F3); `modified` in ms since the epoch. */
export interface FileInfo {
  name: string;
  type: "file" | "folder";
  size: number;
  modified: number;
}
export type FileStat = FileInfo;
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
/** A comparison on one field; `ne` also matches documents missing the field. */
export interface Comparison {
  eq?: JsonValue;
  ne?: JsonValue;
  gt?: JsonValue;
  gte?: JsonValue;
  lt?: JsonValue;
  lte?: JsonValue;
  in?: JsonValue[];
}
/** `{status: "open"}` (equality) or `{priority: {gte: 2, lt: 5}}`. */
export type Where = { [field: string]: JsonValue | Comparison };
export interface FindQuery {
  where?: Where;
  orderBy?: string;
  order?: "asc" | "desc";
  limit?: number;
  cursor?: string | null;
}
export type SqlValue = string | number | boolean | null;
export type SqlParams = SqlValue[] | { [name: string]: SqlValue };
export interface ListSinceOptions {
  accountId?: string;
  /** ms since the epoch: messages with date > since (default 0). */
  since?: number;
  /** 20 by default, at most 200. */
  limit?: number;
}
/** What listSince returns per message (E4); `date` in ms since the epoch. */
export interface Envelope {
  accountId: string;
  id: string;
  subject: string;
  fromAddr: string;
  toAddrs: string[];
  date: number;
}
export interface Attachment {
  filename: string;
  mimeType: string;
  sizeBytes: number;
}
/** getMessage's result (E5): the envelope, the plain-text body, attachments without content. */
export interface Message extends Envelope {
  body: string;
  attachments: Attachment[];
}
""".splitlines()
    + _FETCH_RESPONSE_TS.splitlines(),
    "agent": [],
    "ekanos": """\
/** A record of `ctx.storage.account` (K6); `updatedAt` is ISO 8601 UTC. */
export interface StoredValue<T = any> {
  key: string;
  data: T;
  updatedAt: string;
}""".splitlines(),
}

_FETCH_PY = '''\
class CredentialDenied(TypedDict):
    reason: str
    host: str


class FetchInit(TypedDict, total=False):
    method: str
    headers: dict[str, str] | builtins.list[tuple[str, str]]
    body: str | bytes | None
    connection: str


class FetchResponse(Protocol):
    """What fetch returns to a Python tool: the Fetch API's Response, synchronous."""

    status: int
    statusText: str
    ok: bool
    url: str
    redirected: bool
    headers: dict[str, str]
    credentialDenied: CredentialDenied | None

    def bytes(self) -> builtins.bytes: ...
    def arrayBuffer(self) -> builtins.bytes: ...
    def text(self) -> str: ...
    def json(self) -> Any: ...

'''

PY: dict[str, list[str]] = {
    "notochord": (
        """\
Encoding = Literal["utf8", "base64"]


class ReadOptions(TypedDict, total=False):
    encoding: Encoding


WriteOptions = ReadOptions


class FileInfo(TypedDict):
    name: str
    type: Literal["file", "folder"]
    size: int
    modified: int


FileStat = FileInfo
Where = dict[str, Any]


class FindQuery(TypedDict, total=False):
    where: Where
    orderBy: str
    order: Literal["asc", "desc"]
    limit: int
    cursor: str | None


class FindResult(TypedDict):
    items: builtins.list[dict[str, Any]]
    cursor: str | None


class InsertResult(TypedDict):
    id: str


class DeleteResult(TypedDict):
    deleted: bool


SqlValue = str | int | float | bool | None
SqlParams = builtins.list[SqlValue] | dict[str, SqlValue]


class ExecuteResult(TypedDict):
    changes: int
    lastInsertRowid: int


class ListSinceOptions(TypedDict, total=False):
    accountId: str
    since: float
    limit: int


class GetMessageOptions(TypedDict):
    accountId: str
    id: str


class Envelope(TypedDict):
    accountId: str
    id: str
    subject: str
    fromAddr: str
    toAddrs: builtins.list[str]
    date: int


class ListSinceResult(TypedDict):
    messages: builtins.list[Envelope]
    cursor: float


class Attachment(TypedDict):
    filename: str
    mimeType: str
    sizeBytes: int


class Message(Envelope):
    body: str
    attachments: builtins.list[Attachment]


class ExtractOptions(TypedDict, total=False):
    maxChars: int


class ExtractResult(TypedDict):
    text: str
    mimeType: str
    pages: NotRequired[builtins.list[str]]


"""
        + _FETCH_PY
    ).splitlines(),
    "agent": '''\
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

'''.splitlines(),
    "ekanos": (
        '''\
class StoredValue(TypedDict):
    """A record of ctx.storage.account (K6); updatedAt is ISO 8601 UTC."""

    key: str
    data: Any
    updatedAt: str


'''
        + _FETCH_PY
    ).splitlines(),
}


def builtin_input_name(name: str) -> str:
    """The TypedDict name of a built-in's input: web_search -> WebSearchInput."""
    return "".join(p.capitalize() for p in name.split("_")) + "Input"


def typed_dict(cls: str, schema: dict[str, Any], to_py: Callable[[Any], str]) -> list[str]:
    """A TypedDict of an object schema's properties (`required` ones required)."""
    required = set(schema.get("required", ()))
    lines = [f"class {cls}(TypedDict):"]
    for key, sub in schema.get("properties", {}).items():
        t = to_py(sub)
        lines.append(f"    {key}: {t if key in required else f'NotRequired[{t}]'}")
    return [*lines, "", ""]


# -- the Ekanos SDK, lifted ---------------------------------------------------------------------

_START = re.compile(r"^(export )?(type|interface) (\w+)")
_CONST = re.compile(r"^export const (\w+): (\w+) =")
_FUNC = re.compile(r"^export function (\w+)(<[^>]*>)?\((.*)\): (.+) \{$")


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
