// vitest's `vi`: mock functions, spies, fake timers and global stubs, with vitest 4's semantics
// (mockReset goes back to the function given to vi.fn; restoreAllMocks restores vi.spyOn spies
// only). Module mocking (vi.mock) needs vitest's own module loader: it throws, saying so.

type AnyFn = (...args: any[]) => any;
export interface MockResult {
  type: 'return' | 'throw';
  value: unknown;
}
export interface MockState {
  calls: unknown[][];
  results: MockResult[];
  instances: unknown[];
  contexts: unknown[];
  lastCall: unknown[] | undefined;
}
export interface Mock extends AnyFn {
  mock: MockState;
  _isMockFunction: true;
  getMockName(): string;
  mockName(name: string): Mock;
  getMockImplementation(): AnyFn | undefined;
  mockImplementation(fn: AnyFn): Mock;
  mockImplementationOnce(fn: AnyFn): Mock;
  mockReturnValue(v: unknown): Mock;
  mockReturnValueOnce(v: unknown): Mock;
  mockResolvedValue(v: unknown): Mock;
  mockResolvedValueOnce(v: unknown): Mock;
  mockRejectedValue(v: unknown): Mock;
  mockRejectedValueOnce(v: unknown): Mock;
  mockReturnThis(): Mock;
  mockClear(): Mock;
  mockReset(): Mock;
  mockRestore(): Mock;
}

const mocks = new Set<Mock>();
const spies = new Set<Mock>();

function emptyState(): MockState {
  return { calls: [], results: [], instances: [], contexts: [], lastCall: undefined };
}

function makeMock(original: AnyFn | undefined, restore?: () => void): Mock {
  let impl = original;
  let once: AnyFn[] = [];
  let name = 'vi.fn()';
  let state = emptyState();
  const mock = function (this: unknown, ...args: unknown[]) {
    state.calls.push(args);
    state.lastCall = args;
    state.contexts.push(this);
    const isNew = new.target !== undefined;
    const at = state.instances.push(isNew ? this : undefined) - 1;
    const fn = once.length ? once.shift() : impl;
    const result: MockResult = { type: 'return', value: undefined };
    state.results.push(result);
    try {
      // a class must be constructed (its instance is then the one recorded); a function runs on `this`
      const isClass = isNew && fn && /^class\b/.test(Function.prototype.toString.call(fn));
      result.value = !fn ? undefined : isClass ? Reflect.construct(fn, args, new.target) : fn.apply(this, args);
      if (isClass) state.instances[at] = result.value;
    } catch (e) {
      result.type = 'throw';
      result.value = e;
      throw e;
    }
    if (isNew && fn && (typeof result.value !== 'object' || result.value === null)) return this;
    return result.value;
  } as unknown as Mock;
  Object.defineProperty(mock, 'mock', { get: () => state, enumerable: true });
  const self = (f: () => void): Mock => (f(), mock);
  Object.assign(mock, {
    _isMockFunction: true,
    getMockName: () => name,
    mockName: (n: string) => self(() => (name = n)),
    getMockImplementation: () => impl,
    mockImplementation: (fn: AnyFn) => self(() => (impl = fn)),
    mockImplementationOnce: (fn: AnyFn) => self(() => once.push(fn)),
    mockReturnValue: (v: unknown) => mock.mockImplementation(() => v),
    mockReturnValueOnce: (v: unknown) => mock.mockImplementationOnce(() => v),
    mockResolvedValue: (v: unknown) => mock.mockImplementation(() => Promise.resolve(v)),
    mockResolvedValueOnce: (v: unknown) => mock.mockImplementationOnce(() => Promise.resolve(v)),
    mockRejectedValue: (v: unknown) => mock.mockImplementation(() => Promise.reject(v)),
    mockRejectedValueOnce: (v: unknown) => mock.mockImplementationOnce(() => Promise.reject(v)),
    mockReturnThis: () => mock.mockImplementation(function (this: unknown) { return this; }),
    mockClear: () => self(() => (state = emptyState())),
    mockReset: () => self(() => ((state = emptyState()), (once = []), (impl = original))),
    mockRestore: () => self(() => {
      mock.mockReset();
      if (restore) restore(), spies.delete(mock);
    }),
  });
  mocks.add(mock);
  return mock;
}

function fn(impl?: AnyFn): Mock {
  if (impl !== undefined && typeof impl !== 'function') throw new TypeError(`vi.fn() takes a function, got ${typeof impl}`);
  return makeMock(impl);
}

function spyOn(obj: any, key: PropertyKey, access?: 'get' | 'set'): Mock {
  if ((typeof obj !== 'object' && typeof obj !== 'function') || obj === null) {
    throw new TypeError(`vi.spyOn() needs an object, got ${obj === null ? 'null' : typeof obj}`);
  }
  let owner = obj;
  while (owner && !Object.getOwnPropertyDescriptor(owner, key)) owner = Object.getPrototypeOf(owner);
  const desc = owner && Object.getOwnPropertyDescriptor(owner, key);
  if (!desc) throw new TypeError(`vi.spyOn(): ${String(key)} does not exist`);
  const slot = access ?? 'value';
  const original = desc[slot];
  if (typeof original !== 'function') {
    throw new TypeError(`vi.spyOn(): ${String(key)} is not a ${access ? `${access}ter` : 'function'}`);
  }
  if (original._isMockFunction) return original as Mock;
  const own = Object.getOwnPropertyDescriptor(obj, key);
  const restore = () => (own ? Object.defineProperty(obj, key, own) : delete obj[key]);
  const spy = makeMock(original, restore);
  spy.mockName(String(key));
  Object.defineProperty(obj, key, { ...desc, [slot]: spy, configurable: true });
  spies.add(spy);
  return spy;
}

// Fake timers: setTimeout/setInterval/Date driven by advanceTimersByTime. The runner keeps the
// real setTimeout (captured at load) for its own test timeouts.
const real = { setTimeout, clearTimeout, setInterval, clearInterval, Date };
interface Timer { id: number; at: number; fn: AnyFn; args: unknown[]; every: number | null }
let clock: { now: number; timers: Map<number, Timer>; next: number } | null = null;

function fakeDate(): DateConstructor {
  const RealDate = real.Date;
  const F = function (this: unknown, ...args: unknown[]) {
    if (!new.target) return new RealDate(clock!.now).toString();
    return args.length ? new (RealDate as any)(...args) : new RealDate(clock!.now);
  } as unknown as DateConstructor;
  Object.setPrototypeOf(F, RealDate);
  Object.defineProperty(F, 'prototype', { value: RealDate.prototype }); // instanceof Date still holds
  F.now = () => clock!.now;
  return F;
}

function useFakeTimers(): Vi {
  if (clock) return vi;
  clock = { now: real.Date.now(), timers: new Map(), next: 1 };
  const add = (fn: AnyFn, ms: unknown, args: unknown[], every: boolean) => {
    const c = clock!;
    const delay = Math.max(0, Number(ms) || 0);
    const id = c.next++;
    c.timers.set(id, { id, at: c.now + delay, fn, args, every: every ? Math.max(1, delay) : null });
    return id;
  };
  const clear = (id: unknown) => void clock?.timers.delete(Number(id));
  Object.assign(globalThis, {
    setTimeout: (f: AnyFn, ms?: number, ...args: unknown[]) => add(f, ms, args, false),
    setInterval: (f: AnyFn, ms?: number, ...args: unknown[]) => add(f, ms, args, true),
    clearTimeout: clear,
    clearInterval: clear,
    Date: fakeDate(),
  });
  return vi;
}

function useRealTimers(): Vi {
  clock = null;
  Object.assign(globalThis, real);
  return vi;
}

function needClock(what: string) {
  if (!clock) throw new Error(`vi.${what}(): timers are not mocked; call vi.useFakeTimers() first`);
  return clock;
}

/** Run the timers due within `ms`, in time order, moving the clock to each. */
function advanceTimersByTime(ms: number): Vi {
  const c = needClock('advanceTimersByTime');
  const end = c.now + ms;
  for (let guard = 0; guard < 10_000; guard++) {
    const due = [...c.timers.values()].filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.id - b.id)[0];
    if (!due) break;
    c.now = due.at;
    if (due.every) due.at += due.every;
    else c.timers.delete(due.id);
    due.fn(...due.args);
  }
  c.now = end;
  return vi;
}

function runAllTimers(): Vi {
  const c = needClock('runAllTimers');
  for (let guard = 0; guard < 10_000 && c.timers.size; guard++) {
    const t = [...c.timers.values()].sort((a, b) => a.at - b.at || a.id - b.id)[0];
    advanceTimersByTime(Math.max(0, t.at - c.now));
  }
  return vi;
}

const stubbed = new Map<PropertyKey, PropertyDescriptor | undefined>();
function stubGlobal(name: PropertyKey, value: unknown): Vi {
  if (!stubbed.has(name)) stubbed.set(name, Object.getOwnPropertyDescriptor(globalThis, name));
  Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: true });
  return vi;
}
function unstubAllGlobals(): Vi {
  for (const [name, desc] of stubbed) desc ? Object.defineProperty(globalThis, name, desc) : delete (globalThis as any)[name];
  stubbed.clear();
  return vi;
}

function unsupported(name: string): never {
  throw new Error(
    `vi.${name}() is not supported by the workbench's vitest (module mocking needs vitest's own module ` +
      'loader): pass the dependency in (a createMockContext ctx, a vi.fn()) or vi.spyOn the object instead',
  );
}

type Vi = {
  fn(impl?: AnyFn): Mock;
  spyOn(obj: any, key: PropertyKey, access?: 'get' | 'set'): Mock;
  isMockFunction(f: unknown): f is Mock;
  clearAllMocks(): Vi;
  resetAllMocks(): Vi;
  restoreAllMocks(): Vi;
  useFakeTimers(): Vi;
  useRealTimers(): Vi;
  isFakeTimers(): boolean;
  advanceTimersByTime(ms: number): Vi;
  runAllTimers(): Vi;
  getTimerCount(): number;
  clearAllTimers(): Vi;
  setSystemTime(t: number | Date): Vi;
  stubGlobal(name: PropertyKey, value: unknown): Vi;
  unstubAllGlobals(): Vi;
  mock(...args: unknown[]): never;
  doMock(...args: unknown[]): never;
  unmock(...args: unknown[]): never;
  importMock(...args: unknown[]): never;
};
export const vi: Vi = {
  fn,
  spyOn,
  isMockFunction: (f: unknown): f is Mock => typeof f === 'function' && (f as Mock)._isMockFunction === true,
  clearAllMocks: () => (mocks.forEach((m) => m.mockClear()), vi),
  resetAllMocks: () => (mocks.forEach((m) => m.mockReset()), vi),
  restoreAllMocks: () => ([...spies].forEach((m) => m.mockRestore()), vi),
  useFakeTimers,
  useRealTimers,
  isFakeTimers: () => clock !== null,
  advanceTimersByTime,
  runAllTimers,
  getTimerCount: () => needClock('getTimerCount').timers.size,
  clearAllTimers: () => (needClock('clearAllTimers').timers.clear(), vi),
  setSystemTime: (t: number | Date) => ((needClock('setSystemTime').now = Number(t)), vi),
  stubGlobal,
  unstubAllGlobals,
  mock: (..._: unknown[]) => unsupported('mock'),
  doMock: (..._: unknown[]) => unsupported('doMock'),
  unmock: (..._: unknown[]) => unsupported('unmock'),
  importMock: (..._: unknown[]) => unsupported('importMock'),
};

/** The real setTimeout/clearTimeout, for the runner's own timeouts under fake timers. */
export const realTimers = { setTimeout: real.setTimeout, clearTimeout: real.clearTimeout };
