// Gem Workbench sandbox host: one Deno process per gem (N3).
//
// The tool runs in a Worker whose permissions allow only reading the gem folder and its
// resources. This main module alone holds the RPC channel: two FIFOs (one each way) in a private
// folder the Python side made, which the worker has no permission to reach, removed once both
// ends are open. Tool output on stdout/stderr is only ever captured as logs, never parsed as
// protocol.
//
// The main thread waits by blocking, not through the event loop: it reads the FIFO with
// readSync and waits for the worker with Atomics.wait. A ctx call makes four hand-offs between
// threads (Worker -> main -> Python -> main -> Worker); an event-loop wake (epoll, a resolved
// promise) cost ~40 µs more per hand-off than a blocking one on 2 cores (tests/bench:
// deno_ctx_round_trip). This works because the conversation takes turns: Python writes only
// when the host waits for it (no call in flight, or every call in flight waits for Python's
// answer to a ctx call, or ended and waits for them), and the worker acts otherwise (see
// pythonsTurn). Waiting for the worker falls back to the event loop after SYNC_MS, so a worker's
// uncaught error (an event) still ends its calls.
//
// Protocol: a message is one JSON header line; a header with `n` is followed by exactly n bytes
// of payload (JSON text), which the host never parses: it moves between the channel and the
// worker as bytes (to the worker through a shared buffer, see startWorker). So a big input or
// file costs a few copies, not a scan of everything buffered per chunk read (SEC5).
//   python -> host  {t:"call", id, file (URL), fresh, nonce, ctx, limit, resultChars, n, clock?,
//                   seed?, ownSeed?, ticks?, wall?} + input (clock: [ms, frozen], seed: a uint32,
//                   ownSeed: the seed is the call's own, for its pin; ticks: a running clock's
//                   reads to serve again, wall: run on the wall time and report its reads and
//                   start; worker/clock.ts, random.ts)
//                   (ctx.shape is a number; ctx.shapeText its JSON text, the first time only)
//                   (also while another call is in flight: a nested call, nonce "")
//                   {t:"reply", id, seq, ok, n} + the value (ok) or {code, message, details}
//   host -> python  {t:"ready"}   {t:"ctx", id, seq, method, n} + the arguments (a list)
//                   {t:"done", id, ok, late, ticks?, start?, n} + the result (ok) or {name, message, stack, code,
//                   bridge?}: `bridge` ("ctx", "result_too_large", "result_error") is set only on
//                   what the Worker itself made; errors.py takes codes from it alone
// `limit` is bridge_message_bytes: the worker refuses bigger ctx arguments (E_TOO_LARGE) and
// results over `resultChars` (N9) before they are carried; Python checks what it sends.

// "--inspected" first (open(inspect=), lifecycle.py): the process runs Deno's inspector, whose
// messages to this main thread are answered only when its event loop runs: it then waits for
// Python's next message there (readFromPython), not in a blocking read
const inspected = Deno.args[0] === "--inspected";
const [inPath, outPath, parentPid, workerUrl, ...readable] = inspected ? Deno.args.slice(1) : Deno.args;
// Python gone (we were handed to another parent; its pid is an argument, as it may be gone
// before this line runs) ends this process, whatever the main thread waits for then: an open
// below, or the worker (a FIFO's end is seen only when it is read). The timer also keeps the
// event loop alive while it waits for the worker through Atomics.waitAsync (a notify comes as a
// V8 task, which does not).
const fifos = [inPath, outPath, inPath.slice(0, inPath.lastIndexOf("/"))];
const unlink = () => {
  for (const path of fifos) try { Deno.removeSync(path); } catch { /* gone already */ }
};
const alive = () => { if (String(Deno.ppid) !== parentPid) { unlink(); Deno.exit(0); } };
alive();
setInterval(alive, 500);
// Opened on the event loop, not with openSync: a FIFO's open blocks until its other end is open,
// and a Python gone before it opened its end must still end this process (above).
const input = await Deno.open(inPath, { read: true });
const output = await Deno.open(outPath, { write: true });
unlink(); // both ends are open: nobody may open them again (Python removes them too)
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const HEADER_LIMIT = 1 << 20; // headers are small; a longer line is a broken stream
const SYNC_MS = 5; // how long a wait for the worker blocks before it lets the event loop run
let limit = 64 * 1024 * 1024; // bridge_message_bytes, as the current call's limits say

function writeSyncAll(out: { writeSync(p: Uint8Array): number }, bytes: Uint8Array): void {
  for (let w = 0; w < bytes.length;) w += out.writeSync(bytes.subarray(w));
}

function send(header: Record<string, unknown>, payload?: Uint8Array): void {
  const head = encoder.encode(JSON.stringify(header) + "\n");
  try {
    if (payload && payload.length <= 1 << 16) { // one write for the usual small message
      const bytes = new Uint8Array(head.length + payload.length);
      bytes.set(head);
      bytes.set(payload, head.length);
      writeSyncAll(output, bytes);
    } else {
      writeSyncAll(output, head);
      if (payload) writeSyncAll(output, payload);
    }
  } catch {
    Deno.exit(0); // the Python side is gone
  }
}

// Until ia[i] is no longer `value`: blocking first (the cheapest wake), then, after SYNC_MS,
// through the event loop, where a worker's error event can arrive (stopWorker then wakes this).
// There it looks again every SYNC_MS: a top call's end may be written before it is notified
// (worker/channel.ts, notifyOwed), and a Worker that never comes back idle never notifies it.
async function waitChange(ia: Int32Array, i: number, value: number): Promise<void> {
  if (Atomics.wait(ia, i, value, SYNC_MS) !== "timed-out") return;
  for (;;) {
    const r = Atomics.waitAsync(ia, i, value, SYNC_MS);
    if (!r.async || await r.value !== "timed-out" || Atomics.load(ia, i) !== value) return;
  }
}

const workerPermissions = {
  read: readable, write: false, net: false, env: false, run: false, ffi: false, sys: false,
  import: false,
};
type Sandboxed = { w: Worker; ctrl: Int32Array; data: Uint8Array; gen: number;
  back: Int32Array; backData: Uint8Array; shapes: Set<number>;
  // the top call written last, with the generation of its last chunk (see onerror)
  top: { msg: any; payload: Uint8Array; gen: number } | null;
  // the message being read from the worker's buffer (see fromWorker)
  seen: number; filled: number; plen: number; head: Uint8Array | null; payload: Uint8Array | null };
// the ctx shapes' texts by number, as Python sent them: each Worker gets a text once
const shapes = new Map<number, string>();
let worker: Sandboxed | null = null;
// The calls in flight: a tool's ctx.tools call runs another tool of the gem in this worker while
// the caller waits (nested, A3), so more than one may be. Each has its log nonce ("" for a nested
// call, whose output is its top call's), its ctx calls Python has not answered yet, and its end
// once the worker reported it (see settle).
type Call = { nonce: string; pending: number; done: [boolean, Uint8Array] | null; late: unknown[];
  ticks?: unknown[]; start?: number };
const active = new Map<string, Call>();
// SharedArrayBuffer layout (see worker/channel.ts): [generation, ack, header bytes (-1: a continuation),
// payload bytes in all, chunk bytes] then the header and a chunk of the payload. A payload
// travels in chunks of at most CHUNK bytes, so the buffer stays small whatever the message.
// One buffer each way: the host writes calls and replies into one, the worker its ctx calls and
// ends into the other.
const GEN = 0, ACK = 1, HLEN = 2, PLEN = 3, CLEN = 4, DATA = 32;
const CHUNK = 1 << 20;
// In the worker's buffer: IDLE is 1 from a top call's end until the worker cleared what the
// call left running (worker/main.ts clearLeftovers); RECYCLE, that the process must end.
const IDLE = 5, RECYCLE = 6;
// How much CPU the process may burn after a top call before its worker is back idle: a
// microtask flood (or a loop in a timer that fired after the call returned) never is, and no
// Worker.terminate() stops it (worker/confine.ts), so the process ends with RECYCLED and Python starts a
// fresh one for the next call. Counted in CPU time, not wall time: on a loaded machine a worker
// that was not scheduled yet is not taken for a busy one (IDLE_WAIT_MS is the wall-clock cap).
const IDLE_CPU_MS = 100, IDLE_WAIT_MS = 2000, IDLE_POLL_MS = 10;
const RECYCLED = 75; // sandbox.py RECYCLED (a test compares them)
let idleOwed = false; // a top call was reported: see idle() before reading the next message

// Whether the worker came back idle (in time, and with nothing that needs a new process), or
// ended (an uncaught error left by the call: onerror, on the event loop, stopped it). Blocking
// first, as waitChange does, then on the event loop, where that error event can arrive.
async function idle(sb: Sandboxed | null): Promise<boolean> {
  if (sb !== null && Atomics.wait(sb.back, IDLE, 1, SYNC_MS) === "timed-out") {
    // node:process for cpuUsage (getrusage, no permission needed), imported only now: it costs
    // 20 ms, which a start that imported it always paid
    const { default: process } = await import("node:process");
    const until = performance.now() + IDLE_WAIT_MS, cpu = process.cpuUsage();
    const burnt = () => { const d = process.cpuUsage(cpu); return (d.user + d.system) / 1000; };
    while (worker === sb && Atomics.load(sb.back, IDLE) !== 0 && burnt() < IDLE_CPU_MS &&
           performance.now() < until) {
      const r = Atomics.waitAsync(sb.back, IDLE, 1, IDLE_POLL_MS);
      if (r.async) await r.value;
    }
  }
  return idleNow(sb);
}

// Whether the worker is idle now, with nothing that needs a new process (or gone): the usual
// case once a call's end was reported (worker/channel.ts notifies that end once it is idle),
// answered without the async idle()'s promise
function idleNow(sb: Sandboxed | null): boolean {
  return sb === null || worker !== sb ||
    (Atomics.load(sb.back, IDLE) === 0 && Atomics.load(sb.back, RECYCLE) === 0);
}

function startWorker(): Sandboxed {
  const w = new Worker(workerUrl, { type: "module", deno: { permissions: workerPermissions } });
  // The worker's global port is the tool's too (self.postMessage, self.onmessage): a tool that
  // listened there saw the next call's id and could post its "done". Both directions go
  // through SharedArrayBuffers sent first, before any tool code runs, and then held only
  // inside worker/channel.ts; what arrives on the global port is dropped. The worker receives no
  // MessageEvent, whose prototype tool code could have patched to see the event.
  const sab = new SharedArrayBuffer(DATA + HEADER_LIMIT + CHUNK);
  const back = new SharedArrayBuffer(DATA + HEADER_LIMIT + CHUNK);
  w.postMessage({ t: "buffers", sab, back });
  w.onmessage = () => {};
  w.onerror = (e: ErrorEvent) => {
    e.preventDefault();
    if (worker !== sb) return; // one stopped already: its calls were settled then
    // An uncaught error ends the worker's event loop: a call it never read whole did not cause it.
    // The error came from what an earlier call left running (a timer), and came late because
    // this thread waited blocking meanwhile: that call runs in a fresh worker instead (the
    // error is in its logs, as the process prints it); the calls the worker was running fail.
    const top = sb.top;
    stopWorker();
    if (top && Atomics.load(sb.ctrl, ACK) < top.gen && active.size === 1 && active.has(top.msg.id)) {
      active.delete(top.msg.id);
      onMessage(top.msg, top.payload);
    } else failAll(e.message);
  };
  const sb: Sandboxed = {
    w, ctrl: new Int32Array(sab, 0, DATA / 4), data: new Uint8Array(sab), gen: 0,
    back: new Int32Array(back, 0, DATA / 4), backData: new Uint8Array(back),
    shapes: new Set<number>(), top: null, seen: 0, filled: 0, plen: 0, head: null, payload: null,
  };
  return sb;
}

// The next chunk the worker wrote into the second buffer, once there is one; a whole message
// goes to onWorkerMessage. A payload over the limit is not kept (its chunks are acknowledged
// and dropped): the worker refuses those itself, this only guards the host's memory.
async function fromWorker(sb: Sandboxed): Promise<void> {
  const { back, backData } = sb;
  await waitChange(back, GEN, sb.seen);
  if (worker !== sb) return; // stopped (stopWorker woke it): a new worker has its own buffers
  const gen = Atomics.load(back, GEN);
  if (gen === sb.seen) return;
  sb.seen = gen;
  const hlen = Atomics.load(back, HLEN), clen = Atomics.load(back, CLEN);
  const start = DATA + Math.max(hlen, 0);
  if (hlen >= 0) {
    sb.plen = Atomics.load(back, PLEN);
    sb.head = hlen <= HEADER_LIMIT ? backData.slice(DATA, DATA + hlen) : null;
    sb.payload = sb.plen <= limit ? new Uint8Array(sb.plen) : null;
    sb.filled = 0;
  }
  const n = Math.max(0, Math.min(clen, sb.plen - sb.filled, backData.length - start));
  sb.payload?.set(backData.subarray(start, start + n), sb.filled);
  sb.filled += n;
  Atomics.store(back, ACK, gen);
  Atomics.notify(back, ACK);
  if (sb.filled < sb.plen || sb.head === null) return;
  const header = sb.head;
  sb.head = null;
  let msg: any;
  try {
    msg = JSON.parse(decoder.decode(header));
  } catch {
    return; // not what the Worker writes: nothing to act on
  }
  onWorkerMessage(msg, sb.payload, sb.plen);
}

function stopWorker(): void {
  worker?.w.terminate();
  if (worker) { // its waits then see it stopped and end
    Atomics.notify(worker.back, GEN);
    Atomics.notify(worker.ctrl, ACK);
    Atomics.notify(worker.back, IDLE);
  }
  worker = null;
}

// One chunk at a time in the buffer: the next once the worker has copied the last one out.
// The worker reads its buffer on its own event loop, whatever its tool is doing with the other.
async function toWorker(header: Record<string, unknown>, payload: Uint8Array): Promise<void> {
  const sb = worker;
  if (!sb) return;
  const head = encoder.encode(JSON.stringify(header));
  let off = 0;
  do {
    for (let ack; (ack = Atomics.load(sb.ctrl, ACK)) !== sb.gen;) {
      await waitChange(sb.ctrl, ACK, ack);
      if (worker !== sb) return; // stopped meanwhile: a new worker has its own buffer
    }
    const hlen = off === 0 ? head.length : 0;
    if (off === 0) sb.data.set(head, DATA);
    const n = Math.min(payload.length - off, CHUNK);
    sb.data.set(payload.subarray(off, off + n), DATA + hlen);
    Atomics.store(sb.ctrl, HLEN, off === 0 ? hlen : -1);
    Atomics.store(sb.ctrl, PLEN, payload.length);
    Atomics.store(sb.ctrl, CLEN, n);
    Atomics.store(sb.ctrl, GEN, ++sb.gen);
    Atomics.notify(sb.ctrl, GEN);
    off += n;
  } while (off < payload.length);
}

// Every call in flight ends with this error, innermost first (the worker running them is gone)
function failAll(message: string): void {
  const error = encoder.encode(JSON.stringify({ name: "Error", message, stack: "" }));
  for (const id of [...active.keys()].reverse()) finish(id, false, error);
}

function finish(id: string, ok: boolean, payload: Uint8Array): void {
  const call = active.get(id);
  if (!call || call.done) return;
  call.done = [ok, payload];
  settle();
}

// Report the calls that ended: a nested one at once; a top one only once Python answered all
// its ctx calls and no call nested in it is left. A top call that returned without waiting
// for a ctx.tools call thus ends after that call, and its logs' markers follow the nested
// call's output too (else that output would open the next call's logs).
function settle(): void {
  for (let again = true; again;) {
    again = false;
    for (const [id, call] of active) {
      if (!call.done || (call.nonce && (call.pending > 0 || active.size > 1))) continue;
      active.delete(id);
      report(id, call.nonce, call.done[0], call.done[1], call.late, call);
      again = true;
    }
  }
}

// Python's turn to write: no call in flight, or each one waits for Python's answer to a ctx call
// or has ended (and waits for those answers or for a call nested in it). Otherwise the worker
// owes the next message, and Python waits for it.
function pythonsTurn(): boolean {
  for (const call of active.values()) if (!call.done && call.pending === 0) return false;
  return true;
}

function report(id: string, nonce: string, ok: boolean, payload: Uint8Array, late: unknown[],
                clock: { ticks?: unknown[]; start?: number }): void {
  if (nonce) { // the markers close this call's logs on both streams, after all the tool wrote
    const line = encoder.encode(nonce + "\n");
    writeSyncAll(Deno.stdout, line);
    writeSyncAll(Deno.stderr, line);
  }
  const { ticks, start } = clock;
  send({ t: "done", id, ok, late, ...(ticks ? { ticks, start } : {}), n: payload.length }, payload);
  if (nonce) idleOwed = true;
}

function onWorkerMessage(msg: any, payload: Uint8Array | null, size: number): void {
  // only worker/channel.ts holds this buffer; still, accept only what ctx itself may do
  const call = typeof msg === "object" && msg !== null ? active.get(msg.id) : undefined;
  if (!call || call.done) return;
  if (msg.t === "ctx" && typeof msg.method === "string" && Number.isInteger(msg.seq) && payload) {
    call.pending++;
    send({ t: "ctx", id: msg.id, seq: msg.seq, method: msg.method, n: payload.length }, payload);
  } else if (msg.t === "done") {
    call.late = Array.isArray(msg.late) && msg.late.length === 2 ? msg.late : [];
    if (Array.isArray(msg.ticks) && typeof msg.start === "number") [call.ticks, call.start] = [msg.ticks, msg.start];
    finish(msg.id, msg.ok === true && payload !== null, payload ?? encoder.encode(JSON.stringify(
      { name: "ResultTooLarge", size, bridge: "result_too_large" })));
  }
}

const EMPTY = new Uint8Array(0);
const NULL_INPUT = encoder.encode("null"); // a call's input when Python sent none

async function onMessage(msg: any, payload: Uint8Array | null): Promise<void> {
  if (msg.t === "call") {
    if (Number.isInteger(msg.limit)) limit = msg.limit;
    if (msg.fresh && !active.size) stopWorker(); // never under a call in flight
    worker ??= startWorker();
    const input = payload ?? NULL_INPUT;
    // the generation of its last chunk: the worker runs a call once it has all of it
    const chunks = Math.max(1, Math.ceil(input.length / CHUNK));
    worker.top = active.size ? null : { msg, payload: input, gen: worker.gen + chunks };
    active.set(msg.id, { nonce: typeof msg.nonce === "string" ? msg.nonce : "", pending: 0, done: null,
                         late: [] });
    const { shapeText, ...ctx } = msg.ctx;
    if (typeof shapeText === "string") shapes.set(ctx.shape, shapeText);
    if (!worker.shapes.has(ctx.shape)) {
      ctx.shapeText = shapes.get(ctx.shape);
      worker.shapes.add(ctx.shape);
    }
    const call: Record<string, unknown> = { t: "call", id: msg.id, file: msg.file, ctx, limit,
                                            resultChars: msg.resultChars ?? limit };
    // the bench's virtual clock and seed (worker/clock.ts, random.ts): sent only when set
    if (Array.isArray(msg.clock)) call.clock = msg.clock;
    if (Number.isInteger(msg.seed)) call.seed = msg.seed;
    if (Array.isArray(msg.ticks)) call.ticks = msg.ticks; // a replay's clock reads, served again
    if (msg.wall === true) call.wall = true;
    if (msg.ownSeed === true) call.ownSeed = true;
    await toWorker(call, input);
  } else if (msg.t === "reply") {
    const call = active.get(msg.id);
    if (call) call.pending--;
    await toWorker({ t: "reply", seq: msg.seq, ok: msg.ok === true }, payload ?? EMPTY);
    if (call?.done) settle();
  }
}

// Reading: a header is found by scanning only the bytes that just arrived for "\n" (linear in
// the message, however it is chunked); a payload is read straight into its own buffer.
const chunk = new Uint8Array(1 << 16);
let parts: Uint8Array[] = [];
let partsLength = 0;
let rest: Uint8Array = new Uint8Array(0); // bytes read past the last complete piece

function more(): boolean {
  const n = input.readSync(chunk);
  if (n === null) return false;
  rest = chunk.slice(0, n);
  return true;
}

// With the inspector (only): until a whole header line is in `rest`, reading on the event loop
// (an async read of the FIFO runs off this thread), so that a debugger is answered meanwhile.
async function readFromPython(): Promise<boolean> {
  while (rest.indexOf(10) < 0) {
    const n = await input.read(chunk);
    if (n === null) return false;
    const joined = new Uint8Array(rest.length + n);
    joined.set(rest);
    joined.set(chunk.subarray(0, n), rest.length);
    if (joined.length > HEADER_LIMIT) throw new Error("bridge: header line too long");
    rest = joined;
  }
  return true;
}

function readHeader(): any | null {
  for (;;) {
    const nl = rest.indexOf(10);
    if (nl >= 0) {
      parts.push(rest.subarray(0, nl));
      rest = rest.subarray(nl + 1);
      let line: Uint8Array;
      if (parts.length === 1) line = parts[0];
      else {
        line = new Uint8Array(partsLength + nl);
        let at = 0;
        for (const p of parts) { line.set(p, at); at += p.length; }
      }
      parts = [];
      partsLength = 0;
      return JSON.parse(decoder.decode(line));
    }
    parts.push(rest);
    partsLength += rest.length;
    if (partsLength > HEADER_LIMIT) throw new Error("bridge: header line too long");
    if (!more()) return null;
  }
}

function readPayload(n: number): Uint8Array | null {
  const out = new Uint8Array(n);
  let have = Math.min(n, rest.length);
  out.set(rest.subarray(0, have));
  rest = rest.subarray(have);
  while (have < n) {
    const got = input.readSync(out.subarray(have));
    if (got === null) return null;
    have += got;
  }
  return out;
}

worker = startWorker(); // now, not at the first call: it starts while Python gets ready
send({ t: "ready" });
for (;;) {
  if (!pythonsTurn()) {
    if (worker) await fromWorker(worker);
    else failAll("the worker stopped");
    continue;
  }
  if (idleOwed && active.size === 0) {
    idleOwed = false;
    if (!idleNow(worker) && !await idle(worker)) Deno.exit(RECYCLED); // the only end of a Worker that spins (see IDLE)
  }
  if (inspected && !await readFromPython()) break;
  const msg = readHeader();
  if (msg === null) break;
  let payload: Uint8Array | null = null;
  if (Number.isInteger(msg.n) && msg.n > 0) {
    // the Python side checks sizes before sending; this only guards the host's own memory
    if (msg.n > Math.max(limit, msg.limit ?? 0)) throw new Error("bridge: message over the limit");
    payload = readPayload(msg.n);
    if (payload === null) break;
  }
  await onMessage(msg, payload);
}
Deno.exit(0);
