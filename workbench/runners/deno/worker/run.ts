// A call's tool: its module imported (once per Worker), its entry point found, run with its
// input and ctx, and what it returned or threw made the call's end (JSON text, or an error).
import { internalsReady } from "./confine.ts";
import { makeCtx, shapeOf } from "./ctx.ts";
import { describe } from "./errors.ts";
import { decode, NativeTypeError, objectCreate, parseJSON, ReflectApply, safeStringify, settle,
  whenSettled } from "./primordials.ts";
import { seedsNodeCrypto } from "./random.ts";

// what a call message says about the tool's ctx and entry point (workbench/platforms)
export type CallCtx = { shape: number; shapeText?: string; values: Record<string, unknown>; exports: string[];
  missing: string; member: string | null; tool?: string };

// How a call ends: its result as JSON text, or its error (JSON text of what describe made)
export type End = (ok: boolean, text: string) => void;

// The tools' modules this Worker imported, by URL: import() of a module already evaluated gives
// the same namespace, after a turn of the loader (~35 µs a call). An edited tool gets a new
// Worker (the call is "fresh"), so this never holds a stale module.
const MODULES: Record<string, unknown> = objectCreate(null);
// node_crypto.ts patches node:crypto's default object, which require("node:crypto") returns, but
// runs only once imported (the import map sends a tool's `import "node:crypto"` there): a call
// seeded by the bench's seed= loads it before its tool runs. Only then: it costs 20-90 ms of a
// cold start, which a call seeded only for its pin (ownSeed) does not pay.
let nodeCryptoLoaded = false;
let internalsHidden: Promise<unknown> | null = internalsReady; // (confine.ts)

export function fail(end: End, error: Record<string, unknown>): void {
  end(false, safeStringify(error) as string);
}

// What the tool returned, as the call's result: JSON text of at most resultChars (N9)
function result(end: End, value: unknown, resultChars: number): void {
  let json: string | undefined;
  try {
    json = safeStringify(value);
  } catch (err) {
    const d = describe(err);
    fail(end, { name: "ResultError", message: d.message, stack: d.stack, code: null, bridge: "result_error" });
    return;
  }
  json ??= "null"; // undefined (or a function) serialises to nothing: the caller sees null
  if (json.length > resultChars) { // N9 fails anyway: don't carry megabytes to say so
    fail(end, { name: "ResultTooLarge", message: "", stack: "", code: null, size: json.length,
                bridge: "result_too_large" });
    return;
  }
  end(true, json);
}

// The tool's entry point in its module, called with its input and ctx: an export named in
// call.exports, or default[member][i].run for the element named like the tool
function invoke(mod: any, call: CallCtx, args: unknown, ctx: unknown): unknown {
  if (call.member) {
    const list = mod.default?.[call.member];
    let el: any;
    for (let i = 0; list && i < list.length && el === undefined; i++) {
      if (list[i]?.name === call.tool) el = list[i];
    }
    if (typeof el?.run !== "function") throw new NativeTypeError(call.missing);
    return ReflectApply(el.run, el, [ctx, args]);
  }
  let fn: unknown;
  for (let i = 0; i < call.exports.length && typeof fn !== "function"; i++) fn = mod[call.exports[i]];
  if (typeof fn !== "function") throw new NativeTypeError(call.missing);
  return (fn as (i: unknown, c: unknown) => unknown)(args, ctx);
}

export function run(id: string, url: string, input: Uint8Array, call: CallCtx, resultChars: number, end: End): void {
  const onError = (err: unknown) => fail(end, describe(err));
  const onValue = (value: unknown) => result(end, value, resultChars);
  const start = (mod: unknown) => {
    try {
      const ctx = makeCtx(id, shapeOf(call.shape), call.values);
      settle(invoke(mod, call, parseJSON(decode(input)), ctx), onValue, onError);
    } catch (err) {
      onError(err);
    }
  };
  const again = () => run(id, url, input, call, resultChars, end);
  if (seedsNodeCrypto() && !nodeCryptoLoaded) { // the seed's draws for require("node:crypto") too (above)
    const go = () => { nodeCryptoLoaded = true; again(); };
    return whenSettled(import("../node_crypto.ts"), go, go);
  }
  const mod = MODULES[url];
  if (mod !== undefined) return start(mod);
  if (internalsHidden !== null) { // no tool module is imported before internals.ts is done
    const go = () => { internalsHidden = null; again(); };
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
