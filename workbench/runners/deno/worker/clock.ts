// The clock a tool sees. The bench may give a call a virtual clock ("clock": [ms since the epoch
// at the call's start, frozen]). Date, File, performance.now/timeOrigin, Temporal.Now and
// Intl.DateTimeFormat are replaced here, once, before any tool code runs, by functions that
// read this Worker's current setting: a module a tool imported in a call on real time holds
// these, not the natives, when a later call is virtual. The natives are kept only here
// (Date.prototype.constructor is the replacement too). Set by each top call from its message
// (absent: real time, as if nothing were replaced: each native is then called as it is); a call
// nested in it (ctx.tools, A3) shares its clock. The seed's stream: random.ts.
// What remains reachable: docs/readings.md "Deterministic calls in the sandbox".
import { append, data, defineProperty, getPrototypeOf, getter, hasOwn, isArray, objectCreate, ReflectApply,
  ReflectConstruct } from "./primordials.ts";
const NativeDate = Date;
const nativeDateNow = Date.now;
const dateToString = Date.prototype.toString;
const floor = Math.floor;
const PerformanceProto = getPrototypeOf(performance);
const perfNow = PerformanceProto.now as (this: unknown) => number;
const perfTimeOrigin = getter(PerformanceProto, "timeOrigin");
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

// The clock of a top call from its message (and of the calls nested in it)
export function clockFrom(msg: Record<string, unknown>): void {
  clockMs = null;
  clockFrozen = false;
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
}

// A running clock's reads for the top call's pin ({ticks, start}), or null: real or frozen time
export function clockReads(): { ticks: number[]; start: number } | null {
  return clockMs !== null && !clockFrozen ? { ticks: taken, start: clockMs } : null;
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
