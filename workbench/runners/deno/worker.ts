// Runs inside the sandboxed Worker: imports the tool, builds `ctx`, runs one call at a time.
// ctx methods post {t:"ctx"} to the host, which forwards them to the Python ctx layer.

// Deno.exit in a worker silently ends the worker, so the call would only end at its timeout:
// make it an error the tool sees at once (reported as E_SANDBOX, capability "exit").
Object.defineProperty(Deno, "exit", {
  value: (code?: number) => {
    const e = new Error(`Deno.exit(${code ?? ""}) is not available to tools`);
    e.name = "NotCapable";
    throw e;
  },
});

// self.close() ends the worker just as silently: the same treatment.
Object.defineProperty(self, "close", {
  value: () => {
    const e = new Error("self.close() is not available to tools");
    e.name = "NotCapable";
    throw e;
  },
});

// The RPC port (see host.ts) and the resolvers of pending ctx calls are the channel. Tool code
// shares this realm and may patch globals, so what reaches them is taken before any tool runs —
// a bound post, a null-prototype table (no Map.prototype.set to hook), the real Promise, URL
// and JSON.stringify — and the port itself never leaves this module.
// `origin` is made where the tool calls ctx, so a ctx error carries the tool's own frames
type Pending = { resolve: (v: unknown) => void; reject: (e: unknown) => void; origin: Error };
const pending: Record<number, Pending> = Object.create(null);
let seq = 0;
let post: (msg: unknown) => void = () => {};
const NativePromise = Promise;
const NativeURL = URL;
const stringify = JSON.stringify;

// ctx.http.fetch (N10): the request crosses as plain JSON (bytes as base64), the reply comes
// back as {status, statusText, ok, url, redirected, headers: [[k, v]], body: base64,
// credentialDenied?} and is turned into a Response-like object here.
const NativeHeaders = Headers;
const NativeTextDecoder = TextDecoder;
const NativeUint8Array = Uint8Array;
const NativeArrayBuffer = ArrayBuffer;
const b64encode = btoa;
const b64decode = atob;
const parseJSON = JSON.parse;
const fromCharCode = String.fromCharCode;
// Fetch API init options that mean nothing through ctx: accepted and ignored
const FETCH_IGNORED = new Set(["signal", "mode", "credentials", "cache", "integrity", "keepalive",
  "priority", "referrer", "referrerPolicy", "window", "duplex"]);

function toBase64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return b64encode(s);
}

function fromBase64(text: string): Uint8Array {
  const bin = b64decode(text);
  const out = new NativeUint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function fetchArgs(input: unknown, init: unknown): [unknown, Record<string, unknown>] {
  let url: unknown = input;
  if (input instanceof NativeURL) url = input.href;
  else if (input !== null && typeof input === "object" && typeof (input as { url?: unknown }).url === "string") {
    url = (input as { url: string }).url;
  }
  const req: Record<string, unknown> = {};
  const given = (init ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    const v = given[key];
    if (FETCH_IGNORED.has(key) || v === undefined) continue;
    if (key === "headers") {
      req.headers = v instanceof NativeHeaders ? [...v.entries()] : v;
    } else if (key === "body") {
      if (v === null || typeof v === "string") req.body = v;
      else if (v instanceof NativeUint8Array) { req.body = toBase64(v); req.bodyEncoding = "base64"; }
      else if (v instanceof NativeArrayBuffer) { req.body = toBase64(new NativeUint8Array(v)); req.bodyEncoding = "base64"; }
      else if (ArrayBuffer.isView(v)) {
        req.body = toBase64(new NativeUint8Array(v.buffer, v.byteOffset, v.byteLength));
        req.bodyEncoding = "base64";
      } else if (v instanceof URLSearchParams) req.body = v.toString();
      else throw new TypeError("ctx.http.fetch: body must be a string, Uint8Array, ArrayBuffer or URLSearchParams");
    } else req[key] = v;
  }
  return [url, req];
}

type FetchReply = { status: number; statusText: string; ok: boolean; url: string;
  redirected: boolean; headers: [string, string][]; body: string;
  credentialDenied?: { reason: string; host: string } };

function makeResponse(r: FetchReply) {
  const bytes = fromBase64(r.body);
  let used = false;
  const take = () => {
    if (used) throw new TypeError("Body has already been consumed");
    used = true;
    return bytes;
  };
  return Object.freeze({
    status: r.status, statusText: r.statusText, ok: r.ok, url: r.url, redirected: r.redirected,
    headers: new NativeHeaders(r.headers),
    get bodyUsed() { return used; },
    text: async () => new NativeTextDecoder().decode(take()),
    json: async () => parseJSON(new NativeTextDecoder().decode(take())),
    arrayBuffer: async () => take().slice().buffer,
    bytes: async () => take().slice(),
    ...(r.credentialDenied ? { credentialDenied: r.credentialDenied } : {}),
  });
}

function ctxError(error: { code: string; message: string; details?: unknown }, origin: Error): Error {
  const e = new Error(error.message) as Error & { code: string; details?: unknown };
  e.name = "CtxError";
  e.code = error.code;
  e.details = error.details;
  e.stack = `CtxError: ${error.message}\n${(origin.stack ?? "").split("\n").slice(1).join("\n")}`;
  return e;
}

function makeCtx(callId: string, meta: Record<string, unknown>) {
  const call = (method: string, args: unknown[]) =>
    new NativePromise((resolve, reject) => {
      const n = ++seq;
      pending[n] = { resolve, reject, origin: new Error() };
      post({ t: "ctx", id: callId, seq: n, method, args: args.map((a) => a === undefined ? null : a) });
    });
  const ns = (prefix: string, names: string[], ...bound: unknown[]) =>
    Object.freeze(Object.fromEntries(names.map((m) => [m, (...args: unknown[]) =>
      call(`${prefix}.${m}`, [...bound, ...args])])));
  // meta.email (set by the bench from the manifest, E1) is the only way ctx.email exists:
  // a tool without the permission finds it undefined, as on the platform
  // meta.resources likewise (R1): ctx.resources exists only when the manifest declares resources
  const { email, resources, ...rest } = meta;
  return Object.freeze({
    ...rest,
    ...(email === true ? { email: ns("email", ["listSince", "getMessage"]) } : {}),
    ...(resources === true ? { resources: ns("resources", ["path"]) } : {}),
    files: ns("files", ["list", "stat", "read", "write", "mkdir", "move", "delete"]),
    // ctx.http.fetch(url, init) -> Response-like (+ credentialDenied); permission checked in Python
    http: Object.freeze({
      fetch: async (input: unknown, init?: unknown) =>
        makeResponse(await call("http.fetch", fetchArgs(input, init)) as FetchReply),
    }),
    // ctx.extract(path, options?) -> { text, mimeType, pages? } (the workbench's reading)
    extract: (path: unknown, options?: unknown) => call("extract", [path, options]),
    // collection() is synchronous on the platform: the ctx layer checks the name (D1) on use
    data: Object.freeze({
      collection: (name: string) =>
        ns("data", ["insert", "get", "update", "delete", "find", "count"], name),
    }),
    storage: Object.freeze({
      kv: ns("storage.kv", ["get", "set", "delete", "list"]),
      sql: ns("storage.sql", ["query", "execute"]),
    }),
  });
}

function describe(err: unknown) {
  if (err instanceof Error) {
    return { name: err.name, message: err.message, stack: err.stack ?? "",
             code: (err as { code?: unknown }).code ?? null };
  }
  return { name: typeof err, message: String(err), stack: "", code: null };
}

async function run(msg: { id: string; file: string; input: unknown; meta?: Record<string, unknown> }) {
  try {
    const mod = await import(new NativeURL(`file://${msg.file}`).href);
    const fn = mod.default ?? mod.handle;
    if (typeof fn !== "function") {
      throw new TypeError("the tool module has no default export function (export default async function (input, ctx) {...})");
    }
    const value = await fn(msg.input, makeCtx(msg.id, msg.meta ?? {}));
    let json: string | undefined;
    try {
      json = stringify(value);
    } catch (err) {
      post({ t: "done", id: msg.id, ok: false, error: { ...describe(err), name: "ResultError" } });
      return;
    }
    json ??= "null"; // undefined (or a function) serialises to nothing: the caller sees null
    post({ t: "done", id: msg.id, ok: true, json });
  } catch (err) {
    post({ t: "done", id: msg.id, ok: false, error: describe(err) });
  }
}

function onRpc(e: MessageEvent) {
  const msg = e.data;
  if (msg.t === "call") {
    run(msg);
  } else if (msg.t === "reply") {
    const p = pending[msg.seq];
    delete pending[msg.seq];
    if (!p) return;
    if (msg.ok) p.resolve(msg.value);
    else p.reject(ctxError(msg.error, p.origin));
  }
}

// The first message on the global port carries the RPC port; nothing else is read there.
self.onmessage = (e: MessageEvent) => {
  const port = e.ports[0];
  self.onmessage = null;
  post = port.postMessage.bind(port);
  port.onmessage = onRpc;
};
