// The built-ins the bridge uses, taken before any tool runs (a tool may patch any global or
// prototype for the next calls), and the helpers that settle, serialise and read values without
// a lookup reaching a prototype a tool can patch (see main.ts).
const ObjectCtor = Object;
export const { freeze, defineProperty, getOwnPropertyDescriptor, getPrototypeOf, keys: objectKeys,
        create: objectCreate, isExtensible } = ObjectCtor;
export const hasOwn = ObjectCtor.hasOwn;
export const ReflectApply = Reflect.apply;
export const ReflectDelete = Reflect.deleteProperty;
const ReflectSetPrototypeOf = Reflect.setPrototypeOf;
export const ReflectConstruct = Reflect.construct;
export const NativePromise = Promise;
const PromiseProto = Promise.prototype;
export const promiseThen = PromiseProto.then;
export const NativeError = Error;
export const NativeTypeError = TypeError;
export const NativeUint8Array = Uint8Array;
export const NativeInt32Array = Int32Array;
export const NativeArrayBuffer = ArrayBuffer;
export const NativeHeaders = Headers;
export const consoleError = console.error;
export const NativeURL = URL;
export const NativeURLSearchParams = URLSearchParams;
const stringify = JSON.stringify;
export const parseJSON = JSON.parse;
export const fromCharCode = String.fromCharCode;
export const b64encode = btoa;
export const b64decode = atob;
export const isView = ArrayBuffer.isView;
export const isArray = Array.isArray;
// Brand checks without `instanceof`: a tool may plant Symbol.hasInstance on URL, Headers,
// Uint8Array... and would then see (and alter) the next call's fetch arguments or errors.
// OrdinaryHasInstance, captured (Function.prototype[@@hasInstance] is non-writable), applied to
// the captured constructor, whose `prototype` is non-writable: no lookup a tool can reach.
const ordinaryHasInstance = Function.prototype[Symbol.hasInstance];
export const isA = (x: unknown, C: unknown): boolean => ReflectApply(ordinaryHasInstance, C, [x]) as boolean;
export const NativeWeakMap = WeakMap;
export const weakMapGet = WeakMap.prototype.get;
export const weakMapSet = WeakMap.prototype.set;
export const weakMapHas = WeakMap.prototype.has;
export const { load: atomicsLoad, store: atomicsStore, notify: atomicsNotify } = Atomics;
export const waitAsync = (Atomics as unknown as { waitAsync: (...a: unknown[]) => { async: boolean; value: unknown } }).waitAsync;
const encoder = new TextEncoder();
export const encode = encoder.encode.bind(encoder);
const decoder = new TextDecoder();
export const decode = decoder.decode.bind(decoder);
export const TypedArrayProto = getPrototypeOf(NativeUint8Array.prototype);
export const getter = (proto: object, key: PropertyKey) =>
  (getOwnPropertyDescriptor(proto, key) as PropertyDescriptor).get as (this: unknown) => unknown;
// A global that Deno makes on first touch (its getter loads the runtime's own module that
// defines it: Response and Request load fetch's, the timers node:timers'), taken as that getter:
// touched at start, Response alone cost ~7 ms of a Worker's start that only ctx's fetch needs.
// The getter is taken now, before any tool runs (a tool may replace the global, whose setter
// then defines a plain value, or delete it); called on first use, it runs only the runtime's
// loader, which consults nothing a tool can reach (the module's own code, made with the
// runtime's own primordials), and gives the class the global would have given before any tool
// ran: the same one a tool touching the global loads. A global that is not lazy (another Deno)
// is taken as it is.
export function lazyGlobal<T>(name: string): () => T {
  const d = getOwnPropertyDescriptor(globalThis, name);
  if (d === undefined || hasOwn(d, "value") || d.get === undefined) {
    const value = d === undefined ? undefined : d.value;
    return () => value as T;
  }
  const get = d.get;
  let value: unknown, taken = false;
  return () => {
    if (!taken) {
      value = ReflectApply(get, globalThis, []);
      taken = true;
    }
    return value as T;
  };
}
export const nativeResponse = lazyGlobal<typeof Response>("Response");
export const nativeRequest = lazyGlobal<typeof Request>("Request");
export const taBuffer = getter(TypedArrayProto, "buffer");
export const taByteOffset = getter(TypedArrayProto, "byteOffset");
export const taByteLength = getter(TypedArrayProto, "byteLength");
export const abByteLength = getter(NativeArrayBuffer.prototype, "byteLength");
export const urlHref = getter(NativeURL.prototype, "href");
export const searchToString = NativeURLSearchParams.prototype.toString;
export const headersEntries = NativeHeaders.prototype.entries;
export const headersAppend = NativeHeaders.prototype.append;
export const headersIterNext = getPrototypeOf(new NativeHeaders().entries()).next;
export const charCodeAt = String.prototype.charCodeAt;
export const strIndexOf = String.prototype.indexOf;
export const strSlice = String.prototype.slice;
export const call0 = (fn: unknown, self: unknown) => ReflectApply(fn as () => unknown, self, []);
// descriptors without a prototype: defineProperty reads get/set/value... from its argument
export const data = (value: unknown, enumerable = false) =>
  ({ __proto__: null, value, writable: true, enumerable, configurable: true }) as PropertyDescriptor;
// defineProperty(o, key, data(value, true)) without a new descriptor each time: one kept here,
// its value cleared after (for objects the bridge makes: a plain object runs no code meanwhile)
const ENUMERABLE = data(undefined, true);
export function defineEnumerable(o: object, key: PropertyKey, value: unknown): void {
  ENUMERABLE.value = value;
  defineProperty(o, key, ENUMERABLE);
  ENUMERABLE.value = undefined;
}
// A descriptor from getOwnPropertyDescriptor inherits from Object.prototype: handed back to
// defineProperty, a `get` or `value` a tool planted there would be read. Copied without one.
const DESC_FIELDS = ["value", "writable", "get", "set", "enumerable", "configurable"];
export function nullDesc(d: PropertyDescriptor | undefined): PropertyDescriptor | undefined {
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
export function safeGet(o: unknown, key: string): unknown {
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
export function safeStringify(value: unknown): string | undefined {
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
// (Descriptors made once: defineProperty only reads them, and a Proxy's trap gets a copy.)
const OWN_CONSTRUCTOR = freeze(data(NativePromise)), OWN_THEN = freeze(data(promiseThen));
const NO_THEN = freeze(data(undefined));
export function own<T>(p: T): T {
  // (a promise the tool froze keeps the lookups: rare, and its own doing)
  if (p !== null && typeof p === "object" && getPrototypeOf(p) === PromiseProto && isExtensible(p)) {
    defineProperty(p, "constructor", OWN_CONSTRUCTOR);
    defineProperty(p, "then", OWN_THEN);
  }
  return p;
}

// Resolve with a value without the `then` lookup reaching a built-in prototype
// (a frozen value cannot be given one: it is resolved as it is; the bridge freezes after)
export function resolveWith(resolve: (v: unknown) => void, value: unknown): void {
  if (value !== null && typeof value === "object" && isExtensible(value)) {
    defineProperty(value, "then", NO_THEN);
    resolve(value);
    ReflectDelete(value, "then");
  } else resolve(value);
}

// Continue with a native promise's outcome: a captured `then` on a promise that has its own
// `constructor`, so nothing is looked up on Promise.prototype
export function whenSettled(p: unknown, ok: (v: unknown) => void, err: (e: unknown) => void): void {
  ReflectApply(promiseThen, own(p), [ok, err]);
}

// A promise for a value, resolved without a `then` lookup reaching a built-in prototype
export function promiseOf(make: () => unknown): Promise<unknown> {
  return own(new NativePromise((resolve, reject) => {
    try { resolveWith(resolve, make()); } catch (e) { reject(e); }
  }));
}

// What the tool returned, settled: its own promise or thenable awaited, not a `then` that a
// tool planted on Object.prototype. Never through an async function's return (a `then` lookup).
export function settle(value: unknown, ok: (v: unknown) => void, err: (e: unknown) => void): void {
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

export function removePlantedThen(): void {
  for (let i = 0; i < INTRINSICS.length; i++) {
    const d = getOwnPropertyDescriptor(INTRINSICS[i], "then");
    if (d === undefined || (hasOwn(d, "value") && d.value === THEN_NATIVE[i])) continue;
    if (!ReflectDelete(INTRINSICS[i], "then")) {
      throw new NativeTypeError("a tool made a built-in prototype's `then` unremovable: " +
                                "no value could be returned safely in this Worker");
    }
  }
}

export function append(list: unknown[], value: unknown): void {
  defineProperty(list, list.length, data(value, true)); // no setter on Array.prototype[i] runs
}

export function cut(text: unknown, max: number): string {
  const s = typeof text === "string" ? text : "";
  return s.length > max ? ReflectApply(strSlice, s, [0, max]) as string + "…" : s;
}
