// The channel to the host: two SharedArrayBuffers, one each way, sent on the global port before
// any tool code runs and then held only here. Nothing arrives as a MessageEvent (a tool may
// patch its prototype); the Worker waits with Atomics.waitAsync.
import { atomicsLoad, atomicsNotify, atomicsStore, call0, data, decode, encode, NativeInt32Array,
  NativeUint8Array, objectCreate, own, parseJSON, ReflectApply, ReflectDelete, safeStringify, taBuffer,
  taByteLength, taByteOffset, TypedArrayProto, waitAsync } from "./primordials.ts";

// SharedArrayBuffer layout, written by the host: [generation, ack, header bytes (-1: this chunk
// continues the payload), payload bytes in all, chunk bytes], then the header and the chunk
const GEN = 0, ACK = 1, HLEN = 2, PLEN = 3, CLEN = 4, DATA = 32;
// in the second buffer only (see leftoversDue, idle)
const IDLE = 5, RECYCLE = 6;
const taSet = TypedArrayProto.set;

type Dispatch = (msg: Record<string, unknown>, payload: Uint8Array) => void;

async function receive(sab: SharedArrayBuffer, dispatch: Dispatch): Promise<void> {
  const ctrl = new NativeInt32Array(sab, 0, DATA / 4);
  let seen = 0, filled = 0;
  let head: Uint8Array | null = null, payload = new NativeUint8Array(0);
  for (;;) {
    const w = waitAsync(ctrl, GEN, seen);
    if (w.async) await own(w.value);
    const gen = atomicsLoad(ctrl, GEN);
    if (gen === seen) continue; // woken with nothing new (a timeout, a spurious wake): no replay
    seen = gen;
    const hlen = atomicsLoad(ctrl, HLEN), plen = atomicsLoad(ctrl, PLEN);
    const clen = atomicsLoad(ctrl, CLEN);
    if (hlen >= 0) { // a new message; copies (not shared): decode refuses shared memory
      head = new NativeUint8Array(new NativeUint8Array(sab, DATA, hlen));
      payload = new NativeUint8Array(plen);
      filled = 0;
    }
    ReflectApply(taSet, payload, [new NativeUint8Array(sab, DATA + (hlen > 0 ? hlen : 0), clen), filled]);
    filled += clen;
    atomicsStore(ctrl, ACK, seen);
    atomicsNotify(ctrl, ACK);
    if (filled < plen || head === null) continue;
    const header = head;
    head = null;
    try {
      dispatch(parseJSON(decode(header)), payload);
    } catch {
      // a malformed message from the host: nothing to answer
    }
  }
}

// Messages to the host: a header (JSON) and a payload, written into the second buffer in the
// same layout, one chunk at a time (the next once the host copied it out). A shared buffer, not
// postMessage: a structured clone and a wake of the host's loop per message cost twice as much
// per hop (tests/bench: deno_ctx_round_trip). The queue has no prototype (no Array setter runs).
const CHUNK = 1 << 20;
type Outgoing = { head: Uint8Array; payload: Uint8Array; quiet: boolean };
const outbox: Record<number, Outgoing> = objectCreate(null);
let outHead = 0, outTail = 0, outGen = 0, sending = false;
let back: { ctrl: Int32Array; data: Uint8Array } | null = null;
// A top call's end that left no ctx call waiting (send's `quiet`) is not notified at once but
// by idle(), once what the call left was cleared: the host then wakes once, finding the call's
// end and the Worker idle, instead of twice (once for the end, once more in its wait for idle:
// a futex sleep and wake per call, ~10 µs of a warm call on 2 cores). Only then: idle() does
// not wait for the host (with a ctx call waiting it would: a nested call's end, say, that the
// host must see first). A Worker that never comes back idle (a flood) delays the end by the
// host's SYNC_MS: its wait looks again then (host.ts waitChange).
let notifyOwed = false;

export function send(header: Record<string, unknown>, payload: Uint8Array, quiet = false): void {
  outbox[outTail++] = { __proto__: null, head: encode(safeStringify(header) as string), payload,
                        quiet } as unknown as Outgoing;
  if (!sending) flush();
}

async function flush(): Promise<void> {
  const b = back;
  if (b === null) return;
  sending = true;
  try {
    while (outHead < outTail) {
      const { head, payload, quiet } = outbox[outHead];
      ReflectDelete(outbox, outHead++);
      const hlen = call0(taByteLength, head) as number, plen = call0(taByteLength, payload) as number;
      const buf = call0(taBuffer, payload) as ArrayBuffer, base = call0(taByteOffset, payload) as number;
      let off = 0;
      do {
        for (let ack; (ack = atomicsLoad(b.ctrl, ACK)) !== outGen;) {
          const w = waitAsync(b.ctrl, ACK, ack, 1000);
          if (w.async) await own(w.value);
        }
        if (off === 0) ReflectApply(taSet, b.data, [head, DATA]);
        const n = plen - off < CHUNK ? plen - off : CHUNK;
        ReflectApply(taSet, b.data, [new NativeUint8Array(buf, base + off, n), DATA + (off === 0 ? hlen : 0)]);
        atomicsStore(b.ctrl, HLEN, off === 0 ? hlen : -1);
        atomicsStore(b.ctrl, PLEN, plen);
        atomicsStore(b.ctrl, CLEN, n);
        atomicsStore(b.ctrl, GEN, ++outGen);
        off += n;
        // (IDLE is 0 if idle() ran before this was written: notified now, as any)
        if (off >= plen && quiet && atomicsLoad(b.ctrl, IDLE) === 1) notifyOwed = true;
        else atomicsNotify(b.ctrl, GEN);
      } while (off < plen);
    }
  } finally {
    sending = false;
  }
}

// The buffers the host sent (the first message on the global port): messages from now on
export function openChannel(sab: SharedArrayBuffer, backSab: SharedArrayBuffer, dispatch: Dispatch): void {
  back = { ctrl: new NativeInt32Array(backSab, 0, DATA / 4), data: new NativeUint8Array(backSab) };
  receive(sab, dispatch);
}

// A top call ended: the host waits for idle() before the next message (IDLE is 1 until then).
// False before the channel is open.
export function leftoversDue(): boolean {
  if (back === null) return false;
  atomicsStore(back.ctrl, IDLE, 1);
  return true;
}

// What the top call left is cleared: the Worker is idle; `recycle`: the process must end
export function idle(recycle: boolean): void {
  if (back === null) return;
  if (recycle) atomicsStore(back.ctrl, RECYCLE, 1);
  atomicsStore(back.ctrl, IDLE, 0);
  atomicsNotify(back.ctrl, IDLE);
  if (notifyOwed) { // the top call's end, written before (see notifyOwed)
    notifyOwed = false;
    atomicsNotify(back.ctrl, GEN);
  }
}
