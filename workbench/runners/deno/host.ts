// Gem Workbench sandbox host: one Deno process per gem (N3).
//
// The tool runs in a Worker whose permissions allow only reading the gem folder and its
// resources. This main module alone holds the RPC channel: a Unix socket the Python side listens
// on for exactly one connection (then unlinks), which the worker has no permission to reach.
// (A socket, not pipes: Deno serves pipes on helper threads, ~10x slower per round trip.)
// Tool output on stdout/stderr is only ever captured as logs, never parsed as protocol.
//
// Protocol, one JSON object per line:
//   python -> host  {t:"call", id, file, input, fresh, nonce, meta}   {t:"reply", seq, ok, value|error}
//   host -> python  {t:"ready"}   {t:"ctx", id, seq, method, args}   {t:"done", id, ok, ...}

const [socketPath, workerUrl, ...readable] = Deno.args;
const channel = await Deno.connect({ transport: "unix", path: socketPath });
const input = channel;
const output = channel;
const encoder = new TextEncoder();

async function send(msg: unknown): Promise<void> {
  const bytes = encoder.encode(JSON.stringify(msg) + "\n");
  let written = 0;
  while (written < bytes.length) written += await output.write(bytes.subarray(written));
}

const workerPermissions = {
  read: readable, write: false, net: false, env: false, run: false, ffi: false, sys: false,
  import: false,
};
let worker: { w: Worker; port: MessagePort } | null = null;
let current: { id: string; nonce: string } | null = null;

function startWorker(): { w: Worker; port: MessagePort } {
  const w = new Worker(workerUrl, { type: "module", deno: { permissions: workerPermissions } });
  // The worker's global port is the tool's too (self.postMessage, self.onmessage): a tool that
  // listened there saw the next call's id and could post its "done". Calls and ctx messages go
  // over a MessageChannel whose port is sent first, before any tool code runs, and is then held
  // only inside worker.ts; what arrives on the global port is dropped.
  const { port1, port2 } = new MessageChannel();
  w.postMessage({ t: "port" }, [port2]);
  port1.onmessage = (e: MessageEvent) => onWorkerMessage(e.data);
  w.onmessage = () => {};
  w.onerror = (e: ErrorEvent) => {
    e.preventDefault();
    finish({ ok: false, error: { name: "Error", message: e.message, stack: "" } });
    stopWorker();
  };
  return { w, port: port1 };
}

function stopWorker(): void {
  worker?.w.terminate();
  worker?.port.close();
  worker = null;
}

function finish(result: Record<string, unknown>): void {
  if (!current) return;
  const { id, nonce } = current;
  current = null;
  // the markers close this call's logs on both streams, after everything the tool wrote
  console.log(nonce);
  console.error(nonce);
  send({ t: "done", id, ...result });
}

function onWorkerMessage(msg: any): void {
  // only worker.ts holds this port; still, accept only what ctx itself may do
  if (!current || typeof msg !== "object" || msg === null || msg.id !== current.id) return;
  if (msg.t === "ctx" && typeof msg.method === "string" && Number.isInteger(msg.seq)) {
    send({ t: "ctx", id: msg.id, seq: msg.seq, method: msg.method, args: msg.args ?? [] });
  } else if (msg.t === "done") {
    finish({ ok: msg.ok, json: msg.json, error: msg.error });
  }
}

const decoder = new TextDecoder();
let buffered = "";
const chunk = new Uint8Array(1 << 16);
await send({ t: "ready" });
for (;;) {
  const n = await input.read(chunk);
  if (n === null) break;
  buffered += decoder.decode(chunk.subarray(0, n), { stream: true });
  let nl: number;
  while ((nl = buffered.indexOf("\n")) >= 0) {
    const msg = JSON.parse(buffered.slice(0, nl));
    buffered = buffered.slice(nl + 1);
    if (msg.t === "call") {
      if (msg.fresh) stopWorker();
      worker ??= startWorker();
      current = { id: msg.id, nonce: msg.nonce };
      worker.port.postMessage({ t: "call", id: msg.id, file: msg.file, input: msg.input,
                                meta: msg.meta ?? {} });
    } else if (msg.t === "reply") {
      worker?.port.postMessage(msg);
    }
  }
}
Deno.exit(0);
