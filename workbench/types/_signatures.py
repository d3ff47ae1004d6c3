"""The type of every ctx method and value, keyed by its registry path ("files.read").

The registries (platforms/<name>/CAPABILITIES) say which names exist, their parameter names and
where they are present; this table adds what the registry does not carry: each parameter's
type and the result's, in TypeScript and in Python, read from the ctx layer (workbench/ctx/).
The generator refuses a registry method missing here or whose TS parameter names differ from
the registry's, so the two cannot drift (tests/test_types.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Sig:
    """One method: TS parameters ("name?: type", named as the registry names them), the TS
    result (without Promise), Python parameters (without self) and the Python result."""

    ts: tuple[str, ...]
    ts_ret: str
    py: tuple[str, ...]
    py_ret: str
    doc: str = ""
    ts_generic: str = ""  # e.g. "<Row = Record<string, unknown>>"


#: "path.method" (a collection's methods without their bound first parameter) -> signature
METHODS: dict[str, Sig] = {
    # -- Notochord: ctx.files (F1–F12) -----------------------------------------------------
    "files.list": Sig(
        ("path?: string",),
        "FileInfo[]",
        ("path: str | None = None",),
        "list[FileInfo]",
        "F2: the entries of a folder (no path: the run folder); [] before any write.",
    ),
    "files.stat": Sig(
        ("path: string",), "FileStat | null", ("path: str",), "FileStat | None", "F3: info, or null."
    ),
    "files.read": Sig(
        ("path: string", "options?: ReadOptions"),
        "string",
        ("path: str", "options: ReadOptions | None = None", "/", "*", "encoding: Encoding | None = None"),
        "str",
        "F4: the file as UTF-8 text (default) or, with { encoding: 'base64' }, as base64 text.",
    ),
    "files.write": Sig(
        ("path: string", "content: string", "options?: WriteOptions"),
        "void",
        (
            "path: str",
            "content: str",
            "options: WriteOptions | None = None",
            "/",
            "*",
            "encoding: Encoding | None = None",
        ),
        "None",
        "F5: create parents, write atomically; a workspace: file overwritten keeps its old version.",
    ),
    "files.mkdir": Sig(("path: string",), "void", ("path: str",), "None", "F6"),
    "files.move": Sig(
        ("from: string", "to: string"),
        "void",
        ("src: str", "dst: str", "/"),
        "None",
        "F7: also between the run and the conversation folder; throws if the target exists.",
    ),
    "files.delete": Sig(
        ("path: string",), "void", ("path: str",), "None", "F8: to the trash, with a history copy."
    ),
    # -- ctx.data.collection(name) (D1) ----------------------------------------------------
    "data.insert": Sig(("doc: Doc",), "{ id: string }", ("doc: dict[str, Any]",), "InsertResult", "D1"),
    "data.get": Sig(("id: string",), "(Doc & { id: string }) | null", ("id: str",), "dict[str, Any] | None"),
    "data.update": Sig(
        ("id: string", "patch: Partial<Doc> | Record<string, unknown>"),
        "{ id: string }",
        ("id: str", "patch: dict[str, Any]"),
        "InsertResult",
        "RFC 7396 merge patch: null removes a field.",
    ),
    "data.delete": Sig(("id: string",), "{ deleted: boolean }", ("id: str",), "DeleteResult"),
    "data.find": Sig(
        ("query?: FindQuery",),
        "{ items: (Doc & { id: string })[]; cursor: string | null }",
        ("query: FindQuery | None = None",),
        "FindResult",
        "limit 1–1000 (default 50); cursor: the opaque string of the previous page.",
    ),
    "data.count": Sig(("query?: Where",), "number", ("where: Where | None = None",), "int"),
    # -- ctx.storage (D2, D3) --------------------------------------------------------------
    "storage.kv.get": Sig(("key: string",), "string | null", ("key: str",), "str | None", "D2"),
    "storage.kv.set": Sig(("key: string", "value: string"), "void", ("key: str", "value: str"), "None", "D2"),
    "storage.kv.delete": Sig(("key: string",), "boolean", ("key: str",), "bool"),
    "storage.kv.list": Sig(("prefix?: string",), "string[]", ('prefix: str = ""',), "list[str]"),
    "storage.sql.query": Sig(
        ("sql: string", "params?: SqlParams"),
        "Row[]",
        ("sql: str", "params: SqlParams | None = None"),
        "list[dict[str, Any]]",
        "D3: rows as objects.",
        ts_generic="<Row = Record<string, unknown>>",
    ),
    "storage.sql.execute": Sig(
        ("sql: string", "params?: SqlParams"),
        "{ changes: number; lastInsertRowid: number }",
        ("sql: str", "params: SqlParams | None = None"),
        "ExecuteResult",
    ),
    # -- ctx.email (E1–E6) -----------------------------------------------------------------
    "email.listSince": Sig(
        ("options?: ListSinceOptions",),
        "{ messages: Envelope[]; cursor: number }",
        (
            "options: ListSinceOptions | None = None",
            "/",
            "*",
            "accountId: str | None = None",
            "since: float = 0",
            "limit: int = 20",
        ),
        "ListSinceResult",
        "E4: envelopes with date > since, oldest first; limit 20 by default, at most 200.",
    ),
    "email.getMessage": Sig(
        ("options: { accountId: string; id: string }",),
        "Message",
        (
            "options: GetMessageOptions | None = None",
            "/",
            "*",
            "accountId: str | None = None",
            "id: str | None = None",
        ),
        "Message",
        "E5: the envelope, body (plain text) and attachments (metadata only).",
    ),
    # -- ctx.http (N10) and Ekanos' ctx.fetch (K6) -----------------------------------------
    "http.fetch": Sig(
        ("url: string | URL", "init?: FetchInit"),
        "FetchResponse",
        ("url: str", "init: FetchInit | None = None", "/"),
        "FetchResponse",
        "N10: credentials injected by connection; credentialDenied says why they were not.",
    ),
    "fetch.fetch": Sig(
        ("url: string | URL", "init?: RequestInit"),
        "Response",
        ("url: str", "init: FetchInit | None = None", "/"),
        "FetchResponse",
        "K6: https only, to the integration's egress hosts; a real Response.",
    ),
    # -- ctx.extract, ctx.resources --------------------------------------------------------
    "extract.extract": Sig(
        ("path: string", "options?: { maxChars?: number }"),
        "{ text: string; mimeType: string; pages?: string[] }",
        ("path: str", "options: ExtractOptions | None = None"),
        "ExtractResult",
        "The text of a PDF, HTML or text file; options.maxChars cuts it.",
    ),
    "resources.path": Sig(
        ("id: string",),
        "string",
        ("id: str",),
        "str",
        "R2: the absolute local path, downloading first if needed.",
    ),
    # -- agent: ctx.audit (A6) -------------------------------------------------------------
    "audit.audit": Sig(
        ("event: string", "data?: unknown"), "void", ("event: str", "data: Any = None"), "None", "A6"
    ),
    # -- Ekanos (K6) -----------------------------------------------------------------------
    "storage.account.get": Sig(
        ("key: string",),
        "StoredValue<T> | null",
        ("key: str",),
        "StoredValue | None",
        "K6: the record { key, data, updatedAt }, or null.",
        ts_generic="<T = any>",
    ),
    "storage.account.set": Sig(
        ("key: string", "data: unknown"),
        "void",
        ("key: str", "data: Any"),
        "None",
        "K6: checked against the integration's storage schema for the key, when declared.",
    ),
    "secrets.get": Sig(("name: string",), "string | null", ("name: str",), "str | None", "K6"),
    **{
        f"logger.{level}": Sig(
            ("fields: Record<string, unknown> | string", "message?: string"),
            "void",
            ("fields: dict[str, Any] | str", "message: str | None = None"),
            "None",
            "K6: a structured row in res.log_rows; never throws.",
        )
        for level in ("debug", "info", "warn", "error")
    },
}

#: the type of each per-call value, by registry path: (TS, Python)
VALUES: dict[str, tuple[str, str]] = {
    "idempotencyKey": ("string", "str"),
    "agentId": ("string", "str"),
    "agentName": ("string", "str"),
    "powerUserId": ("string | null", "str | None"),
    "toolCallId": ("string", "str"),
    "conversationId": ("string | null", "str | None"),
}

#: what each agent built-in resolves with (A3/A4: an error envelope resolves too): (TS, Python)
BUILTIN_RESULTS: dict[str, tuple[str, str]] = {
    "web_search": ("{ title: string; url: string; snippet: string }[]", "list[SearchResult]"),
    "send_email": ("{ message_id: string }", "SendEmailResult"),
    "calculate": ("{ result: number }", "CalculateResult"),
    "surface_file": ("{ surfaced: true; [key: string]: unknown }", "dict[str, Any]"),
}

#: interface names of namespaces, by registry path (the default: the last part, capitalised)
NAMES = {"storage.kv": "KV", "storage.sql": "SQL", "http": "HTTP"}
