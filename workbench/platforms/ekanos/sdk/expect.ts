// vitest's `expect`, the matchers tools' tests use. Failures say what was expected and what was
// received, as vitest does (Deno's std asserts are a download away, and nothing is fetched).

export class AssertionError extends Error {
  override name = 'AssertionError';
}

const show = (v: unknown): string =>
  typeof v === 'function' ? `[Function ${v.name || 'anonymous'}]` : Deno.inspect(v, { depth: 8, colors: false, compact: true, breakLength: 100 });

interface Asymmetric {
  asymmetricMatch(other: unknown): boolean;
  toString(): string;
}
const isAsymmetric = (x: unknown): x is Asymmetric =>
  typeof x === 'object' && x !== null && typeof (x as Asymmetric).asymmetricMatch === 'function';

const tag = (x: unknown) => Object.prototype.toString.call(x);

/** Deep equality as vitest's toEqual (strict=false: undefined properties ignored) or toStrictEqual. */
export function equals(a: unknown, b: unknown, strict = false, seen: [unknown, unknown][] = []): boolean {
  if (isAsymmetric(b)) return b.asymmetricMatch(a);
  if (isAsymmetric(a)) return a.asymmetricMatch(b);
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (tag(a) !== tag(b)) return false;
  if (strict && Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (seen.some(([x, y]) => x === a && y === b)) return true; // a cycle met twice compares equal
  seen = [...seen, [a, b]];
  if (a instanceof Date) return Object.is(a.getTime(), (b as Date).getTime());
  if (a instanceof RegExp) return String(a) === String(b);
  if (a instanceof Error && (a.message !== (b as Error).message || a.name !== (b as Error).name)) return false;
  if (a instanceof Map) {
    const m = b as Map<unknown, unknown>;
    return a.size === m.size && [...a].every(([k, v]) => m.has(k) && equals(v, m.get(k), strict, seen));
  }
  if (a instanceof Set) {
    const other = [...(b as Set<unknown>)];
    return a.size === other.length && [...a].every((v) => other.some((w) => equals(v, w, strict, seen)));
  }
  if (ArrayBuffer.isView(a)) a = Array.from(a as unknown as ArrayLike<unknown>), b = Array.from(b as ArrayLike<unknown>);
  if (Array.isArray(a) && (a.length !== (b as unknown[]).length)) return false;
  const keys = (o: object) =>
    Object.keys(o).filter((k) => strict || (o as Record<string, unknown>)[k] !== undefined);
  const ka = keys(a as object);
  const kb = keys(b as object);
  if (ka.length !== kb.length) return false;
  if (strict && Array.isArray(a)) {
    for (let i = 0; i < a.length; i++) if ((i in a) !== (i in (b as unknown[]))) return false; // sparseness
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  return ka.every((k) => Object.hasOwn(rb, k) && equals(ra[k], rb[k], strict, seen));
}

function matchObject(actual: unknown, expected: unknown): boolean {
  if (isAsymmetric(expected)) return expected.asymmetricMatch(actual);
  if (typeof expected !== 'object' || expected === null || typeof actual !== 'object' || actual === null) {
    return equals(actual, expected);
  }
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => matchObject(actual[i], e));
  }
  const a = actual as Record<string, unknown>;
  return Object.entries(expected).every(([k, v]) => k in a && matchObject(a[k], v));
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
function matchers(received: unknown, mode: 'value' | 'resolves' | 'rejects'): Record<string, M> {
  const cmp = (pass: boolean, expected: unknown): Outcome => ({ pass, expected });
  const num = (f: (a: number, b: number) => boolean) => (n: number) =>
    cmp(typeof received === 'number' || typeof received === 'bigint' ? f(received as number, n) : false, n);
  return {
    toBe: (e) => cmp(Object.is(received, e), e),
    toEqual: (e) => cmp(equals(received, e), e),
    toStrictEqual: (e) => cmp(equals(received, e, true), e),
    toMatchObject: (e) => cmp(matchObject(received, e), e),
    toBeNull: () => cmp(received === null, null),
    toBeUndefined: () => cmp(received === undefined, undefined),
    toBeDefined: () => ({ pass: received !== undefined, detail: `Received: ${show(received)}` }),
    toBeTruthy: () => ({ pass: !!received, detail: `Received: ${show(received)}` }),
    toBeFalsy: () => ({ pass: !received, detail: `Received: ${show(received)}` }),
    toContain: (e) =>
      cmp(typeof received === 'string' ? received.includes(e) : Array.isArray(received) || received instanceof Set ? [...received].includes(e) : false, e),
    toHaveLength: (n) => {
      const len = (received as { length?: unknown } | null)?.length;
      return { pass: len === n, detail: `Expected length: ${n}\nReceived length: ${show(len)}\nReceived: ${show(received)}` };
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
  };
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
  toContain(e: unknown): R;
  toHaveLength(n: number): R;
  toBeGreaterThan(n: number): R;
  toBeGreaterThanOrEqual(n: number): R;
  toBeLessThan(n: number): R;
  toBeLessThanOrEqual(n: number): R;
  toThrow(e?: unknown): R;
};
export type Assertion = Matchers<void> & {
  not: Matchers<void>;
  resolves: Matchers<Promise<void>> & { not: Matchers<Promise<void>> };
  rejects: Matchers<Promise<void>> & { not: Matchers<Promise<void>> };
};

function build(received: unknown, not: boolean): Matchers<void> {
  const all = matchers(received, 'value');
  return Object.fromEntries(
    Object.entries(all).map(([name, m]) => [
      name,
      (...args: unknown[]) => {
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
        const out = matchers(value, mode)[name](...args);
        if (out.pass === not) report(name, not, mode, value, out);
      },
    ]),
  ) as Matchers<Promise<void>>;
}

type Expect = ((received: unknown) => Assertion) & {
  any(ctor: unknown): Asymmetric;
  anything(): Asymmetric;
};

export const expect: Expect = Object.assign(
  (received: unknown): Assertion => {
    const a = build(received, false) as Assertion;
    a.not = build(received, true);
    a.resolves = Object.assign(buildAsync(received, 'resolves', false), { not: buildAsync(received, 'resolves', true) });
    a.rejects = Object.assign(buildAsync(received, 'rejects', false), { not: buildAsync(received, 'rejects', true) });
    return a;
  },
  {
    any: (ctor: unknown): Asymmetric => ({
      asymmetricMatch: (x: unknown) =>
        ctor === Number ? typeof x === 'number' : ctor === String ? typeof x === 'string' : ctor === Boolean
          ? typeof x === 'boolean' : typeof ctor === 'function' && x instanceof ctor,
      toString: () => `Any<${(ctor as { name?: string })?.name}>`,
    }),
    anything: (): Asymmetric => ({ asymmetricMatch: (x: unknown) => x !== null && x !== undefined, toString: () => 'Anything' }),
  },
);
