// What a tool may not do in this Worker (Deno.exit, self.close, self.postMessage), and what a
// top call leaves behind (timers, ports, nested Workers), tracked so that its end clears it.
import { append, call0, data, defineProperty, getter, lazyGlobal, NativeError, NativeTypeError, objectCreate,
  objectKeys, promiseThen, ReflectApply, ReflectConstruct, ReflectDelete } from "./primordials.ts";
import { nestedUrl, refuseNodeWorker } from "../internals.ts";


// Deno.exit in a worker silently ends the worker, so the call would only end at its timeout:
// make it an error the tool sees at once (reported as E_SANDBOX, capability "exit").
// self.close() ends the worker just as silently: the same treatment.
// self.postMessage would queue messages the host drops only when its event loop runs: between
// calls it waits blocking (host.ts), so a tool posting on a timer grew the host's memory
// without bound. Tools have no use for the port (the bridge does not use it either).
function refuse(target: object, name: string, what: (arg?: unknown) => string): void {
  defineProperty(target, name, { __proto__: null, value: (arg?: unknown) => {
    const e = new NativeError(`${what(arg)} is not available to tools`);
    defineProperty(e, "name", data("NotCapable"));
    throw e;
  } } as PropertyDescriptor);
}
refuse(Deno, "exit", (code) => `Deno.exit(${code ?? ""})`);
refuse(self, "close", () => "self.close()");
refuse(self, "postMessage", () => "self.postMessage()");

// -- what a call leaves behind (SEC5) ----------------------------------------------------------
// When a top call ends nothing it started may run on: its timers and intervals are cleared, its
// MessageChannel and BroadcastChannel ports closed, once the microtasks it left have run (the
// probe in main.ts, a task after them). The constructors and functions are wrapped here, before any
// tool code runs, and their ids kept in tables without a prototype. A nested Worker is
// terminated, and the process is recycled as well: Worker.terminate() does not stop a Worker
// that spins (measured with Deno 2.9: a busy loop, a microtask flood, `for (;;) await null` all
// ran on), and only the process's end frees its threads for sure. A microtask flood never lets
// the probe run: the host sees no idle Worker within its grace and ends the process (host.ts).
// The four timer globals are lazy in Deno 2.9 (their getters load node:timers, and with it the
// runtime's Node layer: ~20 ms of a Worker's start): taken as their getters (primordials.ts
// lazyGlobal) and called once node:worker_threads, which loads that layer anyway, is in
// (internalsReady below), before any tool code; the wrappers are in place at once.
type Fn = (...a: unknown[]) => unknown;
const nativeSetTimeout = lazyGlobal<Fn>("setTimeout");
const nativeSetInterval = lazyGlobal<Fn>("setInterval");
const nativeClearTimeout = lazyGlobal<Fn>("clearTimeout");
const nativeClearInterval = lazyGlobal<Fn>("clearInterval");
const NativeWorker = Worker, workerTerminate = Worker.prototype.terminate;
const NativeMessageChannel = MessageChannel, NativeBroadcastChannel = BroadcastChannel;
const portClose = MessagePort.prototype.close, broadcastClose = BroadcastChannel.prototype.close;
const channelPort1 = getter(MessageChannel.prototype, "port1");
const channelPort2 = getter(MessageChannel.prototype, "port2");
const TIMERS: Record<number, true> = objectCreate(null); // ids not yet fired or cleared
const CLOSABLE: [unknown, unknown][] = []; // [close function, its object]: ports and channels
let nestedWorkers = 0; // Workers made since the last recycle: any means the process ends

function wrap(name: string, fn: (...a: any[]) => unknown): void {
  defineProperty(globalThis, name, data(fn));
}
function timer(native: () => Fn, once: boolean) {
  return (fn: unknown, ms?: unknown, ...args: unknown[]) => {
    const cb = typeof fn !== "function" ? fn : function (this: unknown) {
      if (once) ReflectDelete(TIMERS, id);
      return ReflectApply(fn as () => unknown, this, args);
    };
    const id = ReflectApply(native(), globalThis, [cb, ms]) as number;
    TIMERS[id] = true;
    return id;
  };
}
function untimer(native: () => Fn) {
  return (id?: unknown) => {
    ReflectDelete(TIMERS, id as number);
    ReflectApply(native(), globalThis, [id]);
  };
}
wrap("setTimeout", timer(nativeSetTimeout, true));
wrap("setInterval", timer(nativeSetInterval, false));
wrap("clearTimeout", untimer(nativeClearTimeout));
wrap("clearInterval", untimer(nativeClearInterval));
// `first` maps the first argument (a Worker's module); such a constructor is also its
// prototype's `constructor`
function constructor(name: string, Native: any, track: (o: unknown) => void,
                     first?: (a: unknown) => unknown): void {
  const C = function (this: unknown, ...args: unknown[]) {
    if (new.target === undefined) throw new NativeTypeError(`${name} must be called with new`);
    if (first !== undefined && args.length > 0) { // (no args: the native's own TypeError)
      defineProperty(args, 0, data(first(args[0]), true)); // (no setter a tool planted runs)
    }
    const o = ReflectConstruct(Native, args, new.target);
    track(o);
    return o;
  };
  defineProperty(C, "prototype", { __proto__: null, value: Native.prototype } as PropertyDescriptor);
  defineProperty(C, "name", data(name));
  if (first !== undefined) { // (the native one would start a Worker without it)
    defineProperty(Native.prototype, "constructor",
                   { __proto__: null, value: C, writable: false, configurable: false } as PropertyDescriptor);
  }
  wrap(name, C as unknown as (...a: any[]) => unknown);
}
// a nested Worker runs internals.ts's NESTED before the module it was given (a realm of its
// own, with the runtime's internals of its own)
const LOCATION = `${location.href}`;
constructor("Worker", NativeWorker, (w) => {
  nestedWorkers++;
  append(CLOSABLE, [workerTerminate, w]);
}, (spec) => nestedUrl(spec, LOCATION));
constructor("MessageChannel", NativeMessageChannel, (c) => {
  append(CLOSABLE, [portClose, call0(channelPort1, c)]);
  append(CLOSABLE, [portClose, call0(channelPort2, c)]);
});
constructor("BroadcastChannel", NativeBroadcastChannel, (c) => append(CLOSABLE, [broadcastClose, c]));
// node:worker_threads would replace these two (with ports this file does not track): kept
for (const name of ["MessageChannel", "MessagePort"]) {
  defineProperty(globalThis, name, { __proto__: null, value: (globalThis as any)[name], writable: false,
                                     configurable: false } as PropertyDescriptor);
}
// settled before the first tool module is imported (run.ts `run`), the timers taken by then
const takeTimers = () => {
  nativeSetTimeout();
  nativeSetInterval();
  nativeClearTimeout();
  nativeClearInterval();
};
export const internalsReady: Promise<unknown> = ReflectApply(promiseThen, refuseNodeWorker(),
                                                             [takeTimers, takeTimers]) as Promise<unknown>;

// `fn` after `ms` on the native timer, not tracked (the bridge's own, main.ts)
export function later(fn: () => void, ms: number): void {
  ReflectApply(nativeSetTimeout(), globalThis, [fn, ms]);
}

// What the top call that ended left running, cleared: its timers and intervals, its ports and
// channels, its nested Workers. True when the process must end (a nested Worker was made).
export function clearTracked(): boolean {
  const ids = objectKeys(TIMERS);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i] as unknown as number;
    ReflectDelete(TIMERS, id);
    ReflectApply(nativeClearTimeout(), globalThis, [+id]); // (timeouts and intervals share ids)
  }
  for (let i = 0; i < CLOSABLE.length; i++) {
    try { ReflectApply(CLOSABLE[i][0] as () => void, CLOSABLE[i][1], []); } catch { /* closed */ }
  }
  CLOSABLE.length = 0;
  return nestedWorkers > 0;
}
