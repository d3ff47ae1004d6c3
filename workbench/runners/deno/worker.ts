// Runs inside the sandboxed Worker: imports the tool, builds `ctx`, runs its call (and the calls
// nested in it: a tool calling another JS/TS tool of the gem through ctx.tools).
// ctx methods send {t:"ctx"} to the host, which forwards them to the Python ctx layer.
//
// Tool code shares this realm and may patch any global or prototype, in one call, for the next
// ones (reuse, N5). So the bridge (this file) takes every built-in it uses before any tool runs
// and never reaches a tool-patchable prototype while it carries a call (SEC, issue 9 item 11):
// - nothing arrives as a MessageEvent: an accessor planted on MessageEvent.prototype (or any
//   setter the event's constructor assigns through) saw the event, whose target is the port.
//   The host writes calls and replies into a SharedArrayBuffer that only this module holds; the
//   worker waits with Atomics.waitAsync. It writes its messages into a second one the same way.
// - no method calls on arrays, strings, promises or typed arrays (`args.map`, `.then`, spreads
//   and iterators, `.subarray`'s species lookup): captured functions called with ReflectApply;
// - objects the bridge makes and passes to built-ins (property descriptors) have no prototype;
// - values are resolved without a `then` lookup reaching a built-in prototype, promises awaited
//   without a `constructor` lookup, and JSON.stringify runs with toJSON planted on built-in
//   prototypes (Object, Array, ...) set aside: it would see and replace another call's data.

// Before anything else: the runtime's internals removed (internals.ts; a static import runs first)
import { draws, nestedUrl, refuseNodeWorker } from "./internals.ts";

// -- primordials -----------------------------------------------------------------------------
const ObjectCtor = Object;
const { freeze, defineProperty, getOwnPropertyDescriptor, getPrototypeOf, keys: objectKeys,
        create: objectCreate, isExtensible } = ObjectCtor;
const hasOwn = ObjectCtor.hasOwn;
const ReflectApply = Reflect.apply;
const ReflectDelete = Reflect.deleteProperty;
const ReflectSetPrototypeOf = Reflect.setPrototypeOf;
const NativePromise = Promise;
const PromiseProto = Promise.prototype;
const promiseThen = PromiseProto.then;
const NativeError = Error;
const NativeTypeError = TypeError;
const NativeUint8Array = Uint8Array;
const NativeInt32Array = Int32Array;
const NativeArrayBuffer = ArrayBuffer;
const NativeHeaders = Headers;
const NativeResponse = Response;
const NativeRequest = Request;
const consoleError = console.error;
const NativeURL = URL;
const NativeURLSearchParams = URLSearchParams;
const stringify = JSON.stringify;
const parseJSON = JSON.parse;
const fromCharCode = String.fromCharCode;
const b64encode = btoa;
const b64decode = atob;
const isView = ArrayBuffer.isView;
const isArray = Array.isArray;
// Brand checks without `instanceof`: a tool may plant Symbol.hasInstance on URL, Headers,
// Uint8Array... and would then see (and alter) the next call's fetch arguments or errors.
// OrdinaryHasInstance, captured (Function.prototype[@@hasInstance] is non-writable), applied to
// the captured constructor, whose `prototype` is non-writable: no lookup a tool can reach.
const ordinaryHasInstance = Function.prototype[Symbol.hasInstance];
const isA = (x: unknown, C: unknown): boolean => ReflectApply(ordinaryHasInstance, C, [x]) as boolean;
const NativeWeakMap = WeakMap;
const weakMapGet = WeakMap.prototype.get, weakMapSet = WeakMap.prototype.set,
  weakMapHas = WeakMap.prototype.has;
const { load: atomicsLoad, store: atomicsStore, notify: atomicsNotify } = Atomics;
const waitAsync = (Atomics as unknown as { waitAsync: (...a: unknown[]) => { async: boolean; value: unknown } }).waitAsync;
const encoder = new TextEncoder();
const encode = encoder.encode.bind(encoder);
const decoder = new TextDecoder();
const decode = decoder.decode.bind(decoder);
const TypedArrayProto = getPrototypeOf(NativeUint8Array.prototype);
const getter = (proto: object, key: PropertyKey) =>
  (getOwnPropertyDescriptor(proto, key) as PropertyDescriptor).get as (this: unknown) => unknown;
const taBuffer = getter(TypedArrayProto, "buffer");
const taByteOffset = getter(TypedArrayProto, "byteOffset");
const taByteLength = getter(TypedArrayProto, "byteLength");
const abByteLength = getter(NativeArrayBuffer.prototype, "byteLength");
const urlHref = getter(NativeURL.prototype, "href");
const searchToString = NativeURLSearchParams.prototype.toString;
const headersEntries = NativeHeaders.prototype.entries;
const headersAppend = NativeHeaders.prototype.append;
const headersIterNext = getPrototypeOf(new NativeHeaders().entries()).next;
const charCodeAt = String.prototype.charCodeAt;
const strIndexOf = String.prototype.indexOf;
const strSlice = String.prototype.slice;
const call0 = (fn: unknown, self: unknown) => ReflectApply(fn as () => unknown, self, []);
// descriptors without a prototype: defineProperty reads get/set/value... from its argument
const data = (value: unknown, enumerable = false) =>
  ({ __proto__: null, value, writable: true, enumerable, configurable: true }) as PropertyDescriptor;
// A descriptor from getOwnPropertyDescriptor inherits from Object.prototype: handed back to
// defineProperty, a `get` or `value` a tool planted there would be read. Copied without one.
const DESC_FIELDS = ["value", "writable", "get", "set", "enumerable", "configurable"];
function nullDesc(d: PropertyDescriptor | undefined): PropertyDescriptor | undefined {
  if (d === undefined) return undefined;
  const out = { __proto__: null } as unknown as Record<string, unknown>;
  for (let i = 0; i < DESC_FIELDS.length; i++) {
    const k = DESC_FIELDS[i];
    if (hasOwn(d, k)) out[k] = (d as unknown as Record<string, unknown>)[k];
  }
  return out as PropertyDescriptor;
}

// The built-in prototypes a JSON value's objects can inherit from, and what toJSON each had
// before any tool ran. BigInt.prototype.toJSON and Date.prototype.toJSON are left to tools: a
// BigInt serialiser is a common idiom, and a tool may format its own dates.
const JSON_PROTOS: object[] = [
  ObjectCtor.prototype, Array.prototype, Function.prototype, String.prototype, Number.prototype,
  Boolean.prototype, Symbol.prototype, RegExp.prototype, NativeError.prototype, Map.prototype,
  Set.prototype, WeakMap.prototype, WeakSet.prototype, PromiseProto, NativeArrayBuffer.prototype,
  SharedArrayBuffer.prototype, DataView.prototype, TypedArrayProto, NativeUint8Array.prototype,
  NativeURL.prototype, NativeURLSearchParams.prototype, NativeHeaders.prototype,
];
const JSON_TOJSON: unknown[] = [];
// ... and what each inherited from: a tool that put a Proxy between Array.prototype and
// Object.prototype had its `get` trap asked for "toJSON" with every array serialised
const JSON_PARENTS: (object | null)[] = [];
for (let i = 0; i < JSON_PROTOS.length; i++) {
  JSON_PARENTS[i] = getPrototypeOf(JSON_PROTOS[i]);
}
for (let i = 0; i < JSON_PROTOS.length; i++) {
  JSON_TOJSON[i] = getOwnPropertyDescriptor(JSON_PROTOS[i], "toJSON")?.value;
}
// every prototype whose properties the bridge must not trust (then, name, message, ...)
const INTRINSICS: object[] = [...JSON_PROTOS, Date.prototype, BigInt.prototype,
  NativeTypeError.prototype, RangeError.prototype, SyntaxError.prototype, ReferenceError.prototype,
  EvalError.prototype, URIError.prototype, AggregateError.prototype];
const INTRINSIC_NAMES: unknown[] = [];
for (let i = 0; i < INTRINSICS.length; i++) {
  INTRINSIC_NAMES[i] = getOwnPropertyDescriptor(INTRINSICS[i], "name")?.value;
}

function intrinsicIndex(o: object): number {
  for (let i = 0; i < INTRINSICS.length; i++) if (INTRINSICS[i] === o) return i;
  return -1;
}

// A property as the tool's own objects define it; on a built-in prototype, the value it had
// before any tool ran (name) or nothing: a getter planted there would see the object.
function safeGet(o: unknown, key: string): unknown {
  for (let p = o as object | null; p !== null && (typeof p === "object" || typeof p === "function");
    p = getPrototypeOf(p)) {
    const d = getOwnPropertyDescriptor(p, key);
    if (d === undefined) continue;
    const i = intrinsicIndex(p);
    if (i >= 0) return key === "name" ? INTRINSIC_NAMES[i] : undefined;
    if (hasOwn(d, "value")) return d.value;
    return hasOwn(d, "get") && d.get ? call0(d.get, o) : undefined;
  }
  return undefined;
}

// JSON.stringify with toJSON planted on built-in prototypes, and prototypes a tool gave them,
// set aside while it runs
function safeStringify(value: unknown): string | undefined {
  const planted: number[] = [];
  const saved: PropertyDescriptor[] = [];
  const moved: number[] = [];
  const parents: (object | null)[] = [];
  try { // whatever was set aside is put back, also when a later one cannot be
    for (let i = 0; i < JSON_PROTOS.length; i++) {
      const parent = getPrototypeOf(JSON_PROTOS[i]);
      if (parent === JSON_PARENTS[i]) continue;
      if (!ReflectSetPrototypeOf(JSON_PROTOS[i], JSON_PARENTS[i])) {
        throw new NativeTypeError("a tool gave a built-in prototype a prototype that cannot be set back");
      }
      append(moved, i);
      append(parents, parent);
    }
    for (let i = 0; i < JSON_PROTOS.length; i++) {
      const d = getOwnPropertyDescriptor(JSON_PROTOS[i], "toJSON");
      if (d === undefined || (hasOwn(d, "value") && d.value === JSON_TOJSON[i])) continue;
      if (!ReflectDelete(JSON_PROTOS[i], "toJSON")) {
        throw new NativeTypeError("a tool made a built-in prototype's toJSON unremovable");
      }
      append(planted, i);
      append(saved, nullDesc(d));
    }
    return stringify(value);
  } finally {
    for (let k = 0; k < planted.length; k++) defineProperty(JSON_PROTOS[planted[k]], "toJSON", saved[k]);
    for (let k = 0; k < moved.length; k++) ReflectSetPrototypeOf(JSON_PROTOS[moved[k]], parents[k]);
  }
}

// Give a native promise its own `then` and `constructor`: awaiting it (or resolving with it)
// then looks up neither on Promise.prototype, where a tool may have planted its own.
function own<T>(p: T): T {
  // (a promise the tool froze keeps the lookups: rare, and its own doing)
  if (p !== null && typeof p === "object" && getPrototypeOf(p) === PromiseProto && isExtensible(p)) {
    defineProperty(p, "constructor", data(NativePromise));
    defineProperty(p, "then", data(promiseThen));
  }
  return p;
}

// Resolve with a value without the `then` lookup reaching a built-in prototype
// (a frozen value cannot be given one: it is resolved as it is; the bridge freezes after)
function resolveWith(resolve: (v: unknown) => void, value: unknown): void {
  if (value !== null && typeof value === "object" && isExtensible(value)) {
    defineProperty(value, "then", data(undefined));
    resolve(value);
    ReflectDelete(value, "then");
  } else resolve(value);
}

// Continue with a native promise's outcome: a captured `then` on a promise that has its own
// `constructor`, so nothing is looked up on Promise.prototype
function whenSettled(p: unknown, ok: (v: unknown) => void, err: (e: unknown) => void): void {
  ReflectApply(promiseThen, own(p), [ok, err]);
}

// A promise for a value, resolved without a `then` lookup reaching a built-in prototype
function promiseOf(make: () => unknown): Promise<unknown> {
  return own(new NativePromise((resolve, reject) => {
    try { resolveWith(resolve, make()); } catch (e) { reject(e); }
  }));
}

// What the tool returned, settled: its own promise or thenable awaited, not a `then` that a
// tool planted on Object.prototype. Never through an async function's return (a `then` lookup).
function settle(value: unknown, ok: (v: unknown) => void, err: (e: unknown) => void): void {
  if (value === null || (typeof value !== "object" && typeof value !== "function")) return ok(value);
  if (getPrototypeOf(value) === PromiseProto) return whenSettled(value, ok, err);
  for (let p = value as object | null; p !== null; p = getPrototypeOf(p)) {
    const d = getOwnPropertyDescriptor(p, "then");
    if (d === undefined) continue;
    if (p === PromiseProto) { // a promise of a subclass (its constructor is the tool's own)
      try {
        ReflectApply(promiseThen, value, [ok, err]);
      } catch {
        ok(value); // not a promise, only inheriting from Promise.prototype
      }
      return;
    }
    if (intrinsicIndex(p) >= 0) break; // planted on a built-in: not a thenable of the tool's
    return whenSettled(new NativePromise((resolve) => resolve(value)), ok, err); // the tool's own
  }
  ok(value);
}

// A `then` an earlier call planted on a built-in prototype (Object.prototype.then = ...) would
// take over every plain value another tool's async function returns: V8 resolves that promise
// through `then` before the bridge sees it. So a top call starts with such a `then` (one that
// was not there before any tool ran) removed; one a call plants itself affects that call only.
const THEN_NATIVE: unknown[] = [];
for (let i = 0; i < INTRINSICS.length; i++) THEN_NATIVE[i] = getOwnPropertyDescriptor(INTRINSICS[i], "then")?.value;

function removePlantedThen(): void {
  for (let i = 0; i < INTRINSICS.length; i++) {
    const d = getOwnPropertyDescriptor(INTRINSICS[i], "then");
    if (d === undefined || (hasOwn(d, "value") && d.value === THEN_NATIVE[i])) continue;
    if (!ReflectDelete(INTRINSICS[i], "then")) {
      throw new NativeTypeError("a tool made a built-in prototype's `then` unremovable: " +
                                "no value could be returned safely in this Worker");
    }
  }
}

function append(list: unknown[], value: unknown): void {
  defineProperty(list, list.length, data(value, true)); // no setter on Array.prototype[i] runs
}

function cut(text: unknown, max: number): string {
  const s = typeof text === "string" ? text : "";
  return s.length > max ? ReflectApply(strSlice, s, [0, max]) as string + "…" : s;
}

// -- Deno.exit / self.close / self.postMessage -----------------------------------------------

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

// -- what a call leaves behind (SEC5, issue 25) ------------------------------------------------
// When a top call ends nothing it started may run on: its timers and intervals are cleared, its
// MessageChannel and BroadcastChannel ports closed, once the microtasks it left have run (the
// probe below, a task after them). The constructors and functions are wrapped here, before any
// tool code runs, and their ids kept in tables without a prototype. A nested Worker is
// terminated, and the process is recycled as well: Worker.terminate() does not stop a Worker
// that spins (measured with Deno 2.9: a busy loop, a microtask flood, `for (;;) await null` all
// ran on), and only the process's end frees its threads for sure. A microtask flood never lets
// the probe run: the host sees no idle Worker within its grace and ends the process (host.ts).
const nativeSetTimeout = setTimeout, nativeSetInterval = setInterval;
const nativeClearTimeout = clearTimeout, nativeClearInterval = clearInterval;
const ReflectConstruct = Reflect.construct;
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
function timer(native: unknown, once: boolean) {
  return (fn: unknown, ms?: unknown, ...args: unknown[]) => {
    const cb = typeof fn !== "function" ? fn : function (this: unknown) {
      if (once) ReflectDelete(TIMERS, id);
      return ReflectApply(fn as () => unknown, this, args);
    };
    const id = ReflectApply(native as () => number, globalThis, [cb, ms]) as number;
    TIMERS[id] = true;
    return id;
  };
}
function untimer(native: unknown) {
  return (id?: unknown) => {
    ReflectDelete(TIMERS, id as number);
    ReflectApply(native as () => void, globalThis, [id]);
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
let internalsHidden: Promise<unknown> | null = refuseNodeWorker();

// -- the clock and randomness a tool sees (issue 29 point 3) ---------------------------------
// The bench may give a call a virtual clock ("clock": [ms since the epoch at the call's start,
// frozen]) and a seed ("seed": a uint32). Date, performance.now/timeOrigin, Math.random and
// crypto.getRandomValues/randomUUID are replaced here, once, before any tool code runs, by
// functions that read this Worker's current setting: a module a tool imported in a call on real
// time holds these, not the natives, when a later call is virtual. The natives are kept only
// here (Date.prototype.constructor is the replacement too). Set by each top call from its
// message (absent: real time and randomness, as if nothing were replaced: each native is then
// called as it is); a call nested in it (ctx.tools, A3) shares its clock and its stream.
// What remains reachable: docs/readings.md "Deterministic calls in the sandbox".
const NativeDate = Date;
const nativeDateNow = Date.now;
const dateToString = Date.prototype.toString;
const mathRandom = Math.random;
const { floor, imul } = Math;
const PerformanceProto = getPrototypeOf(performance);
const perfNow = PerformanceProto.now as (this: unknown) => number;
const perfTimeOrigin = getter(PerformanceProto, "timeOrigin");
const CryptoProto = getPrototypeOf(crypto);
const nativeGetRandomValues = CryptoProto.getRandomValues as (this: unknown, a: unknown) => unknown;
const nativeRandomUUID = CryptoProto.randomUUID as (this: unknown) => string;
const realNow = () => ReflectApply(perfNow, performance, []) as number;

let clockMs: number | null = null; // the virtual time at the call's start, or null: real time
let clockFrozen = false;
let clockStart = 0; // the real performance.now() at the call's start
// A running clock's reads, as ms since the call's start: `taken` keeps the ones this call drew
// (the host pins them with the call), `served` the ones a replay gives back in the same order;
// past them, time runs on from the last one served
const MAX_TICKS = 1000;
let taken: number[] = [];
let served: number[] | null = null;
let servedAt = 0, shift = 0;
let seeded = false; // sfc32's state below holds the call's stream
let ownSeed = false; // the seed is the call's own, for its pin (not the bench's seed=)
let sa = 0, sb = 0, sc = 0, sd = 0;

// the virtual now, in ms since the epoch (a clock that runs adds the real time since the start)
function virtualNow(): number {
  return clockFrozen ? clockMs as number : (clockMs as number) + elapsed();
}

// the host's served reads (parsed JSON: own elements), finite numbers only, at most MAX_TICKS
function onlyNumbers(list: unknown[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < list.length && i < MAX_TICKS; i++) {
    const x = list[i];
    if (typeof x === "number" && x - x === 0) append(out, x);
  }
  return out;
}

// the time since the call's start a running clock shows: the next served read, else the real one
function elapsed(): number {
  let e: number;
  if (served !== null && servedAt < served.length) {
    e = served[servedAt++];
    if (servedAt === served.length) shift = e - (realNow() - clockStart);
  } else {
    e = realNow() - clockStart + shift;
  }
  if (taken.length < MAX_TICKS) append(taken, e);
  return e;
}

// sfc32 (Chris Doty-Humphrey's Small Fast Counting generator), its state from splitmix32 of the
// seed: the same seed gives the same stream in any Worker
function sfc32(): number {
  const t = (((sa + sb) | 0) + sd) | 0;
  sd = (sd + 1) | 0;
  sa = sb ^ (sb >>> 9);
  sb = (sc + (sc << 3)) | 0;
  sc = (sc << 21) | (sc >>> 11);
  sc = (sc + t) | 0;
  return t >>> 0;
}
function seed(s: number): void {
  let x = s | 0;
  const mix = () => {
    x = (x + 0x9e3779b9) | 0;
    let z = x ^ (x >>> 16);
    z = imul(z, 0x21f0aaad);
    z ^= z >>> 15;
    z = imul(z, 0x735a2d97);
    return z ^ (z >>> 15);
  };
  sa = mix(); sb = mix(); sc = mix(); sd = mix();
  for (let i = 0; i < 12; i++) sfc32();
  seeded = true;
}

function determinism(msg: Record<string, unknown>): void {
  clockMs = null;
  clockFrozen = false;
  seeded = false;
  const clock = hasOwn(msg, "clock") ? msg.clock as unknown[] : null; // own: no getter planted
  taken = [];
  served = null;
  servedAt = 0;
  shift = 0;
  if (clock === null && hasOwn(msg, "wall") && msg.wall === true) { // the wall time, its reads reported for the call's pin
    clockStart = realNow();
    clockMs = (ReflectApply(perfTimeOrigin, performance, []) as number) + clockStart;
  } else if (clock !== null && typeof clock[0] === "number") {
    clockMs = clock[0];
    clockFrozen = clock[1] === true;
    clockStart = realNow();
    const ticks = hasOwn(msg, "ticks") ? msg.ticks as unknown[] : null;
    if (!clockFrozen && isArray(ticks)) served = onlyNumbers(ticks);
  }
  if (hasOwn(msg, "seed") && typeof msg.seed === "number") seed(msg.seed);
  ownSeed = hasOwn(msg, "ownSeed") && msg.ownSeed === true;
}

const DATE_HANDLER = {
  __proto__: null, // no trap a tool planted on Object.prototype is looked up
  construct(target: DateConstructor, args: unknown[], newTarget: unknown) {
    const given = clockMs === null || args.length > 0 ? args : [virtualNow()];
    return ReflectConstruct(target, given, newTarget as () => unknown);
  },
  apply(target: DateConstructor, self: unknown, args: unknown[]) {
    if (clockMs === null) return ReflectApply(target, self, args);
    return ReflectApply(dateToString, new NativeDate(virtualNow()), []);
  },
};
const VirtualDate = new Proxy(NativeDate, DATE_HANDLER as unknown as ProxyHandler<DateConstructor>);
defineProperty(NativeDate, "now", data({ now(): number {
  return clockMs === null ? ReflectApply(nativeDateNow, NativeDate, []) as number : floor(virtualNow());
} }.now));
defineProperty(NativeDate.prototype, "constructor", data(VirtualDate));
defineProperty(globalThis, "Date", data(VirtualDate));

// A File's lastModified defaults to the engine's now: with a clock set, the virtual now instead
// (one the tool gives is kept)
const NativeFile = File;
const FILE_HANDLER = {
  __proto__: null,
  construct(target: typeof File, args: unknown[], newTarget: unknown) {
    const o = args.length >= 2 ? args[2] as Record<string, unknown> | null | undefined : null;
    if (clockMs !== null && args.length >= 2 && (o === undefined || o === null ||
        ((typeof o === "object" || typeof o === "function") && o.lastModified === undefined))) {
      args = [args[0], args[1], { __proto__: null, endings: o?.endings, type: o?.type,
                                  lastModified: floor(virtualNow()) }];
    }
    return ReflectConstruct(target, args, newTarget as () => unknown);
  },
};
const VirtualFile = new Proxy(NativeFile, FILE_HANDLER as unknown as ProxyHandler<typeof File>);
defineProperty(NativeFile.prototype, "constructor", data(VirtualFile));
defineProperty(globalThis, "File", data(VirtualFile));

// performance.now(): from 0 at the call's start (frozen: 0 throughout), and timeOrigin the
// virtual time then, so timeOrigin + now() is the virtual Date.now() (unrounded)
defineProperty(PerformanceProto, "now", data({ now(this: unknown): number {
  const real = ReflectApply(perfNow, this, []) as number; // its checks of `this`, as before
  return clockMs === null ? real : clockFrozen ? 0 : elapsed();
} }.now, true));
const timeOrigin = getter({ get timeOrigin(): number {
  const real = ReflectApply(perfTimeOrigin, this, []) as number; // its checks of `this`
  return clockMs === null ? real : clockMs;
} }, "timeOrigin");
defineProperty(PerformanceProto, "timeOrigin",
               { __proto__: null, get: timeOrigin, enumerable: true, configurable: true } as PropertyDescriptor);

// 53 random bits from two draws, as V8's own Math.random gives
defineProperty(Math, "random", data({ random(): number {
  if (!seeded) return ReflectApply(mathRandom, Math, []) as number;
  return ((sfc32() >>> 5) * 67108864 + (sfc32() >>> 6)) / 9007199254740992;
} }.random));

// The native one runs first, so its checks (`this`, an integer typed array, at most 65536
// bytes: TypeMismatchError, QuotaExceededError) and what it returns are the real ones; the
// stream then overwrites the bytes it filled, 4 a draw, little-endian
function fill(view: unknown): void {
  const n = call0(taByteLength, view) as number;
  const bytes = new NativeUint8Array(call0(taBuffer, view) as ArrayBuffer, call0(taByteOffset, view) as number, n);
  for (let i = 0; i < n; i += 4) {
    const r = sfc32();
    bytes[i] = r & 255;
    if (i + 1 < n) bytes[i + 1] = (r >>> 8) & 255;
    if (i + 2 < n) bytes[i + 2] = (r >>> 16) & 255;
    if (i + 3 < n) bytes[i + 3] = r >>> 24;
  }
}
// node:crypto's own draws (node_crypto.ts) take the same stream
draws.seeded = () => seeded;
draws.u32 = sfc32;
draws.fill = fill;
freeze(draws);
const HEX: string[] = [];
for (let i = 0; i < 256; i++) append(HEX, (i < 16 ? "0" : "") + ReflectApply(Number.prototype.toString, i, [16]));
defineProperty(CryptoProto, "getRandomValues", data({ getRandomValues(this: unknown, array: unknown) {
  const out = ReflectApply(nativeGetRandomValues, this, [array]);
  if (seeded) fill(array);
  return out;
} }.getRandomValues, true));
defineProperty(CryptoProto, "randomUUID", data({ randomUUID(this: unknown): string {
  const real = ReflectApply(nativeRandomUUID, this, []);
  if (!seeded) return real;
  const b = new NativeUint8Array(16);
  fill(b);
  b[6] = (b[6] & 0x0f) | 0x40; // version 4
  b[8] = (b[8] & 0x3f) | 0x80; // the RFC 9562 variant
  let s = "";
  for (let i = 0; i < 16; i++) s += (i === 4 || i === 6 || i === 8 || i === 10 ? "-" : "") + HEX[b[i]];
  return s;
} }.randomUUID, true));

// Temporal.Now (Deno 2.9 has Temporal): the same virtual now, to the nanosecond its ms give
// deno-lint-ignore no-explicit-any
const TemporalNS = (globalThis as any).Temporal;
if (TemporalNS !== null && typeof TemporalNS === "object" && TemporalNS.Now && TemporalNS.Instant) {
  const Now = TemporalNS.Now, NativeBigInt = BigInt;
  const nowNative: Record<string, unknown> = objectCreate(null);
  const NOW_NAMES = ["instant", "zonedDateTimeISO", "plainDateTimeISO", "plainDateISO", "plainTimeISO"];
  for (let i = 0; i < NOW_NAMES.length; i++) nowNative[NOW_NAMES[i]] = Now[NOW_NAMES[i]];
  const timeZoneId = Now.timeZoneId, fromEpochNs = TemporalNS.Instant.fromEpochNanoseconds;
  const toZoned = TemporalNS.Instant.prototype.toZonedDateTimeISO;
  const Zoned = TemporalNS.ZonedDateTime.prototype;
  const fromZoned: Record<string, unknown> = { __proto__: null, plainDateTimeISO: Zoned.toPlainDateTime,
    plainDateISO: Zoned.toPlainDate, plainTimeISO: Zoned.toPlainTime } as unknown as Record<string, unknown>;
  const instant = () => {
    const ms = virtualNow(), whole = floor(ms);
    return ReflectApply(fromEpochNs, TemporalNS.Instant, [NativeBigInt(whole) * 1000000n +
      NativeBigInt(floor((ms - whole) * 1e6))]);
  };
  const zoned = (tz: unknown) =>
    ReflectApply(toZoned, instant(), [tz === undefined ? ReflectApply(timeZoneId, Now, []) : tz]);
  const methods: Record<string, (...a: unknown[]) => unknown> = {
    instant() {
      return clockMs === null ? ReflectApply(nowNative.instant as () => unknown, Now, []) : instant();
    },
    zonedDateTimeISO(tz?: unknown) {
      return clockMs === null ? ReflectApply(nowNative.zonedDateTimeISO as () => unknown, Now, [tz]) : zoned(tz);
    },
    plainDateTimeISO(tz?: unknown) { return plain("plainDateTimeISO", tz); },
    plainDateISO(tz?: unknown) { return plain("plainDateISO", tz); },
    plainTimeISO(tz?: unknown) { return plain("plainTimeISO", tz); },
  };
  const plain = (name: string, tz: unknown) => clockMs === null
    ? ReflectApply(nowNative[name] as () => unknown, Now, [tz])
    : ReflectApply(fromZoned[name] as () => unknown, zoned(tz), []);
  for (let i = 0; i < NOW_NAMES.length; i++) defineProperty(Now, NOW_NAMES[i], data(methods[NOW_NAMES[i]]));
}

// Intl.DateTimeFormat's format() and formatToParts() without a date format the engine's now:
// the virtual one instead (with a clock set; the native getter and method otherwise)
const DTFProto = Intl.DateTimeFormat.prototype;
const dtfFormat = getter(DTFProto, "format");
const dtfFormatToParts = DTFProto.formatToParts as (this: unknown, d?: unknown) => unknown;
defineProperty(DTFProto, "format", { __proto__: null, enumerable: false, configurable: true,
  get: getter({ get format(): unknown {
    const native = ReflectApply(dtfFormat, this, []) as (d?: unknown) => string; // its checks
    if (clockMs === null) return native;
    return (date?: unknown) => native(date === undefined ? virtualNow() : date);
  } }, "format") } as PropertyDescriptor);
defineProperty(DTFProto, "formatToParts", data({ formatToParts(this: unknown, date?: unknown) {
  return ReflectApply(dtfFormatToParts, this, [date === undefined && clockMs !== null ? virtualNow() : date]);
} }.formatToParts));

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
// host (IDLE in the second buffer: 1 while a top call's leftovers are not yet cleared; RECYCLE:
// the process must end). Re-armed while ctx replies the call did not wait for are still due:
// their continuations run first.
function clearLeftovers(): void {
  if (activeCount > 0 || back === null) return; // a call started since: its own end clears
  if (objectKeys(pending).length > 0) {
    ReflectApply(nativeSetTimeout, globalThis, [clearLeftovers, 1]);
    return;
  }
  const ids = objectKeys(TIMERS);
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i] as unknown as number;
    ReflectDelete(TIMERS, id);
    ReflectApply(nativeClearTimeout, globalThis, [+id]); // (timeouts and intervals share ids)
  }
  for (let i = 0; i < CLOSABLE.length; i++) {
    try { ReflectApply(CLOSABLE[i][0] as () => void, CLOSABLE[i][1], []); } catch { /* closed */ }
  }
  CLOSABLE.length = 0;
  if (nestedWorkers > 0) atomicsStore(back.ctrl, RECYCLE, 1);
  atomicsStore(back.ctrl, IDLE, 0);
  atomicsNotify(back.ctrl, IDLE);
}

// -- the channel ------------------------------------------------------------------------------

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

// SharedArrayBuffer layout, written by the host: [generation, ack, header bytes (-1: this chunk
// continues the payload), payload bytes in all, chunk bytes], then the header and the chunk
const GEN = 0, ACK = 1, HLEN = 2, PLEN = 3, CLEN = 4, DATA = 32;
// in the second buffer only (see clearLeftovers)
const IDLE = 5, RECYCLE = 6;
const taSet = TypedArrayProto.set;

async function receive(sab: SharedArrayBuffer): Promise<void> {
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
type Outgoing = { head: Uint8Array; payload: Uint8Array };
const outbox: Record<number, Outgoing> = objectCreate(null);
let outHead = 0, outTail = 0, outGen = 0, sending = false;
let back: { ctrl: Int32Array; data: Uint8Array } | null = null;

function send(header: Record<string, unknown>, payload: Uint8Array): void {
  outbox[outTail++] = { __proto__: null, head: encode(safeStringify(header) as string), payload } as unknown as Outgoing;
  if (!sending) flush();
}

async function flush(): Promise<void> {
  const b = back;
  if (b === null) return;
  sending = true;
  try {
    while (outHead < outTail) {
      const { head, payload } = outbox[outHead];
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
        atomicsNotify(b.ctrl, GEN);
        off += n;
      } while (off < plen);
    }
  } finally {
    sending = false;
  }
}

function dispatch(msg: Record<string, unknown>, payload: Uint8Array): void {
  if (msg.t === "call") {
    limit = msg.limit as number;
    let refused: unknown = null;
    if (activeCount === 0) { // a top call starts the in-flight count anew; a nested one shares it
      callGen++;
      inflight = 0;
      inflightBytes = 0;
      try { removePlantedThen(); } catch (e) { refused = e; }
      determinism(msg); // the clock and stream of this call and the calls nested in it
    }
    if (activeCalls[msg.id as string] !== true) {
      activeCalls[msg.id as string] = true;
      activeCount++;
    }
    const call = msg.ctx as CallCtx; // its shape is kept now: the tool may not load this time
    // own properties only: shapeText is left out after the first call of a shape, and a read
    // of a missing key reaches Object.prototype, where a tool may have planted a getter
    if (hasOwn(call, "shapeText")) SHAPES[call.shape] = prepare(parseJSON(call.shapeText as string) as CapSpec[]);
    if (refused !== null) fail(msg.id as string, describe(refused));
    else run(msg.id as string, msg.file as string, payload, call, msg.resultChars as number);
  } else if (msg.t === "reply") {
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
}

type CtxErrorData = { code: string; message: string; details?: unknown };

// The errors the bridge made for ctx failures, with their codes: only these carry a platform
// code out of the call. A tool's own `e.name = "CtxError"; e.code = "E_TIMEOUT"` (or a code
// rewritten on a real ctx error) is not one of them; rethrowing a real one keeps its code.
const CTX_ERRORS = new NativeWeakMap<object, string>();

function ctxError(error: CtxErrorData, origin: Error): Error {
  const e = new NativeError(error.message);
  ReflectApply(weakMapSet, CTX_ERRORS, [e, typeof error.code === "string" ? error.code : "E_INTERNAL"]);
  defineProperty(e, "name", data("CtxError"));
  defineProperty(e, "code", data(error.code, true));
  defineProperty(e, "details", data(error.details, true));
  const frames = errorStack(origin);
  const nl = ReflectApply(strIndexOf, frames, ["\n"]) as number;
  defineProperty(e, "stack", data(`CtxError: ${error.message}\n${nl < 0 ? "" : ReflectApply(strSlice, frames, [nl + 1])}`));
  return e;
}

function rejected(code: string, message: string, origin: Error, details: Record<string, unknown>): Promise<never> {
  return own(new NativePromise<never>((_, reject) => reject(ctxError({ code, message, details }, origin))));
}

// Methods the platform does not wait for (codec "void": Ekanos' logger): never "late"
const FIRE_AND_FORGET: Record<string, true> = { __proto__: null } as unknown as Record<string, true>;

// Parameter names, for errors that name an argument: filled from each call's ctx shape
const PARAMS: Record<string, string[]> = { __proto__: null } as unknown as Record<string, string[]>;

function argName(method: string, i: number): string {
  const names = PARAMS[method];
  const name = names !== undefined && i < names.length ? names[i] : undefined;
  return name === undefined ? `argument ${i + 1}` : `argument ${i + 1} (${name})`;
}

// One ctx call: the arguments become JSON text here, in the tool's call, so a BigInt, a cycle
// or an oversized value is an error the tool can catch, not a message the host cannot send.
function ctxCall(callId: string, method: string, args: unknown[]): Promise<unknown> {
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

// -- ctx.http.fetch (N10) ------------------------------------------------------------------------
// The request crosses as plain JSON (bytes as base64), the reply comes back as {status,
// statusText, ok, url, redirected, headers: [[k, v]], body: base64, credentialDenied?} and is
// turned into a Response-like object here.
// Fetch API init options that mean nothing through ctx: accepted and ignored
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

function fromBase64(text: string): Uint8Array {
  const bin = b64decode(text);
  const out = new NativeUint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = ReflectApply(charCodeAt, bin, [i]) as number;
  return out;
}

function fetchArgs(input: unknown, init: unknown): unknown[] {
  if (isA(input, NativeRequest)) { // its body is a stream: not carried; say so, not a silent GET
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

// -- ctx ------------------------------------------------------------------------------------------
// The ctx shape comes with each call (its text the first time, then its number), generated by
// Python from the call's platform profile
// (workbench/platforms: the capability registry) and the tool's grants: this file holds no
// method list. A capability the tool has no grant for is not in the shape: undefined, as on
// the platform (E1's ctx.email, R1's ctx.resources).

type MethodSpec = { name: string; params: string[]; codec: string | null; full: string };
type CapSpec = { path: string; kind: string; methods: MethodSpec[] };

// parsed shapes by number: a gem's tools have a handful between them
const SHAPES: Record<number, CapSpec[]> = { __proto__: null } as unknown as Record<number, CapSpec[]>;

// What every call of a shape shares, worked out once: each method's full name ("files.read"),
// its parameter names (for errors) and whether the platform waits for it
function prepare(shape: CapSpec[]): CapSpec[] {
  for (let i = 0; i < shape.length; i++) {
    const cap = shape[i];
    for (let j = 0; j < cap.methods.length; j++) {
      const m = cap.methods[j];
      // defined, not assigned: an assignment of a key the object lacks runs a setter a tool
      // planted on Object.prototype (and then reading it back would run its getter)
      defineProperty(m, "full", data(cap.kind === "function" ? cap.path : `${cap.path}.${m.name}`));
      PARAMS[m.full] = m.params;
      if (m.codec === "void") FIRE_AND_FORGET[m.full] = true;
    }
  }
  return shape;
}

function shapeOf(call: CallCtx): CapSpec[] {
  const shape = SHAPES[call.shape];
  if (shape === undefined) throw new NativeTypeError(`bridge: ctx shape ${call.shape} was never sent`);
  return shape;
}

// "storage.kv" -> ["storage", "kv"], without String.prototype.split (tools may patch it)
function pathParts(path: string): string[] {
  const parts: string[] = [];
  let from = 0;
  for (;;) {
    const dot = ReflectApply(strIndexOf, path, [".", from]) as number;
    if (dot < 0) { append(parts, ReflectApply(strSlice, path, [from]) as string); return parts; }
    append(parts, ReflectApply(strSlice, path, [from, dot]) as string);
    from = dot + 1;
  }
}

// A real Response (Ekanos' ctx.fetch, K6) from the reply; url and redirected as own values
const NULL_BODY: Record<number, true> = { __proto__: null, 101: true, 103: true, 204: true, 205: true, 304: true } as unknown as Record<number, true>;

function realResponse(r: FetchReply): Response {
  const headers = new NativeHeaders();
  for (let i = 0; i < r.headers.length; i++) {
    ReflectApply(headersAppend, headers, [r.headers[i][0], r.headers[i][1]]);
  }
  const status = r.status >= 200 && r.status <= 599 ? r.status : 502; // 1xx is never final
  const res = new NativeResponse(NULL_BODY[status] ? null : fromBase64(r.body),
                                 { status, statusText: r.statusText, headers });
  defineProperty(res, "url", data(r.url, true));
  defineProperty(res, "redirected", data(r.redirected, true));
  return res;
}

// ctx.http.fetch(url, init) -> Response-like (+ credentialDenied); permission checked in Python.
// codec "response": a real Response instead (not frozen: a Response is the tool's to use).
function fetchMethod(callId: string, name: string, codec: string) {
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

function makeCtx(callId: string, shape: CapSpec[], values: Record<string, unknown>) {
  // a method as its codec makes it: a Response, fire-and-forget, or the plain reply
  const withCodec = (m: MethodSpec, bound: unknown[]) => {
    const name = m.full;
    if (m.codec === "fetch" || m.codec === "response") return fetchMethod(callId, name, m.codec);
    if (m.codec !== "void") return method(name, bound);
    const send = method(name, bound);
    return (...args: unknown[]) => {
      // the platform's logger never throws: a refused row is reported on stderr (the logs)
      ReflectApply(promiseThen, send(...args), [undefined, (e: unknown) =>
        ReflectApply(consoleError, console, [`${name}: ${describe(e).message}`])]);
    };
  };
  const method = (name: string, bound: unknown[]) => (...args: unknown[]) => {
    let all = args;
    if (bound.length) {
      all = [];
      for (let i = 0; i < bound.length; i++) append(all, bound[i]);
      for (let i = 0; i < args.length; i++) append(all, args[i]);
    }
    return ctxCall(callId, name, all);
  };
  const ns = (methods: MethodSpec[], ...bound: unknown[]) => {
    const o = {};
    for (let i = 0; i < methods.length; i++) {
      const m = methods[i];
      defineProperty(o, m.name, data(withCodec(m, bound), true));
    }
    return freeze(o);
  };
  const ctx: Record<string, unknown> = {};
  const inner: object[] = []; // namespaces made for dotted paths (ctx.storage), frozen at the end
  const place = (path: string, value: unknown) => {
    const parts = pathParts(path);
    let at = ctx as Record<string, unknown>;
    for (let i = 0; i < parts.length - 1; i++) {
      if (!hasOwn(at, parts[i])) {
        const o = {};
        defineProperty(at, parts[i], data(o, true));
        append(inner, o);
      }
      at = at[parts[i]] as Record<string, unknown>;
    }
    defineProperty(at, parts[parts.length - 1], data(value, true));
  };
  for (let i = 0; i < shape.length; i++) {
    const cap = shape[i], path = cap.path, methods = cap.methods;
    if (cap.kind === "value") place(path, hasOwn(values, path) ? values[path] : undefined);
    else if (cap.kind === "namespace") place(path, ns(methods));
    else if (cap.kind === "function") place(path, withCodec(methods[0], []));
    else if (cap.kind === "collection") {
      // collection() is synchronous on the platform: the ctx layer checks the name (D1) on use
      place(path, freeze({ collection: (name: string) => ns(methods, name) }));
    }
  }
  for (let i = 0; i < inner.length; i++) freeze(inner[i]);
  return freeze(ctx);
}

const TEXT_MAX = 64 * 1024; // of an error's message and stack: both are the tool's to make long
// V8 makes an error's stack text on first read, looking up the error's name and
// Symbol.toStringTag (so through Error.prototype and Object.prototype) and calling
// Error.prepareStackTrace: all places where a tool can plant code that would see the error.
const STACK_KEYS: PropertyKey[] = ["name", "message", Symbol.toStringTag];

function errorStack(err: object): string {
  const added: PropertyKey[] = [];
  const prepare = nullDesc(getOwnPropertyDescriptor(NativeError, "prepareStackTrace"));
  try {
    for (let i = 0; i < STACK_KEYS.length; i++) {
      const key = STACK_KEYS[i];
      if (hasOwn(err, key)) continue;
      defineProperty(err, key, data(typeof key === "string" ? safeGet(err, key) : undefined));
      append(added, key);
    }
    if (prepare !== undefined) ReflectDelete(NativeError, "prepareStackTrace");
    return cut(safeGet(err, "stack"), TEXT_MAX);
  } catch {
    return ""; // a frozen error, or one whose stack throws: no frames
  } finally {
    for (let i = 0; i < added.length; i++) ReflectDelete(err, added[i]);
    if (prepare !== undefined) defineProperty(NativeError, "prepareStackTrace", prepare);
  }
}

// `bridge` says what the bridge itself made (a ctx error and its code, a result too large or
// not JSON); the tool's own errors never have it, whatever their name and fields.
type Described = { name: string; message: string; stack: string; code: unknown; bridge?: string };

function describe(err: unknown): Described {
  if (isA(err, NativeError)) {
    const e = err as object;
    const d: Described = { name: cut(safeGet(e, "name"), 200) || "Error", message: cut(safeGet(e, "message"), TEXT_MAX),
             stack: errorStack(e), code: null };
    if (ReflectApply(weakMapHas, CTX_ERRORS, [e])) {
      d.code = ReflectApply(weakMapGet, CTX_ERRORS, [e]);
      defineProperty(d, "bridge", data("ctx", true)); // no setter planted on Object.prototype runs
    }
    return d;
  }
  const kind = typeof err;
  const message = err === null || (kind !== "object" && kind !== "function")
    ? cut(`${String(err)}`, TEXT_MAX) : `a thrown ${kind}`;
  return { name: kind, message, stack: "", code: null };
}

// The ctx calls of call `id` still waiting for their reply when it returned: a forgotten
// `await` (the platform may end the call before they complete). At most 5 names, and how many.
function late(id: string): unknown[] {
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

function done(id: string, ok: boolean, text: string): void {
  if (activeCalls[id] === true) {
    ReflectDelete(activeCalls, id);
    activeCount--;
    if (activeCount === 0 && back !== null) { // a top call ended: its leftovers are due
      atomicsStore(back.ctrl, IDLE, 1);
      afterMicrotasks(clearLeftovers);
    }
  }
  const top = activeCount === 0 && clockMs !== null && !clockFrozen; // a top call's reads, for its pin
  send({ t: "done", id, ok, late: late(id), ...(top ? { ticks: taken, start: clockMs } : {}) }, encode(text));
}

function fail(id: string, error: Record<string, unknown>): void {
  done(id, false, safeStringify(error) as string);
}

// what a call message says about the tool's ctx and entry point (workbench/platforms)
type CallCtx = { shape: number; shapeText?: string; values: Record<string, unknown>; exports: string[]; missing: string;
  member: string | null; tool?: string };

// The tools' modules this Worker imported, by URL: import() of a module already evaluated gives
// the same namespace, after a turn of the loader (~35 µs a call). An edited tool gets a new
// Worker (the call is "fresh"), so this never holds a stale module.
const MODULES: Record<string, unknown> = objectCreate(null);
// node_crypto.ts patches node:crypto's default object, which require("node:crypto") returns, but
// runs only once imported (the import map sends a tool's `import "node:crypto"` there): a call
// seeded by the bench's seed= loads it before its tool runs. Only then: it costs 20-90 ms of a
// cold start, which a call seeded only for its pin (ownSeed) does not pay.
let nodeCryptoLoaded = false;

function run(id: string, url: string, input: Uint8Array, call: CallCtx, resultChars: number): void {
  const onError = (err: unknown) => fail(id, describe(err));
  const onValue = (value: unknown) => {
    let json: string | undefined;
    try {
      json = safeStringify(value);
    } catch (err) {
      const d = describe(err);
      fail(id, { name: "ResultError", message: d.message, stack: d.stack, code: null, bridge: "result_error" });
      return;
    }
    json ??= "null"; // undefined (or a function) serialises to nothing: the caller sees null
    if (json.length > resultChars) { // N9 fails anyway: don't carry megabytes to say so
      fail(id, { name: "ResultTooLarge", message: "", stack: "", code: null, size: json.length,
                 bridge: "result_too_large" });
      return;
    }
    done(id, true, json);
  };
  const start = (mod: any) => {
    try {
      const ctx = makeCtx(id, shapeOf(call), call.values);
      const args = parseJSON(decode(input));
      if (call.member) { // default.tools[i].run(ctx, input), the element named like the tool
        const list = mod.default?.[call.member];
        let el: any;
        for (let i = 0; list && i < list.length && el === undefined; i++) {
          if (list[i]?.name === call.tool) el = list[i];
        }
        if (typeof el?.run !== "function") throw new NativeTypeError(call.missing);
        settle(ReflectApply(el.run, el, [ctx, args]), onValue, onError);
        return;
      }
      let fn: unknown;
      for (let i = 0; i < call.exports.length && typeof fn !== "function"; i++) fn = mod[call.exports[i]];
      if (typeof fn !== "function") throw new NativeTypeError(call.missing);
      settle((fn as (i: unknown, c: unknown) => unknown)(args, ctx), onValue, onError);
    } catch (err) {
      onError(err);
    }
  };
  if (seeded && !ownSeed && !nodeCryptoLoaded) { // the seed's draws for require("node:crypto") too (above)
    const go = () => { nodeCryptoLoaded = true; run(id, url, input, call, resultChars); };
    return whenSettled(import("./node_crypto.ts"), go, go);
  }
  const mod = MODULES[url];
  if (mod !== undefined) return start(mod);
  if (internalsHidden !== null) { // no tool module is imported before internals.ts is done
    const go = () => { internalsHidden = null; run(id, url, input, call, resultChars); };
    return whenSettled(internalsHidden, go, go);
  }
  let loading: Promise<unknown>;
  try {
    loading = import(url);
  } catch (err) {
    return onError(err);
  }
  whenSettled(loading, (m: unknown) => {
    MODULES[url] = m;
    start(m);
  }, onError);
}

// The first message on the global port carries the two shared buffers, before any tool code
// runs; nothing else is read there.
self.onmessage = (e: MessageEvent) => {
  self.onmessage = null;
  const sab = e.data.back as SharedArrayBuffer;
  back = { ctrl: new NativeInt32Array(sab, 0, DATA / 4), data: new NativeUint8Array(sab) };
  receive(e.data.sab);
};
