// Runs inside the sandboxed Worker: imports the tool, builds `ctx`, runs its call (and the calls
// nested in it: a tool calling another JS/TS tool of the gem through ctx.tools).
// ctx methods send {t:"ctx"} to the host, which forwards them to the Python ctx layer.
// This is the entry module; the host runs the bundle of it and the modules it imports
// (bundle.py: one source, one module, in the order ES modules would run).
//
// Tool code shares this realm and may patch any global or prototype, in one call, for the next
// ones (reuse, N5). So the bridge (these modules) takes every built-in it uses before any tool
// runs and never reaches a tool-patchable prototype while it carries a call (SEC):
// - nothing arrives as a MessageEvent: an accessor planted on MessageEvent.prototype (or any
//   setter the event's constructor assigns through) saw the event, whose target is the port.
//   The host writes calls and replies into a SharedArrayBuffer that only channel.ts holds; the
//   worker waits with Atomics.waitAsync. It writes its messages into a second one the same way.
// - no method calls on arrays, strings, promises or typed arrays (`args.map`, `.then`, spreads
//   and iterators, `.subarray`'s species lookup): captured functions called with ReflectApply;
// - objects the bridge makes and passes to built-ins (property descriptors) have no prototype;
// - values are resolved without a `then` lookup reaching a built-in prototype, promises awaited
//   without a `constructor` lookup, and JSON.stringify runs with toJSON planted on built-in
//   prototypes (Object, Array, ...) set aside: it would see and replace another call's data.
// The modules run in the order imported here: the runtime's internals removed, the built-ins
// taken (primordials.ts) and replaced (confine.ts, clock.ts, random.ts), before any tool code.
import "../internals.ts"; // first: the runtime's internals removed before anything else runs
import { atomicsNotify, encode, NativeInt32Array, ReflectApply, removePlantedThen, waitAsync,
  whenSettled } from "./primordials.ts";
import { clearTracked, later } from "./confine.ts";
import { clockFrom, clockReads } from "./clock.ts";
import { seedFrom } from "./random.ts";
import { idle, leftoversDue, openChannel, send } from "./channel.ts";
import { describe } from "./errors.ts";
import { beginCall, endCall, late, onReply, running, waiting } from "./ctxcall.ts";
import { keepShape } from "./ctx.ts";
import { type CallCtx, type End, fail, run } from "./run.ts";

// `fn` in a task of its own, so after every microtask queued before (none runs while one is
// queued: a flood never lets it run). An Atomics.waitAsync on a cell only this module holds,
// woken at once: its promise settles in a task (~20 µs; a setTimeout(0) took 2 ms a call).
const probeCell = new NativeInt32Array(new SharedArrayBuffer(4));
function afterMicrotasks(fn: () => void): void {
  const w = waitAsync(probeCell, 0, 0);
  atomicsNotify(probeCell, 0);
  if (w.async) whenSettled(w.value, fn, fn);
  else fn();
}

// Once the top call ended and the microtasks it left ran: clear what it left, then tell the
// host (channel.ts idle). Re-armed while ctx replies the call did not wait for are still due:
// their continuations run first.
function clearLeftovers(): void {
  if (running() > 0) return; // a call started since: its own end clears
  if (waiting()) {
    later(clearLeftovers, 1);
    return;
  }
  idle(clearTracked());
}

// Call `id` ended: the host hears it (with a top call's clock reads, for its pin); a top call
// that left no ctx call waiting once it is idle (channel.ts notifyOwed)
function done(id: string, ok: boolean, text: string): void {
  const top = endCall(id) && leftoversDue();
  if (top) afterMicrotasks(clearLeftovers);
  const reads = running() === 0 ? clockReads() : null;
  send({ t: "done", id, ok, late: late(id), ...(reads !== null ? reads : {}) }, encode(text), top && !waiting());
}

function dispatch(msg: Record<string, unknown>, payload: Uint8Array): void {
  if (msg.t === "reply") return onReply(msg, payload);
  if (msg.t !== "call") return;
  const id = msg.id as string;
  let refused: unknown = null;
  if (beginCall(id, msg.limit as number)) { // a top call
    try { removePlantedThen(); } catch (e) { refused = e; }
    clockFrom(msg); // the clock and stream of this call and the calls nested in it
    seedFrom(msg);
  }
  const call = msg.ctx as CallCtx;
  keepShape(call); // kept now: the tool may not load this time
  const end: End = (ok, text) => done(id, ok, text);
  if (refused !== null) fail(end, describe(refused));
  else run(id, msg.file as string, payload, call, msg.resultChars as number, end);
}

// The first message on the global port carries the two shared buffers, before any tool code
// runs; nothing else is read there.
// (`self` is the Worker's global scope; Deno's default types call it a Window)
const scope = self as unknown as { onmessage: ((e: MessageEvent) => void) | null };
scope.onmessage = (e: MessageEvent) => {
  scope.onmessage = null;
  openChannel(e.data.sab as SharedArrayBuffer, e.data.back as SharedArrayBuffer, dispatch);
};
