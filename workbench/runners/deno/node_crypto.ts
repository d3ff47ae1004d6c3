// node:crypto as tools import it (the sandbox's import map points "node:crypto" here; this
// module alone gets the runtime's). randomInt, randomFillSync and randomFill draw from the
// runtime's ops directly, past crypto.getRandomValues, so a seeded call's draws were real ones:
// here, with a seed, they draw from the call's stream (worker/random.ts `seed`), after the runtime's
// own function ran on the same arguments (so its checks and errors are the real ones). The
// default export (and require("node:crypto"), the same object) gets the same functions.
// deno-lint-ignore-file no-explicit-any
import real from "node:crypto";
import { draws } from "./internals.ts";

export * from "node:crypto";

const nativeInt = real.randomInt as (...a: any[]) => any;
const nativeFillSync = real.randomFillSync as (...a: any[]) => any;
const nativeFill = real.randomFill as (...a: any[]) => any;
const { ceil, floor } = Math;
const TWO32 = 2 ** 32, TWO48 = 2 ** 48;

// uniform in [min, max) from 48-bit draws, by rejection (max - min <= 2^48, checked natively)
function drawInt(min: number, max: number): number {
  const range = max - min, limit = TWO48 - (TWO48 % range);
  for (;;) {
    const r = (draws.u32() >>> 16) * TWO32 + draws.u32();
    if (r < limit) return min + (r % range);
  }
}

// The bytes randomFill(Sync) filled, as the runtime computes them (arguments it accepted)
function region(buf: any, offset: number, size: number | undefined): Uint8Array {
  const el = buf.BYTES_PER_ELEMENT || 1;
  const start = offset * el, n = size === undefined ? buf.byteLength - start : size * el;
  return ArrayBuffer.isView(buf)
    ? new Uint8Array(buf.buffer, buf.byteOffset + start, n)
    : new Uint8Array(buf, start, n);
}

export function randomInt(a: any, b?: any, c?: any): any {
  const ranged = typeof b === "number";
  const [min, max, cb] = ranged ? [a, b, c] : [0, a, b];
  if (typeof cb === "function") {
    const seeded = draws.seeded();
    return nativeInt(...(ranged ? [a, b] : [a]), (err: unknown, n: unknown) =>
      cb(err, seeded && err == null ? drawInt(ceil(min), floor(max)) : n));
  }
  const n = ranged ? nativeInt(a, b) : nativeInt(a);
  return draws.seeded() ? drawInt(ceil(min), floor(max)) : n;
}

export function randomFillSync(buf: any, offset = 0, size?: number): any {
  const out = nativeFillSync(buf, offset, size);
  if (draws.seeded()) draws.fill(region(buf, offset, size));
  return out;
}

export function randomFill(buf: any, ...rest: any[]): void {
  const cb = rest[rest.length - 1];
  if (typeof cb !== "function") return nativeFill(buf, ...rest); // (its own error)
  const seeded = draws.seeded();
  let drawn: [Uint8Array, Uint8Array] | null = null;
  nativeFill(buf, ...rest.slice(0, -1), (err: unknown, b: unknown) => {
    if (err == null && drawn !== null) drawn[0].set(drawn[1]);
    cb(err, b);
  });
  if (!seeded) return;
  // drawn now, in the call's order; written where the runtime's bytes land once they have
  const offset = typeof rest[0] === "number" ? rest[0] : 0;
  const size = typeof rest[1] === "number" ? rest[1] : typeof rest[0] === "number" ? buf.length - offset : buf.length;
  const target = region(buf, offset, size);
  const bytes = new Uint8Array(target.length);
  draws.fill(bytes);
  drawn = [target, bytes];
}

real.randomInt = randomInt;
real.randomFillSync = randomFillSync;
real.randomFill = randomFill;
export default real;
