"""How `workbench.types` declares the Notochord ctx beyond its capability rows: the value
shapes of docs, sql, email and extract (files' and fetch's are shared: platforms/shapes.py)."""

from __future__ import annotations

from pathlib import Path

from ..base import Declarations
from ..shapes import FETCH_PY, FETCH_TS, FILES_PY, FILES_TS

_TS = """\
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

_PY = """\
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


""".splitlines()

DECLARATIONS = Declarations(
    ts_shapes=(*FILES_TS, *_TS, *FETCH_TS),
    py_shapes=(*FILES_PY, *_PY, *FETCH_PY),
    manifest_schema=Path(__file__).parent / "manifest.schema.json",
)
