// The randomness a tool sees: with the call's seed ("seed": a uint32), Math.random,
// crypto.getRandomValues/randomUUID and node:crypto's own draws (node_crypto.ts) take one
// stream, the same in any Worker; without one, each native is called as it is. Replaced once,
// before any tool code runs (see clock.ts); a call nested in a top call shares its stream.
import { append, call0, data, defineProperty, freeze, getPrototypeOf, hasOwn, NativeUint8Array,
  ReflectApply, taBuffer, taByteLength, taByteOffset } from "./primordials.ts";
import { draws } from "../internals.ts";

const mathRandom = Math.random;
const imul = Math.imul;
const CryptoProto = getPrototypeOf(crypto);
const nativeGetRandomValues = CryptoProto.getRandomValues as (this: unknown, a: unknown) => unknown;
const nativeRandomUUID = CryptoProto.randomUUID as (this: unknown) => string;
let seeded = false; // sfc32's state below holds the call's stream
let ownSeed = false; // the seed is the call's own, for its pin (not the bench's seed=)
let sa = 0, sb = 0, sc = 0, sd = 0;

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

// The stream of a top call from its message (and of the calls nested in it)
export function seedFrom(msg: Record<string, unknown>): void {
  seeded = false;
  if (hasOwn(msg, "seed") && typeof msg.seed === "number") seed(msg.seed);
  ownSeed = hasOwn(msg, "ownSeed") && msg.ownSeed === true;
}

// The bench's seed= is set: require("node:crypto") must draw from it too (main.ts `run`)
export function seedsNodeCrypto(): boolean {
  return seeded && !ownSeed;
}
