// What a thrown value says (name, message, stack) read without running a tool's planted code,
// and the errors the bridge itself makes for ctx failures.
import { append, cut, data, defineProperty, getOwnPropertyDescriptor, hasOwn, isA, NativeError,
  NativePromise, NativeWeakMap, nullDesc, own, ReflectApply, ReflectDelete, safeGet, strIndexOf, strSlice,
  weakMapGet, weakMapHas, weakMapSet } from "./primordials.ts";
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

export function describe(err: unknown): Described {
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


export type CtxErrorData = { code: string; message: string; details?: unknown };

// The errors the bridge made for ctx failures, with their codes: only these carry a platform
// code out of the call. A tool's own `e.name = "CtxError"; e.code = "E_TIMEOUT"` (or a code
// rewritten on a real ctx error) is not one of them; rethrowing a real one keeps its code.
const CTX_ERRORS = new NativeWeakMap<object, string>();

export function ctxError(error: CtxErrorData, origin: Error): Error {
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

export function rejected(code: string, message: string, origin: Error, details: Record<string, unknown>): Promise<never> {
  return own(new NativePromise<never>((_, reject) => reject(ctxError({ code, message, details }, origin))));
}
