// ctx.http.fetch (N10) and Ekanos' ctx.fetch (K6).
// The request crosses as plain JSON (bytes as base64), the reply comes back as {status,
// statusText, ok, url, redirected, headers: [[k, v]], body: base64, credentialDenied?} and is
// turned into a Response-like object here.
// Fetch API init options that mean nothing through ctx: accepted and ignored
import { ctxCall } from "./ctxcall.ts";
import { abByteLength, append, b64decode, b64encode, call0, charCodeAt, data, decode, defineProperty,
  freeze, fromCharCode, hasOwn, headersAppend, headersEntries, headersIterNext, isA, isView,
  NativeArrayBuffer, NativeHeaders, NativePromise, nativeRequest, nativeResponse, NativeTypeError,
  NativeUint8Array, NativeURL, NativeURLSearchParams, objectKeys, own, parseJSON, promiseOf, promiseThen,
  ReflectApply, resolveWith, safeGet, searchToString, taBuffer, taByteLength, taByteOffset, urlHref } from "./primordials.ts";
const FETCH_IGNORED: Record<string, true> = {
  __proto__: null as unknown as true, signal: true, mode: true, credentials: true, cache: true,
  integrity: true, keepalive: true, priority: true, referrer: true, referrerPolicy: true,
  window: true, duplex: true,
};

function toBase64(view: Uint8Array): string {
  let s = "";
  const buf = call0(taBuffer, view), off = call0(taByteOffset, view) as number;
  const len = call0(taByteLength, view) as number;
  for (let i = 0; i < len; i += 0x8000) {
    const part = new NativeUint8Array(buf as ArrayBuffer, off + i, len - i < 0x8000 ? len - i : 0x8000);
    s += ReflectApply(fromCharCode, null, part as unknown as number[]);
  }
  return b64encode(s);
}

function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  const bin = b64decode(text);
  const out = new NativeUint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = ReflectApply(charCodeAt, bin, [i]) as number;
  return out;
}

function fetchArgs(input: unknown, init: unknown): unknown[] {
  if (isA(input, nativeRequest())) { // its body is a stream: not carried; say so, not a silent GET
    throw new NativeTypeError("fetch(request): a Request object is not supported by ctx's fetch; " +
                              "pass the URL and an init object: fetch(url, { method, headers, body })");
  }
  let url: unknown = input;
  if (isA(input, NativeURL)) url = call0(urlHref, input);
  else if (input !== null && typeof input === "object" && typeof safeGet(input, "url") === "string") {
    url = safeGet(input, "url");
  }
  const req: Record<string, unknown> = {};
  const given = (init ?? {}) as Record<string, unknown>;
  const names = objectKeys(given);
  for (let k = 0; k < names.length; k++) {
    const key = names[k];
    const v = given[key];
    if (FETCH_IGNORED[key] || v === undefined) continue;
    if (key === "headers") {
      if (isA(v, NativeHeaders)) {
        const list: unknown[] = [];
        const it = call0(headersEntries, v);
        for (let r = call0(headersIterNext, it) as { done: boolean; value: unknown };
          !r.done; r = call0(headersIterNext, it) as { done: boolean; value: unknown }) append(list, r.value);
        defineProperty(req, "headers", data(list, true));
      } else defineProperty(req, "headers", data(v, true));
    } else if (key === "body") {
      let body: unknown, base64 = true;
      if (v === null || typeof v === "string") { body = v; base64 = false; }
      else if (isA(v, NativeUint8Array)) body = toBase64(v as Uint8Array);
      else if (isA(v, NativeArrayBuffer)) body = toBase64(new NativeUint8Array(v as ArrayBuffer, 0, call0(abByteLength, v) as number));
      else if (isView(v)) body = toBase64(new NativeUint8Array(call0(taBuffer, v) as ArrayBuffer, call0(taByteOffset, v) as number, call0(taByteLength, v) as number));
      else if (isA(v, NativeURLSearchParams)) { body = call0(searchToString, v); base64 = false; }
      else throw new NativeTypeError("ctx.http.fetch: body must be a string, Uint8Array, ArrayBuffer or URLSearchParams");
      defineProperty(req, "body", data(body, true));
      if (base64) defineProperty(req, "bodyEncoding", data("base64", true));
    } else defineProperty(req, key, data(v, true));
  }
  return [url, req];
}

type FetchReply = { status: number; statusText: string; ok: boolean; url: string;
  redirected: boolean; headers: [string, string][]; body: string;
  credentialDenied?: { reason: string; host: string } };

function makeResponse(r: FetchReply) {
  const bytes = fromBase64(r.body);
  const headers = new NativeHeaders();
  for (let i = 0; i < r.headers.length; i++) {
    ReflectApply(headersAppend, headers, [r.headers[i][0], r.headers[i][1]]);
  }
  let used = false;
  const take = () => {
    if (used) throw new NativeTypeError("Body has already been consumed");
    used = true;
    return new NativeUint8Array(bytes); // a copy: the tool owns it
  };
  const res = {
    status: r.status, statusText: r.statusText, ok: r.ok, url: r.url, redirected: r.redirected,
    headers,
    get bodyUsed() { return used; },
    text: () => promiseOf(() => decode(take())),
    json: () => promiseOf(() => parseJSON(decode(take()))),
    arrayBuffer: () => promiseOf(() => call0(taBuffer, take())),
    bytes: () => promiseOf(take),
  };
  if (hasOwn(r, "credentialDenied")) defineProperty(res, "credentialDenied", data(r.credentialDenied, true));
  return res; // frozen once resolved (resolveWith shadows `then` on it meanwhile)
}

// A real Response (Ekanos' ctx.fetch, K6) from the reply; url and redirected as own values
const NULL_BODY: Record<number, true> = { __proto__: null, 101: true, 103: true, 204: true, 205: true, 304: true } as unknown as Record<number, true>;

function realResponse(r: FetchReply): Response {
  const headers = new NativeHeaders();
  for (let i = 0; i < r.headers.length; i++) {
    ReflectApply(headersAppend, headers, [r.headers[i][0], r.headers[i][1]]);
  }
  const status = r.status >= 200 && r.status <= 599 ? r.status : 502; // 1xx is never final
  const res = new (nativeResponse())(NULL_BODY[status] ? null : fromBase64(r.body),
                                 { status, statusText: r.statusText, headers });
  defineProperty(res, "url", data(r.url, true));
  defineProperty(res, "redirected", data(r.redirected, true));
  return res;
}

// ctx.http.fetch(url, init) -> Response-like (+ credentialDenied); permission checked in Python.
// codec "response": a real Response instead (not frozen: a Response is the tool's to use).
export function fetchMethod(callId: string, name: string, codec: string) {
  return (input: unknown, init?: unknown) => {
    let args: unknown[];
    try {
      args = fetchArgs(input, init);
    } catch (err) {
      return own(new NativePromise((_, reject) => reject(err)));
    }
    return own(new NativePromise((resolve, reject) => {
      ReflectApply(promiseThen, ctxCall(callId, name, args), [
        (r: unknown) => {
          try {
            if (codec === "response") {
              resolveWith(resolve, realResponse(r as FetchReply));
              return;
            }
            const res = makeResponse(r as FetchReply);
            resolveWith(resolve, res);
            freeze(res);
          } catch (err) { reject(err); }
        }, reject]);
    }));
  };
}
