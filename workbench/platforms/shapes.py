"""Value shapes that more than one platform's ctx declarations use, as lines of TypeScript
and of Python, for a profile's `Declarations` (docs/platforms.md): a platform that reuses a
capability (its rows in `Profile.capabilities`) reuses its shapes from here.

    Declarations(ts_shapes=FILES_TS, py_shapes=FILES_PY)   # a platform with ctx.files
"""

from __future__ import annotations

__all__ = ["FETCH_PY", "FETCH_TS", "FILES_PY", "FILES_TS"]

#: ctx.files (F1-F7): the read/write options and what list and stat return
FILES_TS: tuple[str, ...] = tuple(
    """\
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
""".splitlines()
)
FILES_PY: tuple[str, ...] = tuple(
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
""".splitlines()
)

#: ctx.http.fetch: the Fetch API's Response and init, with a connection's credentials
FETCH_TS: tuple[str, ...] = tuple(
    """\
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
}""".splitlines()
)
FETCH_PY: tuple[str, ...] = tuple(
    '''\
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

'''.splitlines()
)
