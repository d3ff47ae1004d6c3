// A tool's ctx calls: each one's arguments made JSON text in the tool's call, sent to the host,
// and settled by its reply; what one call may have in flight; which calls are running (their ctx
// may be used), and which ctx calls of theirs are still waiting.
import { send } from "./channel.ts";
import { ctxError, type CtxErrorData, describe, rejected } from "./errors.ts";
import { append, call0, decode, encode, NativeError, NativePromise, objectCreate, objectKeys, own,
  parseJSON, ReflectDelete, resolveWith, safeStringify, taByteLength } from "./primordials.ts";

// Pending ctx calls, in a table without a prototype (no Map.prototype.set to hook).
// `origin` is made where the tool calls ctx, so a ctx error carries the tool's own frames.
type Pending = { resolve: (v: unknown) => void; reject: (e: unknown) => void; origin: Error;
  bytes: number; gen: number; call: string; method: string };
const pending: Record<number, Pending> = objectCreate(null);
let seq = 0;
// What one call may have in flight (SEC5): ctx calls fired without awaiting them each keep
// their arguments in the host's write queue until Python has read them, outside the V8 heap
// that memory_mb bounds. So at most MAX_INFLIGHT requests and INFLIGHT_FACTOR x
// bridge_message_bytes of arguments are outstanding per call; a ctx call beyond either rejects
// at once with E_TOO_LARGE (details: inflight, inflightBytes, limit), and the tool may retry
// once earlier ones settled. Counted per call: a new call starts from zero.
const MAX_INFLIGHT = 1024;
const INFLIGHT_FACTOR = 4;
let inflight = 0, inflightBytes = 0, callGen = 0;
// the calls whose ctx may be used now: a ctx kept from an ended call is refused. More than one
// when a tool's ctx.tools call runs another JS/TS tool of the gem here (nested, A3).
const activeCalls: Record<string, true> = objectCreate(null);
let activeCount = 0;
let limit = 64 * 1024 * 1024; // bridge_message_bytes of the current call

// Methods the platform does not wait for (codec "void": Ekanos' logger): never "late"
export const FIRE_AND_FORGET: Record<string, true> = { __proto__: null } as unknown as Record<string, true>;

// Parameter names, for errors that name an argument: filled from each call's ctx shape
export const PARAMS: Record<string, string[]> = { __proto__: null } as unknown as Record<string, string[]>;

function argName(method: string, i: number): string {
  const names = PARAMS[method];
  const name = names !== undefined && i < names.length ? names[i] : undefined;
  return name === undefined ? `argument ${i + 1}` : `argument ${i + 1} (${name})`;
}

// One ctx call: the arguments become JSON text here, in the tool's call, so a BigInt, a cycle
// or an oversized value is an error the tool can catch, not a message the host cannot send.
export function ctxCall(callId: string, method: string, args: unknown[]): Promise<unknown> {
  const origin = new NativeError();
  if (activeCalls[callId] !== true) {
    return rejected("E_STATE", `${method}: this ctx belongs to a call that has ended; a tool ` +
                    "uses the ctx of the call it is running in", origin, { method });
  }
  let text: string;
  try {
    text = safeStringify(args) as string;
  } catch (err) {
    let i = 0;
    for (; i < args.length; i++) {
      try { safeStringify(args[i]); } catch { break; }
    }
    const which = i < args.length ? argName(method, i) : "its arguments";
    return rejected("E_INVALID_ARGUMENT", `${method}: ${which} cannot be sent as JSON: ` +
                    `${describe(err).message}`, origin, { method, argument: i + 1 });
  }
  const bytes = encode(text);
  const size = call0(taByteLength, bytes) as number;
  if (size > limit) {
    return rejected("E_TOO_LARGE", `${method}: the arguments are ${size} bytes as JSON; one ` +
                    `message to the workbench holds at most ${limit} bytes`, origin,
                    { method, size, limit });
  }
  if (inflight >= MAX_INFLIGHT || inflightBytes + size > INFLIGHT_FACTOR * limit) {
    return rejected("E_TOO_LARGE", `${method}: ${inflight} ctx calls (${inflightBytes} bytes of ` +
                    `arguments) are still in flight in this call; at most ${MAX_INFLIGHT} calls and ` +
                    `${INFLIGHT_FACTOR * limit} bytes (${INFLIGHT_FACTOR} x bridge_message_bytes) ` +
                    "may be: await some before sending more", origin,
                    { method, inflight, inflightBytes, size, limit: INFLIGHT_FACTOR * limit });
  }
  inflight++;
  inflightBytes += size;
  const gen = callGen;
  return own(new NativePromise((resolve, reject) => {
    const n = ++seq;
    pending[n] = { __proto__: null, resolve, reject, origin, bytes: size, gen, call: callId,
                   method } as unknown as Pending;
    send({ t: "ctx", id: callId, seq: n, method }, bytes);
  }));
}

// A call starts (a top call, or one nested in the running one): true for a top call, which
// starts the in-flight count anew (a nested one shares it)
export function beginCall(id: string, callLimit: number): boolean {
  limit = callLimit;
  const top = activeCount === 0;
  if (top) {
    callGen++;
    inflight = 0;
    inflightBytes = 0;
  }
  if (activeCalls[id] !== true) {
    activeCalls[id] = true;
    activeCount++;
  }
  return top;
}

// A call ended: true when it was the last one running (a top call ended)
export function endCall(id: string): boolean {
  if (activeCalls[id] !== true) return false;
  ReflectDelete(activeCalls, id);
  activeCount--;
  return activeCount === 0;
}

// The calls running now (a top call and those nested in it)
export function running(): number {
  return activeCount;
}

// Some ctx call still waits for its reply (a top call's continuations may still run)
export function waiting(): boolean {
  return objectKeys(pending).length > 0;
}

// The host's reply to ctx call `seq`: its promise settles (a value, or a CtxError)
export function onReply(msg: Record<string, unknown>, payload: Uint8Array): void {
  const n = msg.seq as number;
  const p = pending[n];
  ReflectDelete(pending, n);
  if (!p) return;
  if (p.gen === callGen) {
    inflight--;
    inflightBytes -= p.bytes;
  }
  let value: unknown;
  try {
    value = parseJSON(decode(payload));
  } catch (err) {
    p.reject(ctxError({ code: "E_INTERNAL", message: `the reply cannot be read: ${describe(err).message}`,
                        details: null }, p.origin));
    return;
  }
  if (msg.ok === true) resolveWith(p.resolve, value);
  else p.reject(ctxError(value as CtxErrorData, p.origin));
}

// The ctx calls of call `id` still waiting for their reply when it returned: a forgotten
// `await` (the platform may end the call before they complete). At most 5 names, and how many.
export function late(id: string): unknown[] {
  const names: unknown[] = [];
  let count = 0;
  const seqs = objectKeys(pending);
  for (let i = 0; i < seqs.length; i++) {
    const p = pending[seqs[i] as unknown as number];
    if (p.call !== id || FIRE_AND_FORGET[p.method] === true) continue;
    if (count++ < 5) append(names, p.method);
  }
  return count ? [count, names] : [];
}
