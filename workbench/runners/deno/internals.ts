// The runtime's internals out of the tools' reach: imported first by the bridge
// (worker/main.ts), so it runs before the bridge's own modules and before any tool code.
//
// Deno[Deno.internal] holds the runtime's internals: `core` (core.ops: every op behind every
// API, called without the argument checks of the API over it; evalContext, setPromiseHooks,
// resources...). Nothing a tool needs lives there. It is removed here, with the symbol's name
// (Deno.internal). A Worker a tool starts is a new realm with its own: worker/confine.ts starts it
// through nestedUrl, a module that runs NESTED (the same removal, and the same wrapping of its
// own Worker) before it imports the tool's module. node:worker_threads' Worker starts its
// realm where nothing can run first: it is refused (NotCapable), here and in nested Workers.
// What remains reachable: docs/security.md "The sandbox's own internals".

const REFUSAL = "node:worker_threads' Worker is not available to tools: use new Worker(url, { type: \"module\" })";
// deno-lint-ignore no-explicit-any
const D = Deno as any;
const INTERNAL = D.internal;
if (INTERNAL !== undefined) {
  delete D[INTERNAL];
  delete D.internal;
}

// A nested Worker's first module: BASE (the module it was asked to run) and SELF (this text)
// are defined before it. Plain JavaScript: it is evaluated as it is, in each new realm, before
// the tool's module; what `nested` calls later is taken now (a tool may patch any global).
const NESTED = `{
  const D = globalThis.Deno, sym = D.internal;
  if (sym !== undefined) { delete D[sym]; delete D.internal; }
}
const NativeWorker = globalThis.Worker, construct = Reflect.construct, apply = Reflect.apply;
const str = JSON.stringify, enc = encodeURIComponent, toStr = String, NativeURL = URL;
const href = Object.getOwnPropertyDescriptor(URL.prototype, "href").get;
const nested = (spec) => "data:text/javascript," + enc("const BASE = " +
  str(apply(href, new NativeURL(toStr(spec), BASE), [])) + ", SELF = " + str(SELF) + ";\\n" + SELF +
  "\\nawait import(BASE);\\n");
const W = function Worker(spec, ...rest) {
  if (new.target === undefined) throw new TypeError("Worker must be called with new");
  if (arguments.length === 0) return construct(NativeWorker, [], new.target);
  return construct(NativeWorker, [nested(spec), ...rest], new.target);
};
Object.defineProperty(W, "prototype", { value: NativeWorker.prototype });
Object.defineProperty(NativeWorker.prototype, "constructor", { value: W, writable: false, configurable: false });
Object.defineProperty(globalThis, "Worker", { value: W, writable: true, configurable: true });
const { Worker: NodeWorker } = await import("node:worker_threads");
Object.setPrototypeOf(NodeWorker, function NotCapable() {
  const e = new Error(${JSON.stringify(REFUSAL)});
  e.name = "NotCapable";
  throw e;
});
Object.preventExtensions(NodeWorker);`;
const NESTED_JSON = JSON.stringify(NESTED);
const stringify = JSON.stringify, enc = encodeURIComponent, toStr = String, NativeURL = URL;
const href = (Object.getOwnPropertyDescriptor(URL.prototype, "href") as PropertyDescriptor).get as () => string;

// Worker(spec) as a tool asked for it, resolved as the runtime would (against `base`, this
// Worker's location), started through NESTED
export function nestedUrl(spec: unknown, base: string): string {
  const url = Reflect.apply(href, new NativeURL(toStr(spec), base), []) as string;
  return "data:text/javascript," + enc(`const BASE = ${stringify(url)}, SELF = ${NESTED_JSON};\n${NESTED}\nawait import(BASE);\n`);
}

// node:worker_threads' Worker refused: `super()` in its constructor calls whatever its
// prototype is when it runs (before the realm is made), and a non-extensible class keeps the
// one set here. Importing the module replaces globalThis.MessageChannel and MessagePort unless
// they cannot be (worker/confine.ts locks them first). Settled before the first tool module is
// imported (worker/run.ts `run`).
export function refuseNodeWorker(): Promise<unknown> {
  return import("node:worker_threads").then(({ Worker: NodeWorker }) => {
    Object.setPrototypeOf(NodeWorker, function NotCapable() {
      const e = new Error(REFUSAL);
      e.name = "NotCapable";
      throw e;
    });
    Object.preventExtensions(NodeWorker);
  });
}

// The call's seeded stream, for node_crypto.ts (node:crypto's own draws go to the runtime's ops,
// past the functions worker/random.ts replaces): set and frozen by it before any tool runs
export const draws: { seeded: () => boolean; u32: () => number; fill: (bytes: Uint8Array) => void } = {
  seeded: () => false,
  u32: () => 0,
  fill: () => {},
};
