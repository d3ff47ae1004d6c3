// vitest's `expect`, the matchers tools' tests use. Failures say what was expected and what was
// received, as vitest does (Deno's std asserts are a download away, and nothing is fetched).

import { asymmetricMatchers, equals, matchObject, show } from './equals.ts';

export class AssertionError extends Error {
  override name = 'AssertionError';
}

interface Outcome {
  pass: boolean;
  expected?: unknown;
  detail?: string; // a message instead of Expected/Received
}

function throwCheck(thrown: { value: unknown } | null, expected: unknown): Outcome {
  if (!thrown) return { pass: false, detail: 'Received function did not throw' };
  const err = thrown.value;
  const message = err instanceof Error ? err.message : String(err);
  if (expected === undefined) return { pass: true, detail: `Thrown: ${show(err)}` };
  if (typeof expected === 'string') return { pass: message.includes(expected), expected, detail: `Expected substring: ${show(expected)}\nReceived message: ${show(message)}` };
  if (expected instanceof RegExp) return { pass: expected.test(message), detail: `Expected pattern: ${expected}\nReceived message: ${show(message)}` };
  if (typeof expected === 'function') {
    return { pass: err instanceof expected, detail: `Expected constructor: ${expected.name}\nReceived: ${show(err)}` };
  }
  if (expected instanceof Error) return { pass: message === expected.message, detail: `Expected message: ${show(expected.message)}\nReceived message: ${show(message)}` };
  return { pass: false, detail: `toThrow takes a string, a RegExp, an Error class or an Error, got ${show(expected)}` };
}

type M = (...expected: any[]) => Outcome;

/** The mock of a `vi.fn()` / `vi.spyOn()`, or a TypeError as vitest throws (whatever `.not`). */
function spyState(received: unknown, matcher: string): { calls: unknown[][]; results: { type: string; value: unknown }[] } {
  const m = received as { _isMockFunction?: boolean; mock?: { calls: unknown[][]; results: { type: string; value: unknown }[] } };
  if (typeof received !== 'function' || !m._isMockFunction || !m.mock) {
    throw new TypeError(`${show(received)} is not a spy or a call to a spy! (expect(…).${matcher} needs a vi.fn() or vi.spyOn())`);
  }
  return m.mock;
}

const callList = (calls: unknown[][]) => calls.length ? calls.map((c, i) => `  ${i + 1}: ${show(c)}`).join('\n') : '  (no calls)';

/** Where `path` ('a.b[0]' or ['a', 'b']) leads in `obj`: found, and the value there. */
function propertyAt(obj: unknown, path: string | (string | number)[]): { found: boolean; value: unknown } {
  const keys = Array.isArray(path) ? path.map(String) : path.replace(/\[(\w+)\]/g, '.$1').split('.').filter((k) => k !== '');
  let v: unknown = obj;
  for (const k of keys) {
    if (v === null || v === undefined || !(k in Object(v))) return { found: false, value: undefined };
    v = (v as Record<string, unknown>)[k];
  }
  return { found: true, value: v };
}

function matchers(received: unknown, mode: 'value' | 'resolves' | 'rejects') {
  const cmp = (pass: boolean, expected: unknown): Outcome => ({ pass, expected });
  const num = (f: (a: number, b: number) => boolean) => (n: number) =>
    cmp(typeof received === 'number' || typeof received === 'bigint' ? f(received as number, n) : false, n);
  const called = (name: string, f: (calls: unknown[][]) => boolean, expected: unknown): Outcome => {
    const { calls } = spyState(received, name);
    return { pass: f(calls), detail: `Expected: ${show(expected)}\nReceived calls:\n${callList(calls)}\nNumber of calls: ${calls.length}` };
  };
  const returned = (name: string, f: (values: unknown[]) => boolean, expected: unknown): Outcome => {
    const values = spyState(received, name).results.filter((r) => r.type === 'return').map((r) => r.value);
    return { pass: f(values), detail: `Expected: ${show(expected)}\nReceived returns: ${show(values)}` };
  };
  const all = {
    toBe: (e) => cmp(Object.is(received, e), e),
    toEqual: (e) => cmp(equals(received, e), e),
    toStrictEqual: (e) => cmp(equals(received, e, true), e),
    toMatchObject: (e) => cmp(matchObject(received, e), e),
    toBeNull: () => cmp(received === null, null),
    toBeUndefined: () => cmp(received === undefined, undefined),
    toBeDefined: () => ({ pass: received !== undefined, detail: `Received: ${show(received)}` }),
    toBeTruthy: () => ({ pass: !!received, detail: `Received: ${show(received)}` }),
    toBeFalsy: () => ({ pass: !received, detail: `Received: ${show(received)}` }),
    toBeNaN: () => ({ pass: Number.isNaN(received), detail: `Received: ${show(received)}` }),
    toBeTypeOf: (t) => cmp(typeof received === t, t),
    toBeInstanceOf: (c) => ({
      pass: typeof c === 'function' && received instanceof c,
      detail: `Expected constructor: ${(c as { name?: string })?.name ?? show(c)}\nReceived: ${show(received)}`,
    }),
    toContain: (e) =>
      cmp(typeof received === 'string' ? received.includes(e) : Array.isArray(received) || received instanceof Set ? [...received].includes(e) : false, e),
    toContainEqual: (e) => cmp(Array.isArray(received) && received.some((x) => equals(x, e)), e),
    toHaveLength: (n) => {
      const len = (received as { length?: unknown } | null)?.length;
      return { pass: len === n, detail: `Expected length: ${n}\nReceived length: ${show(len)}\nReceived: ${show(received)}` };
    },
    toHaveProperty: (...args) => {
      const [path, value] = args;
      const at = propertyAt(received, path);
      const pass = at.found && (args.length < 2 || equals(at.value, value));
      const want = args.length < 2 ? '' : `\nExpected value: ${show(value)}`;
      return { pass, detail: `Expected path: ${show(path)}${want}\nReceived ${at.found ? `value: ${show(at.value)}` : 'path: not found'}\nReceived: ${show(received)}` };
    },
    toMatch: (e) => {
      if (typeof received !== 'string') return { pass: false, detail: `expect(received).toMatch() needs a string, got ${show(received)}` };
      const pass = e instanceof RegExp ? new RegExp(e.source, e.flags.replace('g', '')).test(received) : received.includes(String(e));
      return { pass, detail: `Expected ${e instanceof RegExp ? 'pattern' : 'substring'}: ${e instanceof RegExp ? e : show(e)}\nReceived string: ${show(received)}` };
    },
    toBeCloseTo: (n, digits = 2) => {
      const a = received as number;
      const pass = typeof a === 'number' && (a === n || Math.abs(a - n) < 10 ** -digits / 2);
      return { pass, detail: `Expected: ${show(n)} (${digits} digits)\nReceived: ${show(received)}\nDifference: ${typeof a === 'number' ? Math.abs(a - n) : 'n/a'}` };
    },
    toBeGreaterThan: num((a, b) => a > b),
    toBeGreaterThanOrEqual: num((a, b) => a >= b),
    toBeLessThan: num((a, b) => a < b),
    toBeLessThanOrEqual: num((a, b) => a <= b),
    toThrow: (e) => {
      if (mode === 'rejects') return throwCheck({ value: received }, e);
      if (typeof received !== 'function') return { pass: false, detail: `expect(fn).toThrow() needs a function, got ${show(received)}` };
      try {
        received();
      } catch (value) {
        return throwCheck({ value }, e);
      }
      return throwCheck(null, e);
    },
    toHaveBeenCalled: () => called('toHaveBeenCalled', (c) => c.length > 0, 'at least one call'),
    toHaveBeenCalledOnce: () => called('toHaveBeenCalledOnce', (c) => c.length === 1, 'one call'),
    toHaveBeenCalledTimes: (n) => called('toHaveBeenCalledTimes', (c) => c.length === n, `${n} calls`),
    toHaveBeenCalledWith: (...args) => called('toHaveBeenCalledWith', (c) => c.some((x) => equals(x, args)), args),
    toHaveBeenLastCalledWith: (...args) =>
      called('toHaveBeenLastCalledWith', (c) => c.length > 0 && equals(c[c.length - 1], args), args),
    toHaveBeenNthCalledWith: (n, ...args) =>
      called('toHaveBeenNthCalledWith', (c) => c.length >= n && equals(c[n - 1], args), { call: n, args }),
    toHaveReturned: () => returned('toHaveReturned', (v) => v.length > 0, 'a return'),
    toHaveReturnedTimes: (n) => returned('toHaveReturnedTimes', (v) => v.length === n, `${n} returns`),
    toHaveReturnedWith: (e) => returned('toHaveReturnedWith', (v) => v.some((x) => equals(x, e)), e),
    toHaveLastReturnedWith: (e) => returned('toHaveLastReturnedWith', (v) => v.length > 0 && equals(v[v.length - 1], e), e),
  } satisfies Record<Names, M>;
  return all as Record<Names, M>;
}

function report(name: string, not: boolean, mode: string, received: unknown, out: Outcome): never {
  const chain = `${mode === 'value' ? '' : `.${mode}`}${not ? '.not' : ''}`;
  const lines = [`expect(received)${chain}.${name}(${'expected' in out ? 'expected' : ''})`, ''];
  if (out.detail !== undefined) lines.push(out.detail);
  else lines.push(`Expected: ${not ? 'not ' : ''}${show(out.expected)}`, `Received: ${show(received)}`);
  throw new AssertionError(lines.join('\n'));
}

type Matchers<R> = {
  toBe(e: unknown): R;
  toEqual(e: unknown): R;
  toStrictEqual(e: unknown): R;
  toMatchObject(e: unknown): R;
  toBeNull(): R;
  toBeUndefined(): R;
  toBeDefined(): R;
  toBeTruthy(): R;
  toBeFalsy(): R;
  toBeNaN(): R;
  toBeTypeOf(t: 'string' | 'number' | 'bigint' | 'boolean' | 'symbol' | 'undefined' | 'object' | 'function'): R;
  toBeInstanceOf(c: unknown): R;
  toContain(e: unknown): R;
  toContainEqual(e: unknown): R;
  toHaveLength(n: number): R;
  toHaveProperty(path: string | (string | number)[], value?: unknown): R;
  toMatch(e: string | RegExp): R;
  toBeCloseTo(n: number, digits?: number): R;
  toBeGreaterThan(n: number | bigint): R;
  toBeGreaterThanOrEqual(n: number | bigint): R;
  toBeLessThan(n: number | bigint): R;
  toBeLessThanOrEqual(n: number | bigint): R;
  toThrow(e?: unknown): R;
  toHaveBeenCalled(): R;
  toHaveBeenCalledOnce(): R;
  toHaveBeenCalledTimes(n: number): R;
  toHaveBeenCalledWith(...args: unknown[]): R;
  toHaveBeenLastCalledWith(...args: unknown[]): R;
  toHaveBeenNthCalledWith(n: number, ...args: unknown[]): R;
  toHaveReturned(): R;
  toHaveReturnedTimes(n: number): R;
  toHaveReturnedWith(e: unknown): R;
  toHaveLastReturnedWith(e: unknown): R;
};
type Names = keyof Matchers<void>;
export type Assertion = Matchers<void> & {
  not: Matchers<void>;
  resolves: Matchers<Promise<void>> & { not: Matchers<Promise<void>> };
  rejects: Matchers<Promise<void>> & { not: Matchers<Promise<void>> };
};

// expect.assertions(n) / hasAssertions(): the runner resets the count before each test and
// checks it after the test's body.
const assertions = { count: 0, expected: null as number | null, has: false };
export function assertionsReset(): void {
  Object.assign(assertions, { count: 0, expected: null, has: false });
}
export function assertionsCheck(): void {
  const { count, expected, has } = assertions;
  if (expected !== null && count !== expected) {
    throw new AssertionError(`expected number of assertions to be ${expected}, but got ${count}`);
  }
  if (has && count === 0) throw new AssertionError('expected any number of assertion, but got none');
}

function build(received: unknown, not: boolean): Matchers<void> {
  const all = matchers(received, 'value');
  return Object.fromEntries(
    Object.entries(all).map(([name, m]) => [
      name,
      (...args: unknown[]) => {
        assertions.count++;
        const out = m(...args);
        if (out.pass === not) report(name, not, 'value', received, out);
      },
    ]),
  ) as Matchers<void>;
}

function buildAsync(received: unknown, mode: 'resolves' | 'rejects', not: boolean): Matchers<Promise<void>> {
  return Object.fromEntries(
    Object.keys(matchers(undefined, mode)).map((name) => [
      name,
      async (...args: unknown[]) => {
        assertions.count++;
        let value: unknown;
        let rejected = false;
        try {
          value = await received;
        } catch (e) {
          value = e;
          rejected = true;
        }
        if (rejected !== (mode === 'rejects')) {
          const [did, should] = rejected ? ['rejected', 'resolved'] : ['resolved', 'rejected'];
          throw new AssertionError(
            `expect(received).${mode}.${name}()\n\nReceived promise ${did} instead of ${should}\n${rejected ? 'Rejected' : 'Resolved'} to value: ${show(value)}`,
          );
        }
        const out = matchers(value, mode)[name as Names](...args);
        if (out.pass === not) report(name, not, mode, value, out);
      },
    ]),
  ) as Matchers<Promise<void>>;
}

interface AsymmetricMatcher {
  asymmetricMatch(other: unknown): boolean;
  toString(): string;
}
interface AsymmetricMatchers {
  any(ctor: unknown): AsymmetricMatcher;
  anything(): AsymmetricMatcher;
  objectContaining(o: Record<string, unknown>): AsymmetricMatcher;
  arrayContaining(a: unknown[]): AsymmetricMatcher;
  stringContaining(s: string): AsymmetricMatcher;
  stringMatching(p: string | RegExp): AsymmetricMatcher;
}
type Expect = ((received: unknown) => Assertion) & AsymmetricMatchers & {
  not: AsymmetricMatchers;
  assertions(n: number): void;
  hasAssertions(): void;
  extend(m: unknown): never;
};

export const expect: Expect = Object.assign(
  (received: unknown): Assertion => {
    const a = build(received, false) as Assertion;
    a.not = build(received, true);
    a.resolves = Object.assign(buildAsync(received, 'resolves', false), { not: buildAsync(received, 'resolves', true) });
    a.rejects = Object.assign(buildAsync(received, 'rejects', false), { not: buildAsync(received, 'rejects', true) });
    return a;
  },
  asymmetricMatchers(false),
  {
    not: asymmetricMatchers(true),
    assertions(n: number): void {
      if (!Number.isInteger(n) || n < 0) throw new TypeError(`expect.assertions() takes a count (an integer ≥ 0), got ${show(n)}`);
      assertions.expected = n;
    },
    hasAssertions(): void {
      assertions.has = true;
    },
    extend(_: unknown): never {
      throw new Error("expect.extend() is not supported by the workbench's vitest: write the check as a function that calls expect");
    },
  },
);
